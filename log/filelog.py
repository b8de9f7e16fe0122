"""FileLog: the embedded log, a directory on disk shared by the processes of a machine.

Layout::

    <log.dir>/
        .admin.lock                 serialises topic create/delete/alter across processes
        <topic>/topic.json          partition count and config overrides (atomic writes)
        <topic>/<partition>/        one Partition directory each (see log.partition)
        ~deleted-<uuid>/            a topic being deleted (finished on open)
        .transactions/              the transaction coordinator's state (log.txn_coordinator)

Topic names are validated against Kafka's rule before they touch a path, so no name
can leave the directory. Every method is safe to call from several threads; several
processes may open the same directory (one writer per partition at a time, by lock).

Transactions (Kafka's model): `transactional_producer()` hands out a producer of
transactions (log.transactions); `read(..., isolation_level="read_committed")`
returns committed records only, below the last stable offset. Opening the log
finishes what a crash left of the coordinator's work, and every maintenance pass
(and a read_committed read held up by an open transaction, at most once a second)
aborts transactions older than their `transaction.timeout.ms`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from log.batch import BatchValues
from log.compression import CODEC_IDS
from log.config import TopicConfig
from log.errors import (
    InvalidConfigError,
    LogClosedError,
    LogNotFoundError,
    TopicDeletedError,
    TopicExistsError,
    UnknownTopicOrPartitionError,
)
from log.fsutil import FileLock, fsync_dir
from log.group import FileGroupMember
from log.maintenance import Maintenance
from log.names import validate_topic_name
from log.offsets import OFFSETS_TOPIC, GroupOffsets
from log.partition import Clock, Partition, wall_clock_ms
from log.partition_read import READ_COMMITTED, READ_UNCOMMITTED
from log.records import (
    Header,
    OffsetAndMetadata,
    PartitionDescription,
    Record,
    TopicDescription,
    TopicPartition,
)
from log.topic_meta import TOPIC_FILE, OpenTopic, read_meta, write_meta
from log.transactions import DEFAULT_TRANSACTION_TIMEOUT_MS, FileTransactionalProducer
from log.txn_coordinator import TransactionCoordinator

__all__ = ["FileLog"]

_T = TypeVar("_T")

_EXPIRY_CHECK_MS = 1000  # how often a held-up read_committed read looks for expiries


class FileLog:
    """The embedded partitioned commit log (see the module docstring).

    `auto_create_topics` creates a topic with `num_partitions` on first append, as
    Kafka's `auto.create.topics.enable` does. `background` runs retention,
    compaction and `flush.ms` in a daemon thread; tests pass False and call
    `run_maintenance()` with an injected clock instead. `create=False` opens an
    existing log only (LogNotFoundError otherwise): readers such as the CLI's
    `topics` or the Spark source must not turn a mistyped path into a new empty log.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        clock: Clock = wall_clock_ms,
        background: bool = True,
        auto_create_topics: bool = False,
        num_partitions: int = 1,
        maintenance_interval_s: float = 5.0,
        create: bool = True,
    ) -> None:
        self.directory = Path(directory).resolve()
        if create:
            self.directory.mkdir(parents=True, exist_ok=True)
        elif not self.directory.is_dir():
            reason = "not a directory" if self.directory.exists() else None
            raise LogNotFoundError(str(self.directory), reason)
        self.clock = clock
        self.auto_create_topics = auto_create_topics
        self.num_partitions = num_partitions
        self._lock = threading.RLock()
        self._topics: dict[str, OpenTopic] = {}
        #: Topics deleted while this log had them open (see _forget): asking for one
        #: again is TopicDeletedError, not "does not exist", until it is created anew.
        self._deleted: set[str] = set()
        self._admin = FileLock(self.directory / ".admin.lock")
        self._closed = False
        self._append_seq = 0
        self._appended = threading.Condition(threading.Lock())
        with self._admin_locked():
            for name in os.listdir(self.directory):
                if name.startswith("~"):
                    shutil.rmtree(self.directory / name, ignore_errors=True)
        self.offsets = GroupOffsets(self)
        self.transactions = TransactionCoordinator(self)
        self._last_expiry_check = clock()
        if (self.directory / ".transactions").is_dir():
            self.transactions.recover(after_crash=True)
        self._maintenance = Maintenance(self, interval_s=maintenance_interval_s)
        if background:
            self._maintenance.start()

    # ------------------------------------------------------------------ admin

    def _admin_locked(self) -> _AdminLock:
        return _AdminLock(self)

    def _topic_dir(self, name: str) -> Path:
        return self.directory / validate_topic_name(name)

    def create_topic(
        self, name: str, partitions: int = 1, *, config: Mapping[str, object] | None = None
    ) -> TopicDescription:
        """Create a topic; TopicExistsError if it is there already."""
        validate_topic_name(name)
        if not isinstance(partitions, int) or partitions < 1:
            raise InvalidConfigError("partitions", partitions, "must be at least 1")
        TopicConfig.parse(config)  # refuse bad keys before anything is created
        with self._admin_locked():
            directory = self._topic_dir(name)
            if (directory / TOPIC_FILE).exists():
                raise TopicExistsError(name)
            directory.mkdir(exist_ok=True)
            for p in range(partitions):
                (directory / str(p)).mkdir(exist_ok=True)
            write_meta(directory, partitions, config or {})
            fsync_dir(self.directory)
        with self._lock:
            self._deleted.discard(name)
        return self.describe_topic(name)

    def delete_topic(self, name: str) -> None:
        with self._admin_locked():
            directory = self._topic_dir(name)
            if not (directory / TOPIC_FILE).exists():
                raise UnknownTopicOrPartitionError(name)
            with self._lock:
                topic = self._topics.pop(name, None)
                if topic is not None:
                    self._deleted.add(name)
            if topic is not None:
                for part in topic.partitions:
                    if part is not None:
                        part.close()
            doomed = self.directory / f"~deleted-{uuid.uuid4().hex}"
            os.replace(directory, doomed)
            fsync_dir(self.directory)
            shutil.rmtree(doomed, ignore_errors=True)
        # After the rename: from here on a commit for the topic is refused
        # (commit_offsets), so none can bring an offset back.
        if name != OFFSETS_TOPIC and (self.directory / OFFSETS_TOPIC / TOPIC_FILE).exists():
            self.offsets.forget_topic(name)

    def list_topics(self, *, include_internal: bool = False) -> list[str]:
        names = [
            n
            for n in os.listdir(self.directory)
            if not n.startswith((".", "~")) and (self.directory / n / TOPIC_FILE).exists()
        ]
        if not include_internal:
            names = [n for n in names if not n.startswith("__")]
        return sorted(names)

    def _topic(self, name: str, *, refresh: bool = False) -> OpenTopic:
        with self._lock:
            if self._closed:
                raise LogClosedError()
            topic = self._topics.get(name)
            if topic is not None and not refresh:
                return topic
            try:
                count, overrides, mtime = read_meta(self._topic_dir(name), name)
            except UnknownTopicOrPartitionError:
                if topic is None and name not in self._deleted:
                    raise
                raise self._forget(name) from None  # it was there: deleted meanwhile
            self._deleted.discard(name)
            config = TopicConfig.parse_stored(overrides, topic=name)
            if topic is None:
                topic = OpenTopic(name, config, count, mtime)
                self._topics[name] = topic
            else:
                topic.config, topic.mtime = config, mtime
                topic.partitions.extend([None] * (count - len(topic.partitions)))
                for part in topic.partitions:
                    if part is not None:
                        part.config = config
            return topic

    def topic_config(self, name: str) -> TopicConfig:
        return self._topic(name, refresh=True).config

    def partition_count(self, name: str) -> int:
        return len(self._topic(name, refresh=True).partitions)

    def create_partitions(self, name: str, total: int) -> None:
        """Grow the topic to `total` partitions (never shrinks, as in Kafka)."""
        with self._admin_locked():
            count, overrides, _ = read_meta(self._topic_dir(name), name)
            if total <= count:
                raise InvalidConfigError(
                    "partitions", total, f"topic {name} already has {count} partitions"
                )
            directory = self._topic_dir(name)
            for p in range(count, total):
                (directory / str(p)).mkdir(exist_ok=True)
            write_meta(directory, total, overrides)
        self._topic(name, refresh=True)

    def alter_topic_config(self, name: str, changes: Mapping[str, object]) -> None:
        """Set (or, with a None value, reset to default) config keys of a topic."""
        with self._admin_locked():
            count, overrides, _ = read_meta(self._topic_dir(name), name)
            merged = {**overrides, **changes}
            merged = {k: v for k, v in merged.items() if v is not None}
            # Refuse bad keys before writing anything: the new values strictly, the
            # saved ones as opening the topic reads them.
            TopicConfig.parse({k: v for k, v in changes.items() if v is not None})
            TopicConfig.parse_stored(merged, topic=name)
            write_meta(self._topic_dir(name), count, merged)
        self._topic(name, refresh=True)

    def describe_topic(self, name: str) -> TopicDescription:
        topic = self._topic(name, refresh=True)
        parts = []
        for p in range(len(topic.partitions)):
            part = self.partition(name, p)
            parts.append(
                PartitionDescription(
                    partition=p,
                    earliest_offset=part.earliest_offset(),
                    latest_offset=part.latest_offset(),
                    size_bytes=part.size_bytes(),
                    segments=len(part.segments),
                )
            )
        return TopicDescription(name=name, config=topic.config.to_dict(), partitions=parts)

    # ------------------------------------------------------------- partitions

    def partition(self, topic: str, partition: int) -> Partition:
        """The open Partition object (opened and recovered on first use)."""
        t = self._topics.get(topic)
        if t is not None and 0 <= partition < len(t.partitions):
            part = t.partitions[partition]
            if part is not None:
                return part
        return self._open_partition(topic, partition)

    def _open_partition(self, topic: str, partition: int) -> Partition:
        try:
            t = self._topic(topic)
        except UnknownTopicOrPartitionError:
            if not self.auto_create_topics:
                raise
            with contextlib.suppress(TopicExistsError):
                self.create_topic(topic, self.num_partitions)
            t = self._topic(topic)
        if not 0 <= partition < len(t.partitions):
            t = self._topic(topic, refresh=True)  # another process may have added some
            if not isinstance(partition, int) or not 0 <= partition < len(t.partitions):
                raise UnknownTopicOrPartitionError(topic, partition)
        with self._lock:
            part = t.partitions[partition]
            if part is None:
                part = Partition(
                    self._topic_dir(topic) / str(partition),
                    topic,
                    partition,
                    t.config,
                    clock=self.clock,
                )
                t.partitions[partition] = part
            return part

    def open_partitions(self) -> list[Partition]:
        with self._lock:
            return [p for t in self._topics.values() for p in t.partitions if p is not None]

    # ---------------------------------------------------------------- records

    def append(
        self,
        topic: str,
        partition: int,
        values: Sequence[bytes | None],
        *,
        keys: Sequence[bytes | None] | None = None,
        timestamps: Sequence[int] | None = None,
        headers: Sequence[Sequence[Header]] | None = None,
        compression: str | None = None,
    ) -> range:
        """Append `values` (with optional parallel keys, timestamps, headers) as one
        batch; return the offsets assigned, in order."""
        part = self.partition(topic, partition)
        codec_name = compression or part.config.compression_type
        codec = CODEC_IDS.get("none" if codec_name == "producer" else codec_name)
        if codec is None:
            raise InvalidConfigError("compression.type", compression, "unknown codec")
        try:
            offsets = part.append(
                values, keys=keys, timestamps=timestamps, headers=headers, codec=codec
            )
        except FileNotFoundError:
            raise self._forget(topic, partition) from None
        self.notify_appended()
        return offsets

    def notify_appended(self) -> None:
        """Wake this process's `wait_for_append` callers (after an append)."""
        with self._appended:
            self._append_seq += 1
            self._appended.notify_all()

    def transactional_producer(
        self,
        transactional_id: str,
        *,
        transaction_timeout_ms: int = DEFAULT_TRANSACTION_TIMEOUT_MS,
    ) -> FileTransactionalProducer:
        """A producer of transactions for `transactional_id` (call its
        `init_transactions()` first; see log.transactions)."""
        return FileTransactionalProducer(
            self,
            self.transactions,
            transactional_id,
            transaction_timeout_ms=transaction_timeout_ms,
        )

    def abort_expired_transactions(self) -> int:
        """Finish decided transactions and abort those past their timeout (the
        coordinator's recovery); how many."""
        self._last_expiry_check = self.clock()
        return self.transactions.recover()

    def last_stable_offset(self, topic: str, partition: int) -> int:
        """The first offset of the partition's oldest open transaction, else its
        log end offset: where read_committed readers stop."""
        return self.partition(topic, partition).last_stable_offset()

    def _forget(self, topic: str, partition: int | None = None) -> TopicDeletedError:
        """A topic deleted by another process (its files vanished under a call): drop
        our handles on it; the error to raise to the caller."""
        with self._lock:
            t = self._topics.pop(topic, None)
            self._deleted.add(topic)
        if t is not None:
            for part in t.partitions:
                if part is not None:
                    part.closed = True
        return TopicDeletedError(topic, partition)

    def read(
        self,
        topic: str,
        partition: int,
        offset: int,
        *,
        max_records: int | None = None,
        max_bytes: int = 1 << 20,
        isolation_level: str = READ_UNCOMMITTED,
    ) -> list[Record]:
        return self._read_with(
            Partition.read, topic, partition, offset, max_records, max_bytes, isolation_level
        )

    def read_values(
        self,
        topic: str,
        partition: int,
        offset: int,
        *,
        max_records: int | None = None,
        max_bytes: int = 1 << 20,
        isolation_level: str = READ_UNCOMMITTED,
    ) -> tuple[list[BatchValues], int]:
        """`read` as batches' values, and the next offset (`Partition.read_values`)."""
        args = (topic, partition, offset, max_records, max_bytes, isolation_level)
        return self._read_with(Partition.read_values, *args)

    def _read_with(
        self,
        reader: Callable[..., _T],
        topic: str,
        partition: int,
        offset: int,
        max_records: int | None,
        max_bytes: int,
        isolation_level: str,
    ) -> _T:
        """One read of a partition by `reader` (records or batches' values): a
        partition another process deleted meanwhile is forgotten, and a read_committed
        read held up by an open transaction ends it if its producer died, even where no
        maintenance thread runs (its timeout, looked for once a second)."""
        part = self.partition(topic, partition)
        try:
            got = reader(
                part,
                offset,
                max_records=max_records,
                max_bytes=max_bytes,
                isolation_level=isolation_level,
            )
        except FileNotFoundError:
            raise self._forget(topic, partition) from None  # deleted by another process
        if (
            isolation_level == READ_COMMITTED
            and part.has_open_transactions()
            and self.clock() - self._last_expiry_check >= _EXPIRY_CHECK_MS
        ):
            self.abort_expired_transactions()
        return got

    def earliest_offset(self, topic: str, partition: int) -> int:
        try:
            return self.partition(topic, partition).earliest_offset()
        except FileNotFoundError:
            raise self._forget(topic, partition) from None

    def latest_offset(self, topic: str, partition: int) -> int:
        try:
            return self.partition(topic, partition).latest_offset()
        except FileNotFoundError:
            raise self._forget(topic, partition) from None

    def offset_for_timestamp(self, topic: str, partition: int, timestamp_ms: int) -> int | None:
        try:
            return self.partition(topic, partition).offset_for_timestamp(timestamp_ms)
        except FileNotFoundError:
            raise self._forget(topic, partition) from None

    def flush(self, topic: str | None = None, partition: int | None = None) -> None:
        """fsync appended data: one partition, one topic's open partitions, or all.

        A topic deleted since it was written to has nothing left to make durable: its
        flush is quiet. Why: a source task fsyncs what it appended before committing
        its source offsets, and the records it appended did reach the log (the
        operator deleted them since); failing the commit would replay them all."""
        if topic is not None and partition is not None:
            try:
                self.partition(topic, partition).flush()
            except FileNotFoundError:
                self._forget(topic, partition)
            except TopicDeletedError:
                pass
            return
        for part in self.open_partitions():
            if topic is None or part.topic == topic:
                try:
                    part.flush()
                except FileNotFoundError:
                    self._forget(part.topic, part.partition)  # nothing left to flush

    # --------------------------------------------------------- consumer groups

    def commit_offsets(
        self, group: str, offsets: Mapping[TopicPartition, OffsetAndMetadata | int]
    ) -> None:
        """Durably record a group's positions. The data partitions are fsynced first,
        so a committed offset never points past data a crash could lose.

        A partition whose topic was deleted (by another process, maybe after its last
        read here) is left out and reported, after the others are committed, with
        TopicDeletedError: an offset into data that is gone would outlive it and skip
        the first records of a topic created again under the same name."""
        gone = [tp for tp in offsets if not (self._topic_dir(tp.topic) / TOPIC_FILE).exists()]
        if gone:
            with self._lock:
                known = set(self._topics) | self._deleted
            for tp in gone:
                if tp.topic not in known:  # never there: a mistake, nothing is committed
                    raise UnknownTopicOrPartitionError(tp.topic, tp.partition)
            offsets = {tp: o for tp, o in offsets.items() if tp not in gone}
        for tp in offsets:
            self.flush(tp.topic, tp.partition)
        if offsets:
            self.offsets.commit(group, offsets)
        if gone:
            raise self._forget(gone[0].topic, gone[0].partition)

    def committed_offsets(
        self, group: str, partitions: Sequence[TopicPartition] | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        return self.offsets.fetch(group, partitions)

    def delete_group(self, group: str) -> None:
        self.offsets.delete_group(group)

    def delete_committed_offsets(self, group: str, partitions: Sequence[TopicPartition]) -> None:
        self.offsets.delete(group, partitions)

    def list_groups(self) -> list[str]:
        return self.offsets.groups()

    def join_group(self, group: str, member_id: str, topics: Sequence[str]) -> FileGroupMember:
        for topic in topics:
            validate_topic_name(topic)
        return FileGroupMember(self.directory, group, member_id, topics, self.partition_count)

    # ---------------------------------------------------------- waiting for data

    def append_sequence(self) -> int:
        """A counter bumped by every append in this process (see wait_for_append)."""
        return self._append_seq

    def wait_for_append(self, after: int, timeout_s: float) -> None:
        """Wait until an append in this process moves the sequence past `after`, or
        `timeout_s` passes (appends by other processes are found by polling)."""
        with self._appended:
            if self._append_seq == after:
                self._appended.wait(timeout_s)

    # ------------------------------------------------------------ maintenance

    def run_maintenance(self) -> dict[str, int]:
        """One pass of retention, compaction and `flush.ms` over every topic."""
        return self._maintenance.run_once()

    def all_partitions(self) -> list[Partition]:
        """Open (if needed) every partition of every topic, internal ones included."""
        out = []
        for name in self.list_topics(include_internal=True):
            try:
                count = self.partition_count(name)
                out.extend(self.partition(name, p) for p in range(count))
            except UnknownTopicOrPartitionError:
                continue  # deleted meanwhile
        return out

    def close(self) -> None:
        self._maintenance.stop()
        with self._lock:
            if self._closed:
                return
            self._closed = True
            topics = list(self._topics.values())
            self._topics.clear()
        for t in topics:
            for part in t.partitions:
                if part is not None:
                    # A topic another process deleted while we had it open: its files
                    # are gone, so there is nothing left to flush (its handles close).
                    with contextlib.suppress(FileNotFoundError):
                        part.close()
        self._admin.close()
        self.transactions.close()

    def __enter__(self) -> FileLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"FileLog({str(self.directory)!r})"


class _AdminLock:
    __slots__ = ("log",)

    def __init__(self, log: FileLog) -> None:
        self.log = log

    def __enter__(self) -> None:
        self.log._lock.acquire()
        try:
            self.log._admin.acquire(30.0)
        except BaseException:
            self.log._lock.release()
            raise

    def __exit__(self, *exc: object) -> None:
        self.log._admin.release()
        self.log._lock.release()
