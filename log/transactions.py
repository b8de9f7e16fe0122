"""The transactional producer handle: what the worker's exactly-once source support
uses, in the shape of Kafka's transactional Producer, so that FileLog and KafkaLog
offer the same calls (the `log.api.TransactionalProducer` protocol).
`TransactionalProducerBase` holds the lifecycle both share; `FileTransactionalProducer`
is FileLog's (log.kafka.transactions has KafkaLog's).

Lifecycle (numbered as Kafka's producer API):
  1. `init_transactions()`: the coordinator gives the transactional.id a new epoch;
     every older producer of the id is fenced, and what it left is finished (a
     decided transaction completed, an open one aborted).
  2. `begin_transaction()`.
  3. `append(topic, partition, values, ...)` to any partitions of any topics (the
     offsets topics included), and `send_offsets_to_transaction(group, offsets)`
     for consumer-group offsets that must count only if the transaction commits.
     A partition is added to the transaction at the coordinator before its first
     batch is written there; on FileLog, the first addition of a transaction
     brings the partitions the previous one wrote along (one durable coordinator
     write where a source task's data and offsets partitions took two).
  4. `commit_transaction()`: the data is fsynced (with the previous transaction's
     markers) side by side with the coordinator's PREPARE record, then its
     two-phase end writes COMMIT markers (log.txn_coordinator); or
     `abort_transaction()`.
     Either way the handle is ready for step 2 again.

A ProducerFencedError (a newer producer of the id, or the coordinator aborted a
transaction that outlived `transaction.timeout.ms`) is final: nothing this handle
wrote in the open transaction becomes visible; close it. One handle is used by one
thread at a time, as Kafka's producer's transactional calls are.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from log.batch import ProducerSection
from log.compression import CODEC_IDS
from log.errors import (
    InvalidConfigError,
    InvalidTxnStateError,
    LogClosedError,
    ProducerFencedError,
)
from log.offsets import OFFSETS_TOPIC, encode_commit
from log.records import Header, OffsetAndMetadata, TopicPartition

if TYPE_CHECKING:
    from log.filelog import FileLog
    from log.txn_coordinator import TransactionCoordinator

__all__ = [
    "DEFAULT_TRANSACTION_TIMEOUT_MS",
    "FileTransactionalProducer",
    "TransactionalProducerBase",
]

DEFAULT_TRANSACTION_TIMEOUT_MS = 60_000  # Kafka's transaction.timeout.ms default

_T = TypeVar("_T")
_UNINITIALIZED = "Uninitialized"
_READY = "Ready"
_IN_TRANSACTION = "InTransaction"
_FENCED = "Fenced"
_CLOSED = "Closed"


class TransactionalProducerBase(ABC):
    """The lifecycle of the module docstring, for any backend: the states, the order
    of calls (InvalidTxnStateError otherwise), and a fenced producer staying fenced.
    A backend writes the hooks (`_init`, `_append`, `_send_offsets`, `_end`)."""

    def __init__(self, transactional_id: str, transaction_timeout_ms: int) -> None:
        if not transactional_id:
            raise InvalidConfigError("transactional.id", transactional_id, "must not be empty")
        if transaction_timeout_ms < 1:
            raise InvalidConfigError(
                "transaction.timeout.ms", transaction_timeout_ms, "must be at least 1"
            )
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self._state = _UNINITIALIZED

    def _expect(self, state: str, action: str) -> None:
        if self._state == _CLOSED:
            raise LogClosedError(f"transactional producer {self.transactional_id!r}")
        if self._state != state:
            raise InvalidTxnStateError(self.transactional_id, self._state, action)

    def _guarded(self, call: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """Run a hook; a ProducerFencedError leaves the handle fenced for good."""
        try:
            return call(*args, **kwargs)
        except ProducerFencedError:
            self._state = _FENCED
            raise

    def init_transactions(self) -> None:
        """Step 1: fence older producers of the id and take its new epoch."""
        if self._state == _CLOSED:
            raise LogClosedError(f"transactional producer {self.transactional_id!r}")
        if self._state not in (_UNINITIALIZED, _READY):
            raise InvalidTxnStateError(self.transactional_id, self._state, "init transactions")
        self._init()
        self._state = _READY

    def begin_transaction(self) -> None:
        """Step 2."""
        self._expect(_READY, "begin a transaction")
        self._guarded(self._begin)
        self._state = _IN_TRANSACTION

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
        """Step 3: one batch in the transaction; the offsets it got (visible to
        read_committed readers once the transaction commits)."""
        self._expect(_IN_TRANSACTION, "append")
        return self._guarded(
            self._append,
            topic,
            partition,
            values,
            keys=keys,
            timestamps=timestamps,
            headers=headers,
            compression=compression,
        )

    def send_offsets_to_transaction(
        self, group: str, offsets: Mapping[TopicPartition, OffsetAndMetadata | int]
    ) -> None:
        """Step 3: commit a consumer group's offsets inside the transaction (Kafka's
        sendOffsetsToTransaction): they count only if the transaction commits."""
        self._expect(_IN_TRANSACTION, "send offsets")
        if offsets:
            self._guarded(self._send_offsets, group, offsets)

    def commit_transaction(self) -> None:
        """Step 4: the data made durable, then the commit, in every partition."""
        self._expect(_IN_TRANSACTION, "commit")
        self._guarded(self._end, commit=True)
        self._state = _READY

    def abort_transaction(self) -> None:
        """Step 4, the other way: nothing of the transaction becomes visible."""
        self._expect(_IN_TRANSACTION, "abort")
        self._guarded(self._end, commit=False)
        self._state = _READY

    def close(self) -> None:
        """Close the handle, aborting an open transaction (as Kafka's producer does
        on close) so that read_committed readers need not wait for its timeout. A
        process that dies instead leaves it to the coordinator: aborted when a new
        producer of the id starts or `transaction.timeout.ms` passes."""
        if self._state == _IN_TRANSACTION:
            # Fenced: a newer producer or the coordinator has aborted it already.
            with contextlib.suppress(ProducerFencedError):
                self._end(commit=False)
        if self._state != _CLOSED:
            self._state = _CLOSED
            self._close()

    def __enter__(self) -> TransactionalProducerBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @abstractmethod
    def _init(self) -> None: ...

    @abstractmethod
    def _append(
        self,
        topic: str,
        partition: int,
        values: Sequence[bytes | None],
        *,
        keys: Sequence[bytes | None] | None,
        timestamps: Sequence[int] | None,
        headers: Sequence[Sequence[Header]] | None,
        compression: str | None,
    ) -> range: ...

    @abstractmethod
    def _send_offsets(
        self, group: str, offsets: Mapping[TopicPartition, OffsetAndMetadata | int]
    ) -> None: ...

    @abstractmethod
    def _end(self, *, commit: bool) -> None: ...

    def _begin(self) -> None:
        """Start a transaction in the backend (nothing, by default: FileLog's starts
        at its first partition)."""

    def _close(self) -> None:
        """Release what the backend holds (nothing, by default)."""


class FileTransactionalProducer(TransactionalProducerBase):
    """A producer of transactions on a FileLog: the coordinator's calls and the
    partitions' transactional appends (see log.txn_coordinator)."""

    def __init__(
        self,
        log: FileLog,
        coordinator: TransactionCoordinator,
        transactional_id: str,
        *,
        transaction_timeout_ms: int = DEFAULT_TRANSACTION_TIMEOUT_MS,
    ) -> None:
        super().__init__(transactional_id, transaction_timeout_ms)
        self._log = log
        self._coordinator = coordinator
        self._producer = ProducerSection(-1, -1, -1)
        #: Written (or tried) in the open transaction: PREPARE names them.
        self._partitions: set[tuple[str, int]] = set()
        #: Added at the coordinator in the open transaction (a superset).
        self._added: set[tuple[str, int]] = set()
        #: What the previous transaction wrote: added with the next one's first.
        self._previous: set[tuple[str, int]] = set()

    @property
    def producer_id(self) -> int:
        return self._producer.producer_id

    @property
    def epoch(self) -> int:
        return self._producer.producer_epoch

    def _init(self) -> None:
        meta = self._coordinator.init_producer(self.transactional_id, self.transaction_timeout_ms)
        self._producer = meta.producer
        self._partitions, self._added, self._previous = set(), set(), set()

    def _append(
        self,
        topic: str,
        partition: int,
        values: Sequence[bytes | None],
        *,
        keys: Sequence[bytes | None] | None,
        timestamps: Sequence[int] | None,
        headers: Sequence[Sequence[Header]] | None,
        compression: str | None,
    ) -> range:
        part = self._log.partition(topic, partition)
        codec_name = compression or part.config.compression_type
        codec = CODEC_IDS.get("none" if codec_name == "producer" else codec_name)
        if codec is None:
            raise InvalidConfigError("compression.type", compression, "unknown codec")
        tp = (topic, partition)
        if tp not in self._added:
            # Added at the coordinator before the first batch lands there; the
            # previous transaction's partitions come along (module docstring: a
            # partition added but not written costs nothing on commit).
            adding = [tp, *sorted(self._previous - self._added - {tp})]
            pid, epoch = self._producer.producer_id, self._producer.producer_epoch
            self._coordinator.add_partitions(self.transactional_id, pid, epoch, adding)
            self._added.update(adding)
        # Before the write: a batch that landed though the call failed still gets
        # its marker (where nothing was written, the marker step finds nothing).
        self._partitions.add(tp)
        offsets = part.append_transactional(
            self._producer, values, keys=keys, timestamps=timestamps, headers=headers, codec=codec
        )
        self._log.notify_appended()
        return offsets

    def _send_offsets(
        self, group: str, offsets: Mapping[TopicPartition, OffsetAndMetadata | int]
    ) -> None:
        self._log.offsets.ensure_topic()
        keys, values = encode_commit(group, offsets, self._log.clock())
        self._append(
            OFFSETS_TOPIC, 0, values, keys=keys, timestamps=None, headers=None, compression=None
        )

    def _end(self, *, commit: bool) -> None:
        # The data is made durable side by side with PREPARE, with the previous
        # transaction's markers (the coordinator left them unsynced, to be made
        # durable with this: one wait on the disk for all, log.txn_coordinator).
        sync = self._partitions | self._previous if commit else set()
        pid, epoch = self._producer.producer_id, self._producer.producer_epoch
        written = self._partitions
        self._coordinator.end_transaction(
            self.transactional_id, pid, epoch, commit=commit, written=written, sync=sync
        )
        self._previous, self._partitions, self._added = written, set(), set()
