"""Observed states of connectors and tasks (Kafka's `connect-status`).

Keys `status-connector-<name>` and `status-task-<name>-<n>`; value JSON
`{"state", "trace", "worker_id", "generation"}`; null forgets the entry.

Fencing: a value written in an older generation than the one already held for its key
is ignored (a worker that lost the work and did not know yet cannot overwrite its new
owner's status). A standalone worker writes generation 0 throughout.

Reads share refreshes. A REST status read must see every status written before it
arrived, which takes a refresh of the topic (on Kafka: watermark requests for each of
its partitions, ~60-80 ms and ~3.5 ms of CPU on a quiet broker); reads that arrive
together (a console, a cluster's clients, a metrics scrape) need not make one each.
The steps of `refresh(ticket)` (mirrored as `# Step N` below):

1. A reader takes a ticket when it arrives (`ticket()`), before waiting for anything.
2. One refresh at a time.
3. A refresh that began after the ticket was taken has read everything written
   before the reader arrived: when one has completed, the reader is served by it.
4. Otherwise the reader refreshes, and records the last ticket taken before it began:
   every reader holding that ticket or an earlier one is served by this refresh.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from enum import StrEnum

from connect.storage.table import Table

__all__ = ["State", "Status", "StatusStore"]


class State(StrEnum):
    UNASSIGNED = "UNASSIGNED"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    FAILED = "FAILED"
    RESTARTING = "RESTARTING"
    STOPPED = "STOPPED"
    DESTROYED = "DESTROYED"


@dataclass(frozen=True, slots=True)
class Status:
    connector: str
    task: int | None  # None: the connector itself
    state: State
    worker_id: str
    trace: str | None = None
    generation: int = 0

    @property
    def key(self) -> bytes:
        if self.task is None:
            return f"status-connector-{self.connector}".encode()
        return f"status-task-{self.connector}-{self.task}".encode()


def _stale(held: Status | None, data: dict) -> bool:
    return held is not None and int(data.get("generation", 0)) < held.generation


class StatusStore:
    def __init__(self, table: Table) -> None:
        self._table = table
        self._lock = threading.Lock()
        self._connectors: dict[str, Status] = {}
        self._tasks: dict[tuple[str, int], Status] = {}
        self._topics: dict[str, set[str]] = {}
        self._refreshing = threading.Lock()  # step 2
        self._tickets = 0  # the last ticket taken (step 1)
        self._covered = 0  # the last ticket the last completed refresh serves (step 4)

    def start(self) -> None:
        self._table.start(self._apply)

    def _apply(self, key: bytes, value: bytes | None) -> None:
        text = key.decode()
        data = json.loads(value) if value is not None else None
        with self._lock:
            if text.startswith("status-connector-"):
                name = text[len("status-connector-") :]
                if data is None:
                    self._connectors.pop(name, None)
                elif not _stale(self._connectors.get(name), data):
                    self._connectors[name] = self._status(name, None, data)
            elif text.startswith("status-topic-"):
                topic, _, connector = text[len("status-topic-") :].partition(":connector-")
                if data is None:
                    self._topics.get(connector, set()).discard(topic)
                else:
                    self._topics.setdefault(connector, set()).add(topic)
            elif text.startswith("status-task-"):
                name, _, index = text[len("status-task-") :].rpartition("-")
                if not index.isdigit():
                    return
                if data is None:
                    self._tasks.pop((name, int(index)), None)
                elif not _stale(self._tasks.get((name, int(index))), data):
                    self._tasks[(name, int(index))] = self._status(name, int(index), data)

    @staticmethod
    def _status(name: str, task: int | None, data: dict) -> Status:
        return Status(
            name,
            task,
            State(data.get("state", "UNASSIGNED")),
            str(data.get("worker_id", "")),
            data.get("trace"),
            int(data.get("generation", 0)),
        )

    def put(self, status: Status) -> None:
        value = {
            "state": status.state.value,
            "trace": status.trace,
            "worker_id": status.worker_id,
            "generation": status.generation,
        }
        self._table.write([(status.key, json.dumps(value).encode())])

    def connector(self, name: str) -> Status | None:
        with self._lock:
            return self._connectors.get(name)

    def tasks(self, name: str) -> list[Status]:
        with self._lock:
            return sorted(
                (s for (c, _), s in self._tasks.items() if c == name), key=lambda s: s.task or 0
            )

    def tasks_by_connector(self) -> dict[str, list[Status]]:
        """Every task status, grouped by connector and sorted by task: one pass, where
        `tasks(name)` for each of N connectors would walk all tasks N times (a
        /metrics scrape of 200 connectors × 3 tasks)."""
        with self._lock:
            items = list(self._tasks.items())
        out: dict[str, list[Status]] = {}
        for (connector, _), status in sorted(items, key=lambda kv: kv[0]):
            out.setdefault(connector, []).append(status)
        return out

    def remove_connector(self, name: str, task_count: int | None = None) -> None:
        with self._lock:
            tasks = [i for (c, i) in self._tasks if c == name]
        items: list[tuple[bytes, bytes | None]] = [(f"status-connector-{name}".encode(), None)]
        items += [(f"status-task-{name}-{i}".encode(), None) for i in tasks]
        self._table.write(items)

    def remove_tasks(self, name: str, from_index: int) -> None:
        with self._lock:
            tasks = [i for (c, i) in self._tasks if c == name and i >= from_index]
        self._table.write([(f"status-task-{name}-{i}".encode(), None) for i in tasks])

    # Active topics (KIP-558): key `status-topic-<topic>:connector-<name>`.

    def put_topic(self, connector: str, topic: str, task: int) -> None:
        if topic in self._topics.get(connector, set()):
            return
        value = {
            "topic": {
                "name": topic,
                "connector": connector,
                "task": task,
                "discoverTimestamp": int(time.time() * 1000),
            }
        }
        self._table.write(
            [(f"status-topic-{topic}:connector-{connector}".encode(), json.dumps(value).encode())]
        )

    def topics(self, connector: str) -> list[str]:
        with self._lock:
            return sorted(self._topics.get(connector, set()))

    def reset_topics(self, connector: str) -> None:
        topics = self.topics(connector)
        self._table.write(
            [(f"status-topic-{t}:connector-{connector}".encode(), None) for t in topics]
        )

    def ticket(self) -> int:
        """Step 1: a reader's place in line, taken as it arrives (see `refresh`)."""
        with self._lock:
            self._tickets += 1
            return self._tickets

    def refresh(self, ticket: int | None = None) -> None:
        """Apply what other workers wrote before the reader holding `ticket` arrived
        (now, without one), sharing a refresh with the readers that arrived with it
        (see the module docstring)."""
        if ticket is None:
            ticket = self.ticket()
        with self._refreshing:  # Step 2
            if self._covered >= ticket:  # Step 3
                return
            # Step 4
            with self._lock:
                began = self._tickets
            self._table.refresh()
            self._covered = began

    def stop(self) -> None:
        self._table.stop()
