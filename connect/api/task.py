"""Tasks: the units that move data, each in its own thread.

SourceTask lifecycle (one thread per task):
1. `initialize(context)`; 2. `start(props)` — the task's config from `task_configs`;
3. `poll()` repeatedly — returns a list of SourceRecords, or None/[] when there is
   nothing now. It may block briefly (return within about a second so the task can be
   stopped). Raising RetriableError makes the runtime call `poll()` again after a
   backoff; any other error fails the task.
4. `commit_record(record, metadata)` for each record once it is durable in the log
   (metadata None: a transform dropped it) — or, for a task that overrides it,
   `commit_records(records, metadata)` once per appended batch — then `commit()`
   after each offset flush. Durable means the log has fsynced the record, so the
   calls come in rounds, on the task's thread between polls, in the order polled:
   after each offset flush (before `commit()`, and so on a clean stop too) and
   sooner, with an fsync of their own, once the oldest waiting record has waited
   about a second or some thousands of records wait. A record the log may still
   lose (a crash before its fsync) is never acknowledged;
5. `wakeup()` — called from the stopping thread as soon as the task is asked to
   stop, while `poll()` may be waiting: end that wait (Tributary's; Kafka Connect has
   no such call, and its sources wait out their poll); then `stop()`, on the task's
   thread once the last `poll()` returned (as Kafka Connect 3.x calls it): release
   what the task holds.

SinkTask lifecycle (one thread per task; every call on that thread but `stop`):
1. `initialize(context)`; 2. `start(props)`; 3. `open(partitions)` when partitions
   are assigned; 4. `put(records)` repeatedly (may be empty) — raise RetriableError
   to have the same records redelivered after a backoff: the `context.timeout(ms)`
   the task set, if above 0 (it stays set until changed), else 100 ms doubling up to
   1 s and back to 100 ms after a delivery succeeds; nothing new is consumed
   meanwhile. A task that implements `put_batches` may be handed Arrow batches just
   before each `put()` instead of some of the records (see `connect.api.sink_batch`);
5. `pre_commit(offsets)` before each offset commit: make everything up to `offsets`
   durable and return the offsets that are safe to commit (default: `flush(offsets)`
   then `offsets`); 6. `close(partitions)` when partitions go away; 7. `stop()`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, overload

from connect.api.exactly_once import TransactionContext
from connect.api.records import RecordMetadata, SinkRecord, SourceRecord, TopicPartition

if TYPE_CHECKING:  # pyarrow and numpy load only for the tasks and runtimes that use them
    from connect.api.sink_batch import SinkBatch

__all__ = [
    "ErrantRecordReporter",
    "OffsetStorageReader",
    "SinkTask",
    "SinkTaskContext",
    "SourceTask",
    "SourceTaskContext",
    "Task",
]


class Task(ABC):
    def version(self) -> str:
        return getattr(type(self), "VERSION", "0.1.0")

    @abstractmethod
    def start(self, props: Mapping[str, str]) -> None: ...

    @abstractmethod
    def stop(self) -> None: ...


class OffsetStorageReader(ABC):
    """Committed source offsets of this connector, by source partition."""

    @abstractmethod
    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None: ...

    def offsets(
        self, partitions: Iterable[Mapping[str, Any]]
    ) -> dict[tuple, dict[str, Any] | None]:
        """Keyed by the partition's sorted items (dicts are not hashable)."""
        return {tuple(sorted(p.items())): self.offset(p) for p in partitions}


class SourceTaskContext(ABC):
    @property
    @abstractmethod
    def configs(self) -> Mapping[str, str]: ...

    @property
    @abstractmethod
    def offset_storage_reader(self) -> OffsetStorageReader: ...

    def transaction_context(self) -> TransactionContext | None:
        """The task's say over transaction boundaries: only with exactly-once source
        support on and `transaction.boundary=connector`; None otherwise."""
        return None


class SourceTask(Task):
    """Reads from an external system (see the module docstring)."""

    context: SourceTaskContext

    def initialize(self, context: SourceTaskContext) -> None:
        self.context = context

    @abstractmethod
    def poll(self) -> list[SourceRecord] | None: ...

    def wakeup(self) -> None:
        """The task is being stopped: a `poll()` waiting for data should return now.
        Called from another thread, at most once, before `stop()`; why: a stop (a
        delete, a rebalance, a worker's shutdown) otherwise waits out the poll's wait,
        a second for most sources. Default: nothing."""

    def commit(self) -> None:
        """Offsets up to the last flush are committed (default: nothing to do)."""

    def commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:
        """`record` is durable in the log at `metadata`: the log has fsynced it, so a
        crash cannot lose it (default: nothing to do). See the module docstring for
        when the runtime calls it."""

    def commit_records(
        self, records: Sequence[SourceRecord], metadata: Sequence[RecordMetadata | None]
    ) -> None:
        """`records`, in the order polled, are durable in the log at `metadata` (None
        where a transform dropped one). The runtime calls this once per appended batch
        instead of `commit_record` per record when a task overrides it: a task that
        emits hundreds of thousands of records a second and needs only, say, the
        newest position saves a call and a metadata object per record (`metadata` is
        built on access). Default: `commit_record` for each."""
        for record, meta in zip(records, metadata, strict=True):
            self.commit_record(record, meta)

    def commit_batch(self, batch: Any, metadata: Sequence[RecordMetadata | None]) -> None:
        """The rows of a `connect.api.batches.SourceBatch` this task polled are durable
        in the log at `metadata` (all None when a transform dropped them); `batch` holds
        just those rows. Default: `commit_records` with the batch's records, made one
        at a time as they are read. A task that needs only the batch's offset should
        override this: making a record costs microseconds per column."""
        self.commit_records(_LazyRecords(batch), metadata)


class _LazyRecords(Sequence[SourceRecord]):
    """A batch's records for `commit_records`, each made only when read."""

    def __init__(self, batch: Any) -> None:
        self._batch = batch

    def __len__(self) -> int:
        return len(self._batch)

    @overload
    def __getitem__(self, i: int) -> SourceRecord: ...
    @overload
    def __getitem__(self, i: slice) -> list[SourceRecord]: ...
    def __getitem__(self, i: int | slice) -> SourceRecord | list[SourceRecord]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if not -n <= i < n:
            raise IndexError(i)
        i %= n
        return self._batch.slice(i, i + 1).records()[0]


class ErrantRecordReporter(ABC):
    @abstractmethod
    def report(self, record: SinkRecord, error: BaseException) -> Future[None]:
        """Send a record the task could not write to the dead-letter topic and/or
        the log, per the connector's `errors.*` config. The runtime waits for the
        report before committing the record's offset."""


class SinkTaskContext(ABC):
    @property
    @abstractmethod
    def configs(self) -> Mapping[str, str]: ...

    @abstractmethod
    def offset(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Rewind or skip: consume these partitions from these offsets next."""

    @abstractmethod
    def timeout(self, timeout_ms: int) -> None:
        """The backoff before redelivering after a RetriableError from `put` or
        `put_batches`, for every retry from now on until set again. 0 or less: the
        runtime's default, 100 ms doubling up to 1 s (reset by a delivery that
        succeeds), so a store that stays down is not called in a tight loop."""

    @abstractmethod
    def assignment(self) -> set[TopicPartition]: ...

    @abstractmethod
    def pause(self, *partitions: TopicPartition) -> None: ...

    @abstractmethod
    def resume(self, *partitions: TopicPartition) -> None: ...

    @abstractmethod
    def request_commit(self) -> None:
        """Commit offsets soon instead of at the next interval."""

    @property
    @abstractmethod
    def errant_record_reporter(self) -> ErrantRecordReporter | None: ...


class SinkTask(Task):
    """Writes to an external system (see the module docstring)."""

    context: SinkTaskContext

    def initialize(self, context: SinkTaskContext) -> None:
        self.context = context

    @abstractmethod
    def put(self, records: Sequence[SinkRecord]) -> None: ...

    def put_batches(self, batches: Sequence[SinkBatch]) -> Any:
        """Write records handed over as Arrow columns, one `SinkBatch` per run of one
        value schema in one partition (see `connect.api.sink_batch` for when the
        runtime does this; keys and headers are not part of a batch).

        Called on the task's thread, right before the `put()` of the same poll, which
        carries the records that could not be batched (often none): `put()` is still
        called after every poll, so per-poll duties can stay there. Raising
        RetriableError redelivers the same batches (and that poll's records) after
        the backoff that `put()`'s RetriableError takes (`SinkTaskContext.timeout`);
        any other error fails the task. Offsets are committed
        as for `put()`: `pre_commit` decides what is safe.

        Returns None once written. The default returns NotImplemented: the runtime
        then never builds batches for this task (it checks for an override before the
        first poll, and stops if a task returns NotImplemented anyway, handing those
        records to `put()` instead)."""
        return NotImplemented

    def flush(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Make everything written so far durable (default: nothing to do)."""

    def pre_commit(self, offsets: Mapping[TopicPartition, int]) -> Mapping[TopicPartition, int]:
        """Offsets (the next offset to read, per partition) that are safe to commit."""
        self.flush(offsets)
        return offsets

    def open(self, partitions: Sequence[TopicPartition]) -> None:
        """Partitions assigned to this task (default: nothing to do)."""

    def close(self, partitions: Sequence[TopicPartition]) -> None:
        """Partitions taken away; their offsets were committed (default: nothing)."""
