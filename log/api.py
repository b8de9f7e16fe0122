"""The interface every log backend implements: the embedded `FileLog` today, a Kafka
cluster through confluent-kafka later. Producers, consumers, the Connect runtime and
the CLI call only these methods, so switching backends changes no caller.

Offsets follow Kafka: `latest_offset` is the log end offset (the offset the next
record will get); reading at it returns nothing; reading past it or before the log
start raises OffsetOutOfRangeError.

Transactions follow Kafka's model (docs/log-format.md, "Transactions"):
`transactional_producer(id)` hands out a `TransactionalProducer`; `read` takes
`isolation_level` ("read_uncommitted", the default as in Kafka, or "read_committed":
committed records only, below `last_stable_offset`). Neither level returns control
records; a read whose last batches were skipped returns a list with `next_offset`
(log.records.Fetched), where the next read starts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from log.group import GroupMember
from log.records import Header, OffsetAndMetadata, Record, TopicDescription, TopicPartition

__all__ = ["Log", "TransactionalProducer"]


@runtime_checkable
class TransactionalProducer(Protocol):
    """A producer of transactions for one transactional.id, as Kafka's transactional
    producer (log.transactions has the lifecycle, numbered). Raises
    ProducerFencedError once a newer producer of the id exists (final: close it),
    InvalidTxnStateError for a call out of order."""

    transactional_id: str

    def init_transactions(self) -> None: ...

    def begin_transaction(self) -> None: ...

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
    ) -> range: ...

    def send_offsets_to_transaction(
        self, group: str, offsets: Mapping[TopicPartition, OffsetAndMetadata | int]
    ) -> None: ...

    def commit_transaction(self) -> None: ...

    def abort_transaction(self) -> None: ...

    def close(self) -> None: ...


@runtime_checkable
class Log(Protocol):
    # -- topics ---------------------------------------------------------------
    def create_topic(
        self, name: str, partitions: int = 1, *, config: Mapping[str, object] | None = None
    ) -> TopicDescription: ...

    def delete_topic(self, name: str) -> None: ...

    def list_topics(self, *, include_internal: bool = False) -> list[str]: ...

    def describe_topic(self, name: str) -> TopicDescription: ...

    def partition_count(self, name: str) -> int: ...

    def create_partitions(self, name: str, total: int) -> None: ...

    def alter_topic_config(self, name: str, changes: Mapping[str, object]) -> None: ...

    # -- records --------------------------------------------------------------
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
    ) -> range: ...

    def read(
        self,
        topic: str,
        partition: int,
        offset: int,
        *,
        max_records: int | None = None,
        max_bytes: int = 1 << 20,
        isolation_level: str = "read_uncommitted",
    ) -> list[Record]: ...

    def last_stable_offset(self, topic: str, partition: int) -> int: ...

    def earliest_offset(self, topic: str, partition: int) -> int: ...

    def latest_offset(self, topic: str, partition: int) -> int: ...

    def offset_for_timestamp(self, topic: str, partition: int, timestamp_ms: int) -> int | None: ...

    def flush(self, topic: str | None = None, partition: int | None = None) -> None: ...

    # -- transactions ---------------------------------------------------------
    def transactional_producer(
        self, transactional_id: str, *, transaction_timeout_ms: int = 60_000
    ) -> TransactionalProducer: ...

    # -- consumer groups ------------------------------------------------------
    def commit_offsets(
        self, group: str, offsets: Mapping[TopicPartition, OffsetAndMetadata | int]
    ) -> None: ...

    def committed_offsets(
        self, group: str, partitions: Sequence[TopicPartition] | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata]: ...

    def list_groups(self) -> list[str]: ...

    def delete_group(self, group: str) -> None: ...

    def delete_committed_offsets(
        self, group: str, partitions: Sequence[TopicPartition]
    ) -> None: ...

    def join_group(self, group: str, member_id: str, topics: Sequence[str]) -> GroupMember: ...

    # -- waiting for data -----------------------------------------------------
    def append_sequence(self) -> int: ...

    def wait_for_append(self, after: int, timeout_s: float) -> None: ...

    def close(self) -> None: ...
