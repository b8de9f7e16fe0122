"""The thread that runs one task, and the state it reports.

Lifecycle, for both kinds of task (numbered as in `run`):
1. `initialize` and `start` the plugin task; report RUNNING (or PAUSED).
2. Loop `iterate()` until stopped. On being paused, commit offsets once, as on a
   stop (what was done before the pause must not wait for the resume, which may never
   come, to be committed and visible); then do nothing but wait.
3. On a clean stop: a final offset commit, then `task.stop()`; report UNASSIGNED.
4. On an error: commit what is safe to commit (`commit_after_failure`: a source
   commits the offsets of the records already durable in the log, as Kafka's
   WorkerSourceTask does; a sink commits as its partitions are closed when it leaves
   its group in `stop_plugin`, as Kafka's WorkerSinkTask does), then report FAILED
   with the trace and stop the plugin task. The commit comes before the report so
   that a restart asked for on seeing FAILED starts from it. The worker never
   restarts a failed task by itself (a REST restart does).
"""

from __future__ import annotations

import logging
import threading
import traceback
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from connect.storage import State
from connect.worker.lease import Lease

__all__ = ["StatusListener", "WorkerTask"]

_log = logging.getLogger("connect.worker")

#: Called with (connector, task, state, trace) whenever the task's state changes.
StatusListener = Callable[[str, int, State, str | None], None]


class WorkerTask(ABC):
    def __init__(
        self, connector: str, task: int, *, on_status: StatusListener, paused: bool = False
    ) -> None:
        self.connector = connector
        self.task_id = task
        self._on_status = on_status
        self._stopping = threading.Event()
        self._paused = threading.Event()
        if paused:
            self._paused.set()
        self._resumed = threading.Condition()
        self._thread: threading.Thread | None = None
        self.state = State.UNASSIGNED
        self.trace: str | None = None
        self.stopped = threading.Event()
        #: The worker's lease in a distributed cluster (None: standalone, always valid).
        self.lease: Lease | None = None

    @property
    def name(self) -> str:
        return f"{self.connector}-{self.task_id}"

    def may_write(self) -> bool:
        """Whether this task may write now; while the worker's lease has lapsed (it may
        have been evicted), wait for it to come back or for the task to be stopped."""
        lease = self.lease
        return lease is None or lease.wait_valid(self._stopping)

    def lease_lapsed(self) -> bool:
        """Whether the lease has lapsed right now (commits are skipped, not awaited)."""
        return self.lease is not None and not self.lease.valid()

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name=f"task-{self.name}", daemon=True)
        self._thread.start()

    def _report(self, state: State, trace: str | None = None) -> None:
        self.state, self.trace = state, trace
        try:
            self._on_status(self.connector, self.task_id, state, trace)
        except Exception:
            _log.exception("could not record the status of task %s", self.name)

    def run(self) -> None:
        try:
            # Step 1
            self.initialize_and_start()
            self._report(State.PAUSED if self._paused.is_set() else State.RUNNING)
            # Step 2
            committed_on_pause = False
            while not self._stopping.is_set():
                if self._paused.is_set():
                    if not committed_on_pause:
                        self.commit_on_pause()
                        committed_on_pause = True
                    with self._resumed:
                        self._resumed.wait(0.5)
                    continue
                committed_on_pause = False
                self.iterate()
            # Step 3
            self.commit_final()
            self.stop_plugin()
            self._report(State.UNASSIGNED)
        except BaseException as exc:
            # Step 4
            _log.error(
                "Task %s threw an uncaught and unrecoverable exception", self.name, exc_info=exc
            )
            try:
                self.commit_after_failure()
            except Exception:
                _log.exception("task %s could not commit its offsets after failing", self.name)
            self._report(State.FAILED, "".join(traceback.format_exception(exc)))
            try:
                self.stop_plugin()
            except Exception:
                _log.exception("task %s failed to stop after failing", self.name)
        finally:
            self.close_resources()
            self.stopped.set()

    def pause(self) -> None:
        if not self._paused.is_set():
            self._paused.set()
            if self.state is State.RUNNING:
                self._report(State.PAUSED)

    def resume(self) -> None:
        if self._paused.is_set():
            self._paused.clear()
            with self._resumed:
                self._resumed.notify_all()
            if self.state is State.PAUSED:
                self._report(State.RUNNING)

    @property
    def paused(self) -> bool:
        return self._paused.is_set()

    def stop(self) -> None:
        """Ask the task to stop; `await_stop` waits for it."""
        self._stopping.set()
        with self._resumed:
            self._resumed.notify_all()
        self.on_stop_requested()

    def await_stop(self, timeout_s: float) -> bool:
        return self.stopped.wait(timeout_s)

    # Hooks of the concrete task runners.
    @abstractmethod
    def initialize_and_start(self) -> None: ...

    @abstractmethod
    def iterate(self) -> None: ...

    @abstractmethod
    def commit_final(self) -> None: ...

    @abstractmethod
    def stop_plugin(self) -> None: ...

    def commit_on_pause(self) -> None:
        """Commit what was done before a pause (on the task's thread, like every
        commit); the same commit as a clean stop's by default."""
        self.commit_final()

    def commit_after_failure(self) -> None:
        """Commit, after the task failed, what is durable whatever the failure was
        (step 4); nothing by default. Called on the task's thread; what it raises is
        logged and the task is reported FAILED all the same."""

    def on_stop_requested(self) -> None:
        """Called on the stopping thread (e.g. to wake a blocked poll)."""

    def close_resources(self) -> None:
        """Release clients and converters (always called, last)."""

    def metrics_snapshot(self) -> dict[str, Any]:
        """The task's counters as a plain dict (connect.metrics.task); read by the
        metrics scrape and, for a task in a child process, shipped to the worker."""
        return {}
