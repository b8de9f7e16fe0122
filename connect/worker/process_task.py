"""A task in a child process of its own (`task.isolation=process`).

Why: Python threads share one interpreter lock, so a worker running its tasks as
threads uses one core however many it has; a source and a sink in one worker would
take turns. A task in its own process runs on its own core. The embedded log is
built for several processes (one flock-serialised writer per partition, lock-free
readers, flock-based consumer groups), so a child opens the same log directory and
needs nothing from the parent but its configuration.

The protocol, over one duplex pipe (numbered as in the code):
1. The parent spawns the child (the `spawn` start method: no fork of a threaded
   process) with a spec: worker config, log directory, connector name, task index,
   the connector and task configs with config providers already resolved, paused.
2. The child opens the log (no maintenance thread: the parent runs retention and
   compaction), builds the task exactly as a thread worker would, and runs it.
3. The child sends ("status", state, trace) on every state change and ("topic",
   topic) when the task first uses a topic; the parent hands them to the herder. It
   also sends ("stats", counters) — the task's metrics snapshot, a small dict — at
   most every `_STATS_INTERVAL_S` while they change and once more when it stops, so
   a scrape reads the parent's copy and never waits on a child (a parent that does
   not know the message ignores it).
4. The parent sends ("pause",), ("resume",), ("stop",) and, in a distributed cluster,
   ("lease", deadline) each time its lease changes (connect.worker.lease). On stop, or
   on SIGTERM (e.g. sent to the whole process group), the child stops the task cleanly
   (final offset commit), closes the log and exits; it ignores SIGINT (the parent's).
5. If the parent dies, the child sees the pipe close and stops cleanly the same way,
   so nothing committed is lost and no orphan keeps running.
6. If the child dies without a final state (killed, crashed), the parent reports
   FAILED with the exit code, and the task stays failed until restarted, as any
   failed task does.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import multiprocessing
import signal
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from multiprocessing.connection import Connection
from typing import Any

from connect.storage import State

__all__ = ["ProcessTask"]

_log = logging.getLogger("connect.worker")

#: (connector, task, state, trace) → None, as for thread tasks.
StatusListener = Callable[[str, int, State, str | None], None]
_FINAL = (State.UNASSIGNED, State.FAILED)
#: The young generation's collection threshold in task processes. CPython counts
#: allocations minus deallocations, so a batch of 10,000 records (~100,000 containers
#: alive at once) crossed 100,000 and set off a scan of them every batch or two, a
#: visible share of a CDC snapshot's time (docs/performance.md). At a million, only
#: objects that really accumulate (cycles) bring a collection on.
_GC_THRESHOLD = 1_000_000
#: How often a child ships its task's counters (only when they changed): a pickled
#: dict of ~20 numbers a second costs the child nothing and the parent one small recv.
_STATS_INTERVAL_S = 1.0


class ProcessTask:
    """The parent's handle on a task running in a child process; it offers what the
    Worker uses of a thread task (start, pause, resume, stop, await_stop, state)."""

    def __init__(
        self,
        spec: Mapping[str, Any],
        *,
        on_status: StatusListener,
        on_topic: Callable[[str], None],
    ) -> None:
        self.connector: str = spec["connector"]
        self.task_id: int = spec["task"]
        self._spec = dict(spec)
        self._on_status = on_status
        self._on_topic = on_topic
        self._paused = bool(spec.get("paused"))
        self._send_lock = threading.Lock()
        self._stop_requested = False
        self.state = State.UNASSIGNED
        self._reported = False  # whether the child has said anything of its state
        self.trace: str | None = None
        self.stopped = threading.Event()
        self._conn: Connection | None = None
        self._process: multiprocessing.process.BaseProcess | None = None
        self._stats: dict[str, Any] = {}

    def metrics_snapshot(self) -> dict[str, Any]:
        """The counters the child last shipped (step 3); {} before the first."""
        return self._stats

    @property
    def name(self) -> str:
        return f"{self.connector}-{self.task_id}"

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def start(self) -> None:
        # Step 1
        ctx = multiprocessing.get_context("spawn")
        parent_conn, child_conn = ctx.Pipe(duplex=True)
        self._process = ctx.Process(
            target=_child_main,
            args=(child_conn, self._spec),
            name=f"task-{self.name}",
            daemon=True,
        )
        self._process.start()
        child_conn.close()
        self._conn = parent_conn
        threading.Thread(target=self._listen, name=f"task-{self.name}-pipe", daemon=True).start()

    def _listen(self) -> None:
        # Step 3 (parent side) and step 6
        assert self._conn is not None and self._process is not None
        try:
            while True:
                message = self._conn.recv()
                if message[0] == "status":
                    self._reported = True
                    self._report(State(message[1]), message[2])
                elif message[0] == "topic":
                    self._on_topic(message[1])
                elif message[0] == "stats":
                    self._stats = message[1]
        except (EOFError, OSError):
            pass
        self._process.join()
        code = self._process.exitcode
        if self.state not in _FINAL or not self._reported:
            # a child that died before its first status (an import error, a crash in
            # start()) failed too: UNASSIGNED is only final once the child said so
            if self._stop_requested:
                self._report(State.UNASSIGNED, None)
            else:
                self._report(
                    State.FAILED,
                    f"The process of task {self.name} exited unexpectedly (exit code {code}).",
                )
        with contextlib.suppress(OSError):
            self._conn.close()
        self.stopped.set()

    def _report(self, state: State, trace: str | None) -> None:
        self.state, self.trace = state, trace
        try:
            self._on_status(self.connector, self.task_id, state, trace)
        except Exception:
            _log.exception("could not record the status of task %s", self.name)

    def _send(self, *message: object) -> None:
        # Step 4 (parent side)
        if self._conn is None:
            return
        with self._send_lock, contextlib.suppress(OSError, ValueError):
            self._conn.send(message)

    def pause(self) -> None:
        self._paused = True
        self._send("pause")

    def resume(self) -> None:
        self._paused = False
        self._send("resume")

    def extend_lease(self, deadline: float, generation: int | None = None) -> None:
        """Tell the child its writes are allowed until `deadline` (monotonic seconds),
        with offsets committed in `generation`."""
        self._send("lease", deadline, generation)

    def stop(self) -> None:
        self._stop_requested = True
        self._send("stop")

    def await_stop(self, timeout_s: float) -> bool:
        """Wait for a clean stop; past the timeout the child is killed (a thread could
        only be abandoned), and its uncommitted work is redone by the next run."""
        if self.stopped.wait(timeout_s):
            return True
        if self._process is not None and self._process.is_alive():
            _log.error("task %s did not stop within %.1fs; killing it", self.name, timeout_s)
            self._process.kill()
        return self.stopped.wait(5.0)


class _IdentityProviders:
    """Configs reach the child resolved; resolving again could change a secret that
    happens to contain `${…}`."""

    def resolve(self, props: Mapping[str, str]) -> dict[str, str]:
        return dict(props)


def _child_main(conn: Connection, spec: Mapping[str, Any]) -> None:
    """The child process (steps 2 to 5)."""
    terminate = _set_up_process(spec)
    send_lock = threading.Lock()

    def send(*message: object) -> None:
        with send_lock, contextlib.suppress(OSError, ValueError):
            conn.send(message)

    config = dict(spec["worker_config"])
    # Step 2 (a failure here is reported with its trace, like a task's own failure)
    try:
        log, offsets = _open_log(spec, config)
    except Exception as exc:
        send("status", "FAILED", "".join(traceback.format_exception(exc)))
        conn.close()
        return
    worker = _start_task(spec, config, log, offsets, send)
    task = worker.tasks.get((spec["connector"], spec["task"]))
    try:
        if task is not None:
            _serve(conn, task, terminate, send, worker.lease)
    finally:
        # Steps 4 and 5: a clean stop whatever ended the loop
        worker.stop()
        if task is not None:
            send("stats", task.metrics_snapshot())  # Step 3: the final counts
        offsets.stop()
        log.close()
        conn.close()


def _set_up_process(spec: Mapping[str, Any]) -> threading.Event:
    """Signals, logging and secrets masking of the child; the event SIGTERM sets."""
    # Ctrl-C reaches the whole process group: the parent handles it and tells us.
    # SIGTERM (to the group, as `timeout` or systemd send it, or to us alone) means
    # a clean stop with the final commit, never an abrupt exit.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    terminate = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: terminate.set())
    logging.basicConfig(
        level=spec.get("log_level", logging.INFO),
        format="[%(asctime)s] %(levelname)s %(name)s: %(message)s",
    )
    # Imported here: the parent imports this module without paying for these.
    from connect.herder.secrets import (
        config_secrets,
        install_log_masking,
        password_keys,
        remember_secrets,
    )
    from connect.plugins import Plugins

    # This process logs to the worker's stderr: its lines are masked as the worker's
    # are, the connector's own secrets included (connect.herder.secrets).
    install_log_masking()
    connector_props = spec["connector_props"]
    remember_secrets(config_secrets(connector_props, password_keys(Plugins(), connector_props)))
    return terminate


def _open_log(spec: Mapping[str, Any], config: Mapping[str, Any]) -> tuple[Any, Any]:
    """Step 2: the log (no maintenance thread: the parent's) and the offset store."""
    from connect.storage import LogTable, OffsetStore
    from log import FileLog

    log = FileLog(spec["log_dir"], background=False)
    offsets = OffsetStore(
        LogTable(
            log,
            config["offset.storage.topic"],
            partitions=int(config["offset.storage.partitions"]),
            # An exactly-once task's aborted offsets never count, whatever this
            # worker's setting now (connect.herder.base's store, the same rule).
            isolation_level="read_committed",
        )
    )
    offsets.start()
    return log, offsets


def _start_task(
    spec: Mapping[str, Any],
    config: Mapping[str, Any],
    log: Any,
    offsets: Any,
    send: Callable[..., None],
) -> Any:
    """Step 2: a thread worker of this process, running the one task (its state
    changes and first topics sent to the parent: step 3)."""
    from connect.plugins import Plugins
    from connect.worker.worker import Worker

    worker = Worker(
        {**config, "task.isolation": "thread"},
        log=log,
        plugins=Plugins(),
        offsets=offsets,
        providers=_IdentityProviders(),  # type: ignore[arg-type]
        worker_id=spec["worker_id"],
        # Step 3
        on_status=lambda _c, _t, state, trace: send("status", state.value, trace),
    )
    worker.on_topic = lambda _c, topic, _t: send("topic", topic)
    if spec.get("lease") is not None:
        from connect.worker.lease import Lease

        worker.lease = Lease(spec["lease"], spec.get("generation"))
    worker.start_task(
        spec["connector"],
        spec["task"],
        spec["connector_props"],
        spec["task_props"],
        paused=spec["paused"],
    )
    # A task process allocates millions of short-lived records that reference counting
    # frees; the cyclic collector, run every 700 allocations by default, found nothing
    # to free and cost a fifth of a sink's time. Collect rarely, and never scan the
    # long-lived objects of start-up again.
    gc.freeze()
    gc.set_threshold(_GC_THRESHOLD, 50, 100)
    return worker


def _serve(
    conn: Connection,
    task: Any,
    terminate: threading.Event,
    send: Callable[..., None],
    lease: Any = None,
) -> None:
    """Apply the parent's commands until it says stop, goes away, the task ends, or
    SIGTERM arrives; ship the task's counters when they changed (step 3)."""
    shipped: dict[str, Any] = {}
    due = time.monotonic()
    while not task.stopped.is_set() and not terminate.is_set():
        now = time.monotonic()
        if now >= due:
            due = now + _STATS_INTERVAL_S
            stats = task.metrics_snapshot()
            if _changed(stats, shipped):
                send("stats", stats)
                shipped = stats
        try:
            if not conn.poll(0.2):
                continue
            message = conn.recv()
        except (EOFError, OSError):
            return  # Step 5: the parent is gone
        if message[0] == "pause":
            task.pause()
        elif message[0] == "resume":
            task.resume()
        elif message[0] == "lease" and lease is not None:
            lease.generation = message[2]
            lease.set(message[1])
        elif message[0] == "stop":
            return


def _changed(stats: Mapping[str, Any], shipped: Mapping[str, Any]) -> bool:
    """Whether anything but the snapshot's time differs."""
    return any(v != shipped.get(k) for k, v in stats.items() if k != "at")
