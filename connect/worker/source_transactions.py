"""Exactly-once source support (Kafka Connect's KIP-618): a source task's records and
its source offsets written in one log transaction, so that a crash anywhere replays
nothing the log already shows to read_committed readers, and loses nothing.

Turned on by the worker key `exactly.once.source.support=enabled`; per connector,
`exactly.once.support` (`requested`/`required`), `transaction.boundary` (`poll`,
`interval` with `transaction.boundary.interval.ms`, `connector`) and
`offsets.storage.topic` (`exactly_once_problems` is their validation).

A task's transactions (numbered as in the code):
1. Start: the task's transactional producer, `transactional.id`
   `<group.id or worker id>-<connector>-<task>` (`transactional_id`), calls
   `init_transactions()`: a new epoch fences the task's previous incarnation (a
   zombie on a worker that lost it, or a killed process) and aborts the transaction
   it left open. Only then are the offsets read back, with read_committed, up to the
   log end of the offsets topic (an open transaction of another task holds the
   replay back until it ends or times out), so a task never resumes from offsets
   whose records were not committed.
2. Records: the first append after a boundary begins a transaction; every batch the
   task appends goes into it (the source task's usual one batch per partition).
3. Boundary (`poll`: after each non-empty poll; `interval`: once the interval
   passed; `connector`: when the task asks through its `TransactionContext`): the
   offsets remembered since the last boundary are appended to the offsets topic as
   the offset store writes them (connect.storage.offsets), inside the transaction,
   then `commit_transaction()`. Only then are `commit_record` and `commit()` called.
   At the worker's boundaries (`poll`, `interval`) the commit runs on the task's
   committer thread (`commit_later`) while the task polls and converts its next
   records: its disk waits no longer stop the task. Every other step of the task's
   transactions (`append`, `due`, `commit`, `abort`, `close`) first waits for it
   (`settle`), which then acknowledges its records and calls `commit()` on the
   task's thread, so the next transaction begins only after it committed, and a
   failed commit fails the task there.
4. An abort the task asks for drops the transaction's records but commits their
   offsets (in a transaction of their own), as Kafka Connect does: the task chose
   to drop them. A failed task's abort drops the offsets too: a restart reads the
   records again from the last committed offsets.
5. A fenced producer (a newer generation of the task took its transactional id, or
   the transaction outlived `transaction.timeout.ms`) fails the task with a message
   that says so; nothing of its open transaction becomes visible.

Fencing a connector's older generation when its task count changes (the tasks
`0..old-1` that may still run somewhere) is `fence_producers`, called by the herder
before the new generation starts (connect.herder.fencing).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import TYPE_CHECKING, Any

from connect.api import (
    ConnectError,
    SourceRecord,
    TransactionContext,
)
from connect.storage import LogTable, OffsetStore
from connect.storage.offsets import encode_offsets
from connect.worker.exactly_once_config import (
    exactly_once_enabled,
    transaction_timeout_ms,
    transactional_id,
)
from log import Header, Log, ProducerFencedError, partition_for_key

__all__ = ["ABORT", "COMMIT", "ExactlyOnceSteps", "SourceTransactions", "task_transactions"]

COMMIT = "commit"
ABORT = "abort"
Pending = Mapping[bytes, tuple[Mapping[str, Any], Mapping[str, Any] | None]]
#: What a commit run by `commit_later` tells its caller, on the task's thread: whether
#: there was a transaction (None: the commit failed) and how long the commit took.
Committed = Callable[[bool | None, float], None]


def task_transactions(
    log: Log,
    worker_config: Mapping[str, Any],
    worker_id: str,
    task_name: str,
    parsed: Mapping[str, Any],
    connector_props: Mapping[str, str],
    worker_offsets: OffsetStore,
) -> SourceTransactions | None:
    """A source task's transactions when the worker runs sources exactly once, None
    otherwise (`task_name` is `<connector>-<task>`; `parsed`, the connector's parsed
    common keys)."""
    if not exactly_once_enabled(worker_config):
        return None
    global_topic = str(worker_config.get("offset.storage.topic", "connect-offsets"))
    topic = parsed.get("offsets.storage.topic") or global_topic
    interval = parsed.get("transaction.boundary.interval.ms")
    if interval is None:
        interval = worker_config.get("offset.flush.interval.ms", 60_000)
    connector, _, task = task_name.rpartition("-")
    return SourceTransactions(
        log,
        task_name=task_name,
        transactional_id=transactional_id(worker_config, worker_id, connector, int(task)),
        transaction_timeout_ms=transaction_timeout_ms(worker_config, connector_props),
        boundary=str(parsed.get("transaction.boundary") or "poll"),
        interval_ms=int(interval),
        offsets_topic=topic,
        offsets_partitions=int(worker_config.get("offset.storage.partitions", 25)),
        fallback=None if topic == global_topic else worker_offsets,
    )


class _Context(TransactionContext):
    """A task's requests (`transaction.boundary=connector`): for the batch polled so
    far, or at a record (kept alive here until it is dispatched, so its id is its)."""

    def __init__(self) -> None:
        self.batch: str | None = None
        self.at: dict[int, tuple[SourceRecord, str]] = {}

    def _request(self, action: str, record: SourceRecord | None) -> None:
        if record is None:
            self.batch = action
        else:
            self.at[id(record)] = (record, action)

    def commit_transaction(self, record: SourceRecord | None = None) -> None:
        self._request(COMMIT, record)

    def abort_transaction(self, record: SourceRecord | None = None) -> None:
        self._request(ABORT, record)


class SourceTransactions:
    """One source task's transactions (the module docstring's steps)."""

    def __init__(
        self,
        log: Log,
        *,
        task_name: str,
        transactional_id: str,
        transaction_timeout_ms: int,
        boundary: str,
        interval_ms: int,
        offsets_topic: str,
        offsets_partitions: int,
        fallback: OffsetStore | None = None,
    ) -> None:
        self._log = log
        self.task_name = task_name
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.boundary = boundary
        self._interval_s = interval_ms / 1000
        self._table = LogTable(
            log, offsets_topic, partitions=offsets_partitions, isolation_level="read_committed"
        )
        #: This task's offsets, read committed (step 1); `fallback`: the worker's
        #: store, for a connector that moved to its own offsets topic.
        self.offsets = OffsetStore(self._table)
        self._fallback = fallback
        self._producer: Any = None
        self._open = False
        self._offset_partitions = offsets_partitions
        self._last_commit = time.monotonic()
        self.context: _Context | None = _Context() if boundary == "connector" else None
        self._committer: ThreadPoolExecutor | None = None
        #: The commit `commit_later` started: (its future, pending, epoch, connector,
        #: then, when it started).
        self._job: tuple[Future[tuple[bool, float]], Pending, int, str, Committed, float] | None
        self._job = None

    # Step 1
    def start(self) -> None:
        self._producer = self._log.transactional_producer(
            self.transactional_id, transaction_timeout_ms=self.transaction_timeout_ms
        )
        self._fenced_is_fatal(self._producer.init_transactions)
        self.offsets.start()
        self._offset_partitions = self._log.partition_count(self._table.topic)
        # Why a deadline past the timeout: a transaction another task's dead process
        # left open holds the replay back until the coordinator aborts it.
        deadline = time.monotonic() + self.transaction_timeout_ms / 1000 + 30
        while behind := self._table.behind():
            if time.monotonic() >= deadline:
                raise ConnectError(
                    f"task {self.task_name}: the offsets topic {self._table.topic} "
                    f"partitions {behind} hold a transaction open longer than "
                    f"transaction.timeout.ms ({self.transaction_timeout_ms} ms); restart "
                    "the task once it is aborted"
                )
            time.sleep(0.05)
        self._last_commit = time.monotonic()

    def offset(self, connector: str, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        found = self.offsets.get(connector, partition)
        if found is None and self._fallback is not None:
            return self._fallback.get(connector, partition)
        return found

    # Step 2
    def append(
        self,
        topic: str,
        partition: int,
        values: Sequence[bytes | None],
        *,
        keys: Sequence[bytes | None] | None = None,
        timestamps: Sequence[int] | None = None,
        headers: Sequence[Sequence[Header]] | None = None,
    ) -> range:
        """The log's `append`, inside the open transaction (begun here if none is),
        once the commit left running is through."""
        self.settle()
        return self._append(topic, partition, values, keys=keys, timestamps=timestamps,
                            headers=headers)  # fmt: skip

    def _append(self, topic: str, partition: int, values: Sequence[bytes | None],
                **fields: Any) -> range:  # fmt: skip
        if not self._open:
            self._fenced_is_fatal(self._producer.begin_transaction)
            self._open = True
        return self._fenced_is_fatal(self._producer.append, topic, partition, values, **fields)

    def split(self, records: list[Any]) -> list[tuple[list[Any], str | None]]:
        """A poll's records cut after each record the task asked to commit or abort
        at, with that request (`transaction.boundary=connector`)."""
        context = self.context
        if context is None or not context.at:
            return [(records, None)]
        out: list[tuple[list[Any], str | None]] = []
        start = 0
        for i, rec in enumerate(records):
            request = context.at.pop(id(rec), None)
            if request is not None and request[0] is rec:
                out.append((records[start : i + 1], request[1]))
                start = i + 1
        if start < len(records):
            out.append((records[start:], None))
        return out

    # Step 3
    def due(self, polled: bool) -> str | None:
        """What the boundary asks for after a poll (`polled`: it returned records)."""
        self.settle()
        if self.boundary == "poll":
            return COMMIT if polled or self._open else None
        if self.boundary == "interval":
            return COMMIT if time.monotonic() - self._last_commit >= self._interval_s else None
        context = self.context
        assert context is not None
        action, context.batch = context.batch, None
        return action

    def commit(self, pending: Pending, *, epoch: int, connector: str) -> bool:
        """The offsets in the transaction, then its commit; whether there was one."""
        self.settle()
        self._last_commit = time.monotonic()
        committed = self._commit_log(pending, epoch)
        self._copy_offsets(pending, epoch, connector)
        return committed

    def commit_later(
        self, pending: Pending, *, epoch: int, connector: str, then: Committed
    ) -> None:
        """`commit` on the committer thread (the module docstring, step 3); `settle`
        waits for it and calls `then` on the caller's thread."""
        self.settle()
        self._last_commit = time.monotonic()
        if self._committer is None:
            name = f"txn-{self.task_name}"
            self._committer = ThreadPoolExecutor(1, thread_name_prefix=name)
        future = self._committer.submit(self._timed_commit, pending, epoch)
        self._job = (future, pending, epoch, connector, then, time.perf_counter())

    def settle(self) -> None:
        """Wait for the commit `commit_later` started, if any, then call its `then`
        (with None when it failed, whose error is raised after)."""
        job, self._job = self._job, None
        if job is None:
            return
        future, pending, epoch, connector, then, started = job
        try:
            committed, seconds = future.result()
        except BaseException:
            then(None, time.perf_counter() - started)
            raise
        self._copy_offsets(pending, epoch, connector)
        then(committed, seconds)

    def _timed_commit(self, pending: Pending, epoch: int) -> tuple[bool, float]:
        started = time.perf_counter()
        return self._commit_log(pending, epoch), time.perf_counter() - started

    def _commit_log(self, pending: Pending, epoch: int) -> bool:
        """The log's part of `commit`: the offsets in the transaction, its commit."""
        if not pending and not self._open:
            return False
        if pending:
            items, headers = encode_offsets(pending, epoch)
            count = self._offset_partitions
            rows: dict[int, list[tuple[bytes, bytes | None]]] = {}
            for key, value in items:
                rows.setdefault(partition_for_key(key, count), []).append((key, value))
            for p, part in rows.items():
                self._append(
                    self._table.topic,
                    p,
                    [v for _, v in part],
                    keys=[k for k, _ in part],
                    headers=[headers] * len(part) if headers else None,
                )
        self._fenced_is_fatal(self._producer.commit_transaction)
        self._open = False
        return True

    def _copy_offsets(self, pending: Pending, epoch: int, connector: str) -> None:
        """Best effort, as Kafka's copy to the worker's global offsets topic: the REST
        offsets of a connector with a topic of its own read it there. On the task's
        thread, which reads that store too."""
        if self._fallback is not None and pending:
            self._fallback.put(connector, pending, epoch=epoch)

    # Step 4
    def abort(self) -> None:
        """Drop the open transaction (nothing of it becomes visible)."""
        self.settle()
        self._last_commit = time.monotonic()
        if self._open:
            self._open = False
            self._fenced_is_fatal(self._producer.abort_transaction)

    def close(self) -> None:
        """Close the producer; an open transaction is aborted (a failed task's). A
        commit still running (none after a stop's or a failure's last step, which
        settle) is waited for, its outcome left to the log: the task is stopped."""
        job, self._job = self._job, None
        if job is not None:
            with contextlib.suppress(Exception):
                job[0].result()
        if self._committer is not None:
            self._committer.shutdown()
            self._committer = None
        if self._producer is not None:
            with contextlib.suppress(ProducerFencedError):
                self._producer.close()
            self._producer = None
            self._open = False

    # Step 5
    def _fenced_is_fatal(self, call: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return call(*args, **kwargs)
        except ProducerFencedError as exc:
            self._open = False
            raise ConnectError(
                f"task {self.task_name} was fenced: a newer producer took its "
                f"transactional.id {self.transactional_id!r} (a newer generation of the "
                "connector's tasks, or this task started again elsewhere), or its "
                f"transaction ran past transaction.timeout.ms "
                f"({self.transaction_timeout_ms} ms). Its open transaction is aborted. If "
                "the task was not moved, restart it; if commits are slow, raise "
                "producer.override.transaction.timeout.ms or commit more often "
                "(transaction.boundary=poll)"
            ) from exc


class ExactlyOnceSteps:
    """The exactly-once side of connect.worker.source_task's WorkerSourceTask, mixed
    into it: a poll's records into the open transaction, the boundary's commit or
    abort, and what a stop, a pause and a failure do with the open transaction."""

    _txn: SourceTransactions | None
    _pending: dict[bytes, tuple[Mapping[str, Any], Mapping[str, Any] | None]]
    _acks: Any
    plugin: Any
    metrics: Any
    connector: str
    lease: Any

    if TYPE_CHECKING:  # WorkerSourceTask's

        def _poll(self) -> list[Any] | None: ...
        def _send_polled(self, records: list[Any]) -> None: ...
        def may_write(self) -> bool: ...
        def lease_lapsed(self) -> bool: ...
        def commit_offsets(self) -> None: ...
        def _warm(self) -> None: ...

    def _iterate_exactly_once(self, txn: SourceTransactions) -> None:
        """One poll with exactly-once on: its records into the open transaction, cut
        where the task asked (transaction.boundary=connector), then the boundary's
        commit, which the worker's boundaries (poll, interval) leave running while
        the next poll is made and converted (`commit_later`: its first append
        waits for it). Nothing is acknowledged before its transaction commits."""
        records = self._poll()
        if records:
            if not self.may_write():
                # Fenced: the work's next owner polls these again, and this
                # transaction's earlier records (interval, connector) with them.
                self._abort_transaction()
                return
            for chunk, action in txn.split(records):
                self._send_polled(chunk)
                if action is not None:
                    self._end_transaction(action)
        action = txn.due(bool(records))
        if action == COMMIT and txn.context is None:
            self._commit_transaction(txn, later=True)
        elif action is not None:
            self._end_transaction(action)

    def _end_transaction(self, action: str) -> None:
        if action == ABORT:
            # Step 4: the records dropped, their offsets committed all the same.
            assert self._txn is not None
            self._txn.settle()
            self._acks.drop()
            self._txn.abort()
        self.commit_offsets()

    def _abort_transaction(self) -> None:
        """Drop the open transaction with its offsets and acknowledgements (a failed
        or fenced task's, a stop's): its records never become visible, and a restart
        reads them again."""
        assert self._txn is not None
        try:
            self._txn.settle()  # a commit still running: its records were not this one's
        finally:
            self._pending = {}
            self._acks.drop()
            self._txn.abort()

    def _commit_final_by_connector(self, txn: SourceTransactions) -> None:
        """Kafka's rule at a clean stop with transaction.boundary=connector: commit
        only where the task asked; what it left open is aborted."""
        if txn.due(False) == COMMIT:
            self.commit_offsets()
        else:
            self._abort_transaction()

    def _commit_transaction(self, txn: SourceTransactions, *, later: bool = False) -> None:
        """The exactly-once commit: the offsets inside the open transaction and its
        commit (connect.worker.source_transactions, step 3), then the acknowledgements
        and `commit()` (`later`: once the commit, left running, is settled). A
        lapsed lease aborts instead: the work's next owner reads the records again
        from the offsets committed before."""
        if self.lease_lapsed():
            self._abort_transaction()
            return
        txn.settle()  # the acknowledgements taken below are this transaction's only
        pending, self._pending = self._pending, {}
        epoch = (self.lease.generation if self.lease is not None else None) or 0
        # The commit makes them durable (the partitions written with them too).
        then = partial(self._committed, self._acks.take(), bool(pending))
        txn.commit_later(pending, epoch=epoch, connector=self.connector, then=then)
        if not later:
            txn.settle()

    def _committed(
        self, acks: list[Any], offsets: bool, committed: bool | None, seconds: float
    ) -> None:
        """After a commit, on the task's thread: its metrics, then (None: it failed)
        the acknowledgements it made durable and `commit()`."""
        if committed is None or offsets:
            self.metrics.commit(seconds, ok=committed is not None)
        if committed is None:
            return
        self._acks.deliver(acks)
        if committed:
            self._warm()  # as at-least-once after its first offset commit
            self.plugin.commit()
