"""The distributed herder: one of several workers sharing one log (docs/distributed.md).

Every worker answers the REST API from the same replicated state (the config, status
and offset topics) and accepts writes: a write is an append to the config topic, and
the log's order settles races between workers, so no request is forwarded and none
needs retrying during a rebalance. What runs where is the group's business
(connect.herder.member): the leader appends assignments, and this herder's own thread
applies them (numbered as in `_apply_tick`):

1. after an eviction: stop everything (its lease has lapsed, so no final commit is
   written) and join again as a new incarnation;
2. a new generation: stop what it revoked from this worker (final offset commits),
   acknowledge, and take its target as what this worker should run;
3. reconcile the target with the config topic: start, restart, pause, resume or stop
   connectors and tasks as their configs and target states say; a connector that runs
   here generates its task configs and writes them (the leader then places the tasks);
4. act on the requests read from the config topic: restarts of what runs here, cluster
   logger levels.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from connect.api import NotFoundError
from connect.herder.api import ConnectorStateInfo
from connect.herder.base import LogHerder, with_placeholders
from connect.herder.fencing import fence_before_tasks, needs_fencing, runs_fencing
from connect.herder.member import GROUP_TOPIC_CONFIG, GroupMember
from connect.herder.membership import AssignorConfig, TaskId, Work
from connect.herder.startup import internal_topics, prepare_log
from connect.plugins import Plugins
from connect.storage import ClusterConfig, State, Status, TargetState
from log import Log

__all__ = ["DistributedHerder"]

_log = logging.getLogger("connect.herder")


@dataclass(frozen=True, slots=True)
class _Connector:
    props: dict[str, str]
    target: TargetState


@dataclass(frozen=True, slots=True)
class _Task:
    connector_props: dict[str, str]
    task_props: dict[str, str]
    paused: bool


class DistributedHerder(LogHerder):
    """Implements connect.herder.api.Herder for one worker of a cluster."""

    def __init__(
        self,
        worker_config: Mapping[str, Any],
        *,
        log: Log,
        worker_id: str,
        url: str,
        plugins: Plugins | None = None,
    ) -> None:
        super().__init__(worker_config, log=log, worker_id=worker_id, plugins=plugins)
        cfg = self.config
        self.url = url
        self.member = GroupMember(
            log,
            cfg["group.storage.topic"],
            worker_id=worker_id,
            url=url,
            session_timeout_ms=int(cfg["session.timeout.ms"]),
            heartbeat_interval_ms=int(cfg["heartbeat.interval.ms"]),
            rebalance_timeout_ms=int(cfg["rebalance.timeout.ms"]),
            assignor=AssignorConfig(
                scheduled_rebalance_max_delay_ms=int(cfg["scheduled.rebalance.max.delay.ms"])
            ),
            configured=self._configured,
            on_change=self._nudge,
        )
        self.worker.use_lease(self.member.lease)
        self._generation = 0  # the generation whose target runs here
        self._target = Work()
        self._connectors: dict[str, _Connector] = {}
        self._tasks: dict[TaskId, _Task] = {}
        self._requests: deque[tuple[str, dict | None]] = deque()
        self._reconfigure: set[str] = set()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._replayed = False
        # Rebalance metrics (Kafka's connect-worker-rebalance-metrics), this worker's view.
        self._rebalances = 0
        self._rebalance_total_s = 0.0
        self._rebalance_max_s = 0.0
        self._last_rebalance = 0.0  # time.time() when the last generation was applied
        self._rebalancing = False
        self.configs.add_listener(lambda _name: self._nudge())
        self.configs.add_request_listener(self._on_request)

    # ------------------------------------------------------------- lifecycle

    def start(self) -> None:
        """Replay the stores, join the group and start applying assignments."""
        group = (self.member.topic, 1, GROUP_TOPIC_CONFIG)
        prepare_log(self.log, [*internal_topics(self.config), group])  # before the replays
        self.configs.start()
        self.offsets.start()
        self.status.start()
        self._replayed = True  # requests replayed from the topic were for earlier lives
        self.member.start()
        self._thread = threading.Thread(target=self._run, name="herder", daemon=True)
        self._thread.start()
        self._ready = True

    def stop(self) -> None:
        """Stop this worker's work with final commits (heartbeats go on meanwhile, so the
        lease holds), then leave the group expecting to return."""
        self._ready = False
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(60)
        self._stop_all()
        self.member.leave(expect_return=True)

    def _nudge(self) -> None:
        self._wake.set()

    def _configured(self) -> tuple[dict[str, int], int]:
        snapshot = self.configs.snapshot()
        topic = self.config["config.storage.topic"]
        counts = {name: len(snapshot.tasks.get(name, [])) for name in snapshot.connectors}
        return counts, self.log.latest_offset(topic, 0)

    def _on_status(self, connector: str, task: int | None, state: State, trace: str | None) -> None:
        if not self.member.lease.valid():
            return  # Why: this worker may have been declared dead; its word counts no more
        if connector not in self.known.configs().connectors and state is not State.FAILED:
            return
        status = Status(connector, task, state, self._worker_id, trace, self._generation)
        self.known.put_status(status)

    def _request_reconfiguration(self, name: str) -> None:
        self._reconfigure.add(name)
        self._wake.set()

    def _on_request(self, key: str, data: dict | None) -> None:
        if self._replayed:
            self._requests.append((key, data))
            self._wake.set()

    # ------------------------------------------------------ the herder thread

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(0.5)
            self._wake.clear()
            if self._stop.is_set():
                break
            try:
                self._apply_tick()
            except Exception:
                _log.exception("worker %s: applying the assignment failed", self._worker_id)

    def _apply_tick(self) -> None:
        # Step 1
        if self.member.evicted.is_set():
            self._stop_all()
            self._generation = 0
            self._target = Work()
            self.member.rejoin()
            return
        # Step 2
        view = self.member.view()
        a = view.assignment
        if a.generation != self._generation and self.member.joined is not None:
            started = time.perf_counter()
            self._rebalancing = True
            mine = view.meta.members.get(self._worker_id) == self.member.incarnation
            target = a.targets.get(self._worker_id, Work()) if mine else Work()
            self._stop_items(self._running() - target)
            self._target = target
            self._generation = a.generation
            self.member.running_generation = a.generation
            self.member.lease.set_generation(a.generation)
            if mine and a.revoked.get(self._worker_id):
                self.member.acknowledge(a.generation)
            took = time.perf_counter() - started
            self._rebalances += 1
            self._rebalance_total_s += took
            self._rebalance_max_s = max(self._rebalance_max_s, took)
            self._last_rebalance = time.time()
            self._rebalancing = False
            _log.info(
                "worker %s runs generation %d: %d connectors, %d tasks",
                self._worker_id,
                a.generation,
                len(target.connectors),
                len(target.tasks),
            )
        # Step 3
        snapshot = self.configs.snapshot()
        if view.leader() == self._worker_id:
            self._fence_pending(snapshot)
        self._reconcile(snapshot)
        # Step 4
        self._handle_requests(snapshot)

    def _running(self) -> Work:
        return Work(frozenset(self._connectors), frozenset(self._tasks))

    def _stop_items(self, work: Work) -> None:
        if work.tasks:
            self.worker.stop_tasks([(t.connector, t.task) for t in sorted(work.tasks)])
            for t in work.tasks:
                self._tasks.pop(t, None)
        for name in sorted(work.connectors):
            self.worker.stop_connector(name)
            self._connectors.pop(name, None)

    def _stop_all(self) -> None:
        self._stop_items(self._running())
        self.worker.stop()

    # ------------------------------------------------------------ reconciling

    def _reconcile(self, snapshot: ClusterConfig) -> None:
        for name in sorted(self._target.connectors):
            self._reconcile_connector(name, snapshot)
        for task in sorted(self._target.tasks):
            self._reconcile_task(task, snapshot)
        self._stop_items(self._running() - self._target)
        reconfigure, self._reconfigure = self._reconfigure, set()
        for name in sorted(reconfigure):
            running = self._connectors.get(name)
            if running is not None and running.target is not TargetState.STOPPED:
                self._generate_task_configs(name, running.props, snapshot)

    def _reconcile_connector(self, name: str, snapshot: ClusterConfig) -> None:
        props = snapshot.connectors.get(name)
        running = self._connectors.get(name)
        if props is None:
            if running is not None:
                self._stop_items(Work.of([name]))
            return
        target = snapshot.targets.get(name, TargetState.STARTED)
        if target is TargetState.STOPPED:
            if running is None or running.target is not TargetState.STOPPED:
                self.worker.stop_connector(name)
                self._connectors[name] = _Connector(props, target)
                self._on_status(name, None, State.STOPPED, None)
            return
        if running is None or running.props != props or running.target is TargetState.STOPPED:
            self._connectors[name] = _Connector(props, target)
            if self.worker.start_connector(name, props, paused=target is TargetState.PAUSED):
                self._generate_task_configs(name, props, snapshot)
        elif running.target is not target:
            self._connectors[name] = _Connector(props, target)
            if target is TargetState.PAUSED:
                self.worker.pause_connector(name)
            else:
                self.worker.resume_connector(name)

    def _generate_task_configs(
        self, name: str, props: dict[str, str], snapshot: ClusterConfig
    ) -> None:
        try:
            configs = with_placeholders(props, self.worker.task_configs(name, props))
        except Exception as exc:
            self.worker.fail_connector(name, exc)
            return
        if configs != snapshot.tasks.get(name) and self.member.lease.valid():
            self.configs.put_task_configs(name, configs)

    def _fence_pending(self, snapshot: ClusterConfig) -> None:
        """The leader's zombie-fencing rounds (connect.herder.fencing) for every
        exactly-once source whose new task generation waits for one; a failed round
        fails the connector's tasks (a restart of them runs it again)."""
        for name, props in sorted(snapshot.connectors.items()):
            # `preparing` too: enabled workers' tasks wait for the round (fencing).
            if (
                runs_fencing(self.config, self.plugins, props)
                and self.configs.fencing_state(name)[0]
            ):
                fence_before_tasks(self, name, props, len(snapshot.tasks.get(name, [])))

    def _waits_for_fencing(self, name: str, props: dict[str, str]) -> bool:
        """Whether a task of `name` must not start yet: its generation's fencing round
        (the leader's) has not written its task-count record."""
        return (
            needs_fencing(self.config, self.plugins, props) and self.configs.fencing_state(name)[0]
        )

    def _reconcile_task(self, task: TaskId, snapshot: ClusterConfig) -> None:
        name = task.connector
        props = snapshot.connectors.get(name)
        configs = snapshot.tasks.get(name, [])
        target = snapshot.targets.get(name, TargetState.STARTED)
        running = self._tasks.get(task)
        if props is None or task.task >= len(configs) or target is TargetState.STOPPED:
            if running is not None:
                self._stop_items(Work.of(tasks=[task]))
            return
        paused = target is TargetState.PAUSED
        wanted = _Task(props, configs[task.task], paused)
        if running is None or (running.connector_props, running.task_props) != (
            wanted.connector_props,
            wanted.task_props,
        ):
            if self._waits_for_fencing(name, props):
                return  # the task-count record wakes this herder up again
            self._tasks[task] = wanted
            self.offsets.refresh()  # the previous owner's last commit, or an operator's edit
            self.worker.start_task(name, task.task, props, configs[task.task], paused=paused)
        elif running.paused is not paused:
            self._tasks[task] = wanted
            handle = self.worker.tasks.get((name, task.task))
            if handle is not None:
                handle.pause() if paused else handle.resume()

    # --------------------------------------------------------------- requests

    def _handle_requests(self, snapshot: ClusterConfig) -> None:
        while self._requests:
            key, data = self._requests.popleft()
            data = data or {}
            if key.startswith("logger-cluster-"):
                level = data.get("level")
                if level:
                    with contextlib.suppress(Exception):
                        self.loggers.set(key[len("logger-cluster-") :], str(level))
            elif key.startswith("restart-connector-"):
                self._restart(
                    key[len("restart-connector-") :],
                    snapshot,
                    include_tasks=bool(data.get("include-tasks")),
                    only_failed=bool(data.get("only-failed")),
                )
            elif key.startswith("restart-task-"):
                name, _, index = key[len("restart-task-") :].rpartition("-")
                if index.isdigit():
                    self._restart_task_here(TaskId(name, int(index)), snapshot)

    def _restart(
        self, name: str, snapshot: ClusterConfig, *, include_tasks: bool, only_failed: bool
    ) -> None:
        props = snapshot.connectors.get(name)
        if props is None or snapshot.targets.get(name) is TargetState.STOPPED:
            return
        connector = self.status.connector(name)
        failed = connector is not None and connector.state is State.FAILED
        if name in self._target.connectors and (not only_failed or failed):
            paused = snapshot.targets.get(name) is TargetState.PAUSED
            self._connectors[name] = _Connector(
                props, snapshot.targets.get(name, TargetState.STARTED)
            )
            if self.worker.start_connector(name, props, paused=paused):
                self._generate_task_configs(name, props, snapshot)
        if not include_tasks:
            return
        states = {s.task: s.state for s in self.status.tasks(name)}
        for task in sorted(t for t in self._target.tasks if t.connector == name):
            if not only_failed or states.get(task.task) is State.FAILED:
                self._restart_task_here(task, snapshot)

    def _restart_task_here(self, task: TaskId, snapshot: ClusterConfig) -> None:
        if task not in self._target.tasks:
            return
        self._tasks.pop(task, None)  # reconciling starts it again
        self.worker.stop_tasks([(task.connector, task.task)])
        self._reconcile_task(task, snapshot)

    def _assigned_worker(self, name: str, task: int | None) -> str:
        """The worker the current assignment gives the item to, or "" before the
        leader has placed it."""
        targets = self.member.view().assignment.targets
        for worker, work in sorted(targets.items()):
            if (name in work.connectors) if task is None else (TaskId(name, task) in work.tasks):
                return worker
        return ""

    # ---------------------------------------------------- actions (any worker)

    def _connector_written(self, name: str) -> None:
        self._wake.set()  # the owner (maybe this worker) applies it from the log

    def delete_connector(self, name: str) -> None:
        with self._lock:
            self._require(name)
            self._forget(name)  # its owner stops it when it reads the deletion

    def restart_connector(
        self, name: str, *, include_tasks: bool = False, only_failed: bool = False
    ) -> ConnectorStateInfo | None:
        with self._lock:
            plain = not include_tasks and not only_failed
            if self._nothing_to_restart(name):
                return None if plain else self._restart_plan(name, include_tasks, only_failed)[0]
            planned = None
            if not plain:
                planned = self._planned_restart(name, include_tasks, only_failed)
            self.configs.request_restart(name, include_tasks=include_tasks, only_failed=only_failed)
            return planned

    def _planned_restart(
        self, name: str, include_tasks: bool, only_failed: bool
    ) -> ConnectorStateInfo:
        """What the restart will restart, shown RESTARTING (also in the status topic,
        written in the generation of the status it replaces, so the owner's next write
        replaces it in turn)."""
        planned, restart_connector, tasks = self._restart_plan(name, include_tasks, only_failed)
        held = {s.task: s for s in self.status.tasks(name)}
        if restart_connector:
            held[None] = self.status.connector(name)
        workers = {t.id: t.worker_id for t in planned.tasks} | {None: planned.worker_id}
        for task in [*tasks, *([None] if restart_connector else [])]:
            generation = held[task].generation if held.get(task) is not None else 0
            self.status.put(Status(name, task, State.RESTARTING, workers[task], None, generation))
        return planned

    def restart_task(self, name: str, task: int) -> None:
        with self._lock:
            self._require(name)
            if not 0 <= task < len(self.configs.snapshot().tasks.get(name, [])):
                raise NotFoundError(f"Task {name}-{task} not found")
            self.configs.request_task_restart(name, task)

    def pause_connector(self, name: str) -> None:
        """PAUSED whatever the state before, STOPPED included: Kafka's rule (a stopped
        connector then starts, paused, as on a resume)."""
        with self._lock:
            self._require(name)
            self.configs.put_target_state(name, TargetState.PAUSED)

    def resume_connector(self, name: str) -> None:
        with self._lock:
            self._require(name)
            self.configs.put_target_state(name, TargetState.STARTED)

    def stop_connector(self, name: str) -> None:
        with self._lock:
            self._require(name)
            self.configs.put_task_configs(name, [])
            self.configs.put_target_state(name, TargetState.STOPPED)

    def set_logger_level(self, namespace: str, level: str, *, scope: str = "worker") -> list[str]:
        if scope == "cluster":
            self.loggers.set(namespace, level)  # a bad level fails here, before the write
            self.configs.put_cluster_logger_level(namespace, level)
            return []
        return self.loggers.set(namespace, level)

    # ------------------------------------------------------------------ views

    def rebalance_metrics(self) -> dict[str, Any]:
        """Kafka Connect's connect-worker-rebalance-metrics, as this worker saw them:
        generations it applied, how long applying took (stopping what was revoked and
        acknowledging), whether one is under way, the leader and the generation."""
        view = self.member.view()
        return {
            "completed_rebalances_total": self._rebalances,
            "rebalance_seconds_sum": self._rebalance_total_s,
            "rebalance_max_seconds": self._rebalance_max_s,
            "rebalancing": self._rebalancing or self._generation != view.assignment.generation,
            "epoch": self._generation,
            "last_rebalance_time": self._last_rebalance or None,
            "leader": view.leader() or "",
            "members": len(view.members),
            "assigned_connectors": len(self._target.connectors),
            "assigned_tasks": len(self._target.tasks),
        }

    def cluster(self) -> dict[str, Any]:
        """Members, leader and generation as this worker has read them."""
        view = self.member.view()
        a = view.assignment
        return {
            "leader": view.leader(),
            "generation": a.generation,
            "workers": [
                {
                    "id": w,
                    "url": m.url,
                    "generation": m.generation,
                    "connectors": sorted(a.targets.get(w, Work()).connectors),
                    "tasks": [str(t) for t in sorted(a.targets.get(w, Work()).tasks)],
                }
                for w, m in sorted(view.members.items())
            ],
        }
