"""Connector configs, task configs and target states (Kafka's `connect-configs`).

Record formats, as Kafka Connect writes them (values are JSON):

| key                    | value                                                        |
| connector-<name>       | {"properties": {...}}; null: the connector was deleted      |
| task-<name>-<n>        | {"properties": {...}}                                        |
| commit-<name>          | {"tasks": N}: the task configs before it take effect at once |
| target-state-<name>    | {"state": STARTED|PAUSED, "state.v2": STARTED|PAUSED|STOPPED}|
| restart-connector-<n>  | {"include-tasks", "only-failed"}: a restart request          |
| restart-task-<name>-<n>| {}: a request to restart one task                            |
| logger-cluster-<ns>    | {"level"}: a logger level for every worker of the cluster    |
| tasks-fencing-<name>   | {"task-count": N}: that task generation runs fenced (below)  |

Requests (restarts, cluster logger levels) change no state: they are handed to the
request listeners as they are read, for the worker that owns the work to act on.

A tasks-fencing record (exactly-once sources, connect.herder.fencing) is written once
the producers of the generation before were fenced; task configs committed after the
last one are "pending fencing".

Task configs are buffered until their commit record, so a reader never sees half of a
new task set; a commit whose task records are missing leaves the connector's tasks
as they were ("inconsistent", as Kafka calls it) rather than running a partial set.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from connect.storage.table import Table

__all__ = ["ClusterConfig", "ConfigStore", "TargetState"]


class TargetState(StrEnum):
    STARTED = "STARTED"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"


@dataclass
class ClusterConfig:
    """A consistent snapshot of what should run."""

    connectors: dict[str, dict[str, str]] = field(default_factory=dict)
    tasks: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    targets: dict[str, TargetState] = field(default_factory=dict)


_REQUESTS = ("restart-", "logger-cluster-")


def _dump(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


class ConfigStore:
    def __init__(self, table: Table) -> None:
        self._table = table
        self._lock = threading.Lock()
        self._state = ClusterConfig()
        self._pending: dict[str, dict[int, dict[str, str]]] = {}
        self._listeners: list[Callable[[str], None]] = []
        self._request_listeners: list[Callable[[str, dict | None], None]] = []
        #: Exactly-once sources (connect.herder.fencing): the task count of the last
        #: tasks-fencing record, and the task generations committed (commit records)
        #: in all and since that record.
        self._fenced_counts: dict[str, int] = {}
        self._generations: dict[str, int] = {}
        self._unfenced: set[str] = set()

    def start(self) -> None:
        self._table.start(self._apply)

    def add_listener(self, listener: Callable[[str], None]) -> None:
        """Called with a connector name whenever something about it changes."""
        self._listeners.append(listener)

    def add_request_listener(self, listener: Callable[[str, dict | None], None]) -> None:
        """Called with (key, value) for each request record read (see the docstring)."""
        self._request_listeners.append(listener)

    def _apply(self, key: bytes, value: bytes | None) -> None:
        text = key.decode()
        data = json.loads(value) if value is not None else None
        if text.startswith(_REQUESTS):
            for request_listener in self._request_listeners:
                request_listener(text, data)
            return
        with self._lock:
            name = self._apply_locked(text, data)
        if name is not None:
            for listener in self._listeners:
                listener(name)

    def _apply_locked(self, key: str, data: dict | None) -> str | None:
        state = self._state
        if key.startswith("connector-"):
            name = key[len("connector-") :]
            if data is None:
                state.connectors.pop(name, None)
                state.tasks.pop(name, None)
                state.targets.pop(name, None)
                self._pending.pop(name, None)
            else:
                state.connectors[name] = dict(data.get("properties", {}))
                state.targets.setdefault(name, TargetState.STARTED)
            return name
        if key.startswith("task-"):
            name, _, index = key[len("task-") :].rpartition("-")
            if data is not None and index.isdigit():
                self._pending.setdefault(name, {})[int(index)] = dict(data.get("properties", {}))
            return None
        if key.startswith("commit-"):
            name = key[len("commit-") :]
            count = int((data or {}).get("tasks", 0))
            pending = self._pending.pop(name, {})
            if all(i in pending for i in range(count)):
                state.tasks[name] = [pending[i] for i in range(count)]
                self._generations[name] = self._generations.get(name, 0) + 1
                self._unfenced.add(name)
            return name
        if key.startswith("tasks-fencing-"):
            name = key[len("tasks-fencing-") :]
            if data is not None:
                self._fenced_counts[name] = int(data.get("task-count", 0))
                self._unfenced.discard(name)
            return name
        if key.startswith("target-state-"):
            name = key[len("target-state-") :]
            if data is None:
                state.targets.pop(name, None)
            else:
                raw = data.get("state.v2") or data.get("state") or "STARTED"
                state.targets[name] = TargetState(raw)
            return name
        return None

    # ----------------------------------------------------------------- reads

    def snapshot(self, *, refresh: bool = True) -> ClusterConfig:
        """The state read to the log's end; `refresh=False`: what was applied so far,
        without asking the log (a herder serving its last known state while the log
        cannot be reached: connect.herder.last_known)."""
        if refresh:
            self._table.refresh()
        with self._lock:
            s = self._state
            return ClusterConfig(
                connectors={k: dict(v) for k, v in s.connectors.items()},
                tasks={k: [dict(t) for t in v] for k, v in s.tasks.items()},
                targets=dict(s.targets),
            )

    def connector_config(self, name: str) -> dict[str, str] | None:
        with self._lock:
            config = self._state.connectors.get(name)
            return None if config is None else dict(config)

    def fencing_state(self, name: str) -> tuple[bool, int | None, int, int]:
        """(task configs newer than the last task-count record, that record's task
        count or None, the current task count, the task generation), read to the end
        of the config topic: step 1 of connect.herder.fencing's round."""
        self._table.refresh()
        with self._lock:
            return (
                name in self._unfenced,
                self._fenced_counts.get(name),
                len(self._state.tasks.get(name, [])),
                self._generations.get(name, 0),
            )

    # ---------------------------------------------------------------- writes

    def put_task_count(self, name: str, count: int) -> None:
        """The task-count record: the generation of `count` tasks runs fenced from
        its predecessors (Kafka's tasks-fencing record)."""
        self._table.write([(f"tasks-fencing-{name}".encode(), _dump({"task-count": count}))])

    def put_connector_config(
        self, name: str, props: Mapping[str, str], target: TargetState | None = None
    ) -> None:
        items = [(f"connector-{name}".encode(), _dump({"properties": dict(props)}))]
        if target is not None:
            items.insert(0, self._target_item(name, target))
        self._table.write(items)

    def remove_connector(self, name: str) -> None:
        self._table.write(
            [
                (f"connector-{name}".encode(), None),
                (f"target-state-{name}".encode(), None),
            ]
        )

    def put_task_configs(self, name: str, configs: list[Mapping[str, str]]) -> None:
        items = [
            (f"task-{name}-{i}".encode(), _dump({"properties": dict(c)}))
            for i, c in enumerate(configs)
        ]
        items.append((f"commit-{name}".encode(), _dump({"tasks": len(configs)})))
        self._table.write(items)

    @staticmethod
    def _target_item(name: str, target: TargetState) -> tuple[bytes, bytes]:
        v1 = "PAUSED" if target is TargetState.STOPPED else target.value
        return (f"target-state-{name}".encode(), _dump({"state": v1, "state.v2": target.value}))

    def put_target_state(self, name: str, target: TargetState) -> None:
        self._table.write([self._target_item(name, target)])

    def request_restart(
        self, name: str, *, include_tasks: bool = False, only_failed: bool = False
    ) -> None:
        value = {"include-tasks": include_tasks, "only-failed": only_failed}
        self._table.write([(f"restart-connector-{name}".encode(), _dump(value))])

    def request_task_restart(self, name: str, task: int) -> None:
        self._table.write([(f"restart-task-{name}-{task}".encode(), _dump({}))])

    def put_cluster_logger_level(self, namespace: str, level: str) -> None:
        self._table.write([(f"logger-cluster-{namespace}".encode(), _dump({"level": level}))])

    def stop(self) -> None:
        self._table.stop()
