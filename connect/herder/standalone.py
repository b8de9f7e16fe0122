"""The standalone herder: one worker process, all state in the embedded log.

Every action runs under one lock, in the caller's thread, and reconciles at once:

1. write the new desired state to the config topic (durable before anything moves);
2. stop what no longer matches on the worker;
3. start what should run, and regenerate task configs when the connector's changed.
"""

from __future__ import annotations

import threading

from connect.api import NotFoundError
from connect.herder.api import ConnectorStateInfo
from connect.herder.base import LogHerder, with_placeholders
from connect.herder.fencing import fence_before_tasks
from connect.herder.startup import internal_topics, prepare_log
from connect.storage import State, Status, TargetState

__all__ = ["StandaloneHerder"]


class StandaloneHerder(LogHerder):
    """Implements connect.herder.api.Herder for one process."""

    # -------------------------------------------------------------- lifecycle

    def start(self) -> None:
        """Replay the stores and start every connector as its target state says."""
        prepare_log(self.log, internal_topics(self.config))  # before the replays
        self.configs.start()
        self.offsets.start()
        self.status.start()
        with self._lock:
            for name in sorted(self.configs.snapshot().connectors):
                self._start_connector(name)
        self._ready = True

    def stop(self) -> None:
        with self._lock:
            self._ready = False
            self.worker.stop()

    def _on_status(self, connector: str, task: int | None, state: State, trace: str | None) -> None:
        if connector not in self.known.configs().connectors and state is not State.FAILED:
            return  # deleted meanwhile: leave no status behind
        self.known.put_status(Status(connector, task, state, self._worker_id, trace))

    def _request_reconfiguration(self, name: str) -> None:
        threading.Thread(target=self._reconfigure_later, args=(name,), daemon=True).start()

    def _reconfigure_later(self, name: str) -> None:
        with self._lock:
            snapshot = self.configs.snapshot()
            if (
                name in snapshot.connectors
                and snapshot.targets.get(name) is not TargetState.STOPPED
            ):
                self._reconfigure_tasks(name)

    # ---------------------------------------------------------- reconciling

    def _start_connector(self, name: str) -> None:
        snapshot = self.configs.snapshot()
        props = snapshot.connectors[name]
        target = snapshot.targets.get(name, TargetState.STARTED)
        if target is TargetState.STOPPED:
            self.worker.stop_tasks(self.worker.connector_tasks(name))
            self.worker.stop_connector(name)
            self.status.remove_tasks(name, 0)
            self.status.put(Status(name, None, State.STOPPED, self._worker_id))
            return
        if self.worker.start_connector(name, props, paused=target is TargetState.PAUSED):
            self._reconfigure_tasks(name)

    def _connector_written(self, name: str) -> None:
        self._start_connector(name)

    def _reconfigure_tasks(self, name: str) -> None:
        snapshot = self.configs.snapshot()
        props = snapshot.connectors[name]
        try:
            configs = with_placeholders(props, self.worker.task_configs(name, props))
        except Exception as exc:
            self.worker.fail_connector(name, exc)
            return
        if configs != snapshot.tasks.get(name):
            self.configs.put_task_configs(name, configs)
        paused = snapshot.targets.get(name) is TargetState.PAUSED
        self.worker.stop_tasks(self.worker.connector_tasks(name))
        if not fence_before_tasks(self, name, props, len(configs)):
            return
        for index, task_props in enumerate(configs):
            self.worker.start_task(name, index, props, task_props, paused=paused)
        self.status.remove_tasks(name, len(configs))

    def delete_connector(self, name: str) -> None:
        with self._lock:
            self._require(name)
            self.configs.remove_connector(name)
            self.worker.stop_tasks(self.worker.connector_tasks(name))
            self.worker.stop_connector(name)
            self._forget(name)

    def restart_connector(
        self, name: str, *, include_tasks: bool = False, only_failed: bool = False
    ) -> ConnectorStateInfo | None:
        with self._lock:
            plain = not include_tasks and not only_failed
            if self._nothing_to_restart(name):
                return None if plain else self._restart_plan(name, include_tasks, only_failed)[0]
            planned, restart_connector, restart_tasks = self._restart_plan(
                name, include_tasks, only_failed
            )
            if restart_connector:
                if not plain:
                    self.status.put(Status(name, None, State.RESTARTING, self._worker_id))
                props = self._require(name)
                paused = self.configs.snapshot().targets.get(name) is TargetState.PAUSED
                self.worker.start_connector(name, props, paused=paused)
            for task in restart_tasks:
                self.status.put(Status(name, task, State.RESTARTING, self._worker_id))
                self._restart_task_locked(name, task)
            if restart_connector and not include_tasks and not self.worker.connector_tasks(name):
                self._reconfigure_tasks(name)
            return None if plain else planned

    def restart_task(self, name: str, task: int) -> None:
        with self._lock:
            self._require(name)
            self._restart_task_locked(name, task)

    def _restart_task_locked(self, name: str, task: int) -> None:
        snapshot = self.configs.snapshot()
        tasks = snapshot.tasks.get(name, [])
        if not 0 <= task < len(tasks):
            raise NotFoundError(f"Task {name}-{task} not found")
        paused = snapshot.targets.get(name) is TargetState.PAUSED
        if not fence_before_tasks(self, name, snapshot.connectors[name], len(tasks)):
            return  # a failed round is run again by a restart
        self.worker.start_task(name, task, snapshot.connectors[name], tasks[task], paused=paused)

    def pause_connector(self, name: str) -> None:
        """PAUSED whatever the state before, STOPPED included: Kafka's rule (a stopped
        connector then starts, paused, as on a resume)."""
        with self._lock:
            self._require(name)
            previous = self.configs.snapshot().targets.get(name)
            self.configs.put_target_state(name, TargetState.PAUSED)
            if previous is TargetState.STOPPED or name not in self.worker.connectors:
                self._start_connector(name)
            else:
                self.worker.pause_connector(name)

    def resume_connector(self, name: str) -> None:
        with self._lock:
            self._require(name)
            previous = self.configs.snapshot().targets.get(name)
            self.configs.put_target_state(name, TargetState.STARTED)
            if previous is TargetState.STOPPED or name not in self.worker.connectors:
                self._start_connector(name)
            else:
                self.worker.resume_connector(name)

    def stop_connector(self, name: str) -> None:
        with self._lock:
            self._require(name)
            self.configs.put_task_configs(name, [])
            self.configs.put_target_state(name, TargetState.STOPPED)
            self._start_connector(name)
