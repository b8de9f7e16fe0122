"""KafkaLog: the `Log` interface on an Apache Kafka cluster, through confluent-kafka.

What maps to what:

  topics, partitions    Kafka topics; counts and configs as `log.kafka.topics` and
                        `log.kafka.registry` describe (a cluster without an admin
                        API, like librdkafka's mock, auto-creates with its default
                        count; the registry keeps the count Tributary asked for)
  append                an idempotent `acks=all` produce of the batch, returning
                        only after every record's delivery report (`log.kafka.writer`);
                        `appender` gives one that waits for a broker without limit
                        until its caller stops (a source task's, as Kafka Connect's)
  read, offsets         an assigned consumer per partition, no group
                        (`log.kafka.reader`); earliest/latest are the watermarks;
                        read_uncommitted by default (Kafka's Java default; not
                        librdkafka's), read_committed through a second pool of
                        readers, whose high watermark is the last stable offset
  transactions          a transactional confluent-kafka Producer per handle
                        (`log.kafka.transactions`)
  commit/committed      OffsetCommit/OffsetFetch to the group coordinator
                        (`log.kafka.groups`)
  join_group            Kafka's group protocol (`log.kafka.groups.KafkaGroupMember`)
  flush                 nothing left to do: `append` returns after acks=all
  wait_for_append       appends of this process wake waiters at once; others are
                        found by the caller's polling, as with FileLog across processes

Keys land in partitions by the same murmur2 as FileLog and Kafka's Java clients,
because the partition is chosen by the caller (`log.Producer`) and passed explicitly.
Every method may be called from any thread.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping, Sequence

import confluent_kafka
from confluent_kafka.admin import AdminClient

from log.compression import CODEC_IDS
from log.config import TopicConfig
from log.errors import (
    InvalidConfigError,
    InvalidRecordError,
    LogClosedError,
    TopicExistsError,
    UnknownTopicOrPartitionError,
)
from log.kafka.clients import ClientConfig, operation_error, probe_cluster
from log.kafka.errors import AdminUnavailableError
from log.kafka.groups import GroupOffsets, KafkaGroupMember
from log.kafka.reader import ReaderPool, offset_ranges
from log.kafka.registry import REGISTRY_TOPIC, TopicRegistry
from log.kafka.topics import TopicAdmin
from log.kafka.transactions import KafkaTransactionalProducer
from log.kafka.writer import Writer
from log.names import validate_topic_name
from log.records import (
    Header,
    OffsetAndMetadata,
    PartitionDescription,
    Record,
    TopicDescription,
    TopicPartition,
)

__all__ = ["KafkaLog"]


class KafkaLog:
    """A Kafka cluster behind the `Log` interface (see the module docstring).

    `bootstrap_servers` is the `bootstrap.servers` list; `client_config` adds
    librdkafka settings to every client (security, timeouts), `member_config` to the
    consumers that join groups (sink tasks: session.timeout.ms, heartbeat.interval.ms);
    `timeout_s` bounds each request. Partition counts: a topic created here has the
    count asked for; if the cluster cannot create topics (no admin API) and auto-creates with more
    partitions, only the first ones are used and reported; with fewer,
    `create_topic` raises InvalidConfigError. A topic that already exists keeps its
    count (`partition_count` tells it), and `create_topic` raises TopicExistsError.
    """

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str],
        *,
        client_config: Mapping[str, object] | None = None,
        member_config: Mapping[str, object] | None = None,
        timeout_s: float = 10.0,
    ) -> None:
        if not isinstance(bootstrap_servers, str):
            bootstrap_servers = ",".join(bootstrap_servers)
        self.bootstrap_servers = bootstrap_servers
        self._config = ClientConfig(
            bootstrap_servers,
            dict(client_config or {}),
            timeout_s,
            dict(member_config or {}),
        )
        self._admin_client = AdminClient(self._config.admin())
        self.cluster = probe_cluster(self._admin_client, timeout_s)
        self._closed = False
        self._lock = threading.Lock()
        self._append_seq = 0
        self._appended = threading.Condition(threading.Lock())
        self._readers = ReaderPool(self._config)
        self._committed_readers: ReaderPool | None = None  # made on first use
        self._writer = Writer(self._config)
        self._groups = GroupOffsets(self._config)
        self._registry_ready = False
        self._registry = TopicRegistry(
            read=lambda offset: self._read(REGISTRY_TOPIC, 0, offset, None, 4 << 20),
            append=self._registry_append,
            watermarks=self._registry_watermarks,
        )
        self._topics = TopicAdmin(self._config, self._admin_client, self.cluster, self._registry)

    # -------------------------------------------------------------- registry

    def _ensure_registry(self) -> None:
        """Make the registry topic on first use (compacted, one partition where the
        cluster lets us choose)."""
        if self._registry_ready:
            return
        with self._lock:
            if self._registry_ready:
                return
            if self._topics.broker_count(REGISTRY_TOPIC, refresh=True) is None:
                if self.cluster.has_admin:
                    # Another client (a Spark writer's other task) may make it first.
                    with contextlib.suppress(TopicExistsError):
                        self._topics._create_with_admin(
                            REGISTRY_TOPIC, 1, {"cleanup.policy": "compact"}
                        )
                else:
                    self._topics._auto_create(REGISTRY_TOPIC)
            self._registry_ready = True

    def _registry_watermarks(self) -> tuple[int, int]:
        self._ensure_registry()
        with self._readers.use(REGISTRY_TOPIC, 0) as reader:
            return reader.watermarks()

    def _registry_append(self, keys: list[bytes | None], values: list[bytes | None]) -> None:
        self._ensure_registry()
        self._writer.append(
            REGISTRY_TOPIC, 0, values, keys=keys, timestamps=None, headers=None, codec="none"
        )

    def _check_open(self) -> None:
        if self._closed:
            raise LogClosedError()

    # ---------------------------------------------------------------- topics

    def create_topic(
        self, name: str, partitions: int = 1, *, config: Mapping[str, object] | None = None
    ) -> TopicDescription:
        """Create a topic (see the class docstring for what the count means)."""
        self._check_open()
        validate_topic_name(name)
        self._ensure_registry()
        self._topics.create(name, partitions, config)
        return self.describe_topic(name)

    def delete_topic(self, name: str) -> None:
        self._check_open()
        self._topics.delete(name)
        for pool in (self._readers, self._committed_readers):
            if pool is not None:
                pool.forget(name)

    def list_topics(self, *, include_internal: bool = False) -> list[str]:
        self._check_open()
        names = [n for n in self._topics.broker_counts() if n != REGISTRY_TOPIC]
        if not include_internal:
            names = [n for n in names if not n.startswith("__")]
        return sorted(names)

    def partition_count(self, name: str) -> int:
        self._check_open()
        self._ensure_registry()
        return self._topics.partition_count(name)

    def topic_config(self, name: str) -> TopicConfig:
        """The config Tributary recorded for the topic (defaults when none)."""
        self._check_open()
        self.partition_count(name)
        return self._topics.topic_config(name)

    def describe_topic(self, name: str) -> TopicDescription:
        """Count, config and offsets. Sizes and segments are the broker's business
        (DescribeLogDirs) and are reported as 0. The offsets come in ListOffsets rounds
        (`offset_ranges`). Why: a watermarks request per partition, each through a
        reader of its own, took 0.5-2 s for a 25-partition topic on the real broker,
        and `create_topic` answers with this description (a fresh cluster's offsets
        topic, each time a worker makes it)."""
        self._check_open()
        self._ensure_registry()
        count = self._topics.partition_count(name, refresh=True)
        ranges = self.offset_ranges(name, range(count))
        parts = [
            PartitionDescription(p, low, high, size_bytes=0, segments=0)
            for p, (low, high) in sorted(ranges.items())
        ]
        return TopicDescription(name, self._topics.topic_config(name).to_dict(), parts)

    def create_partitions(self, name: str, total: int) -> None:
        self._check_open()
        self._ensure_registry()
        self._topics.create_partitions(name, total)

    def alter_topic_config(self, name: str, changes: Mapping[str, object]) -> None:
        self._check_open()
        self._ensure_registry()
        self._topics.alter_config(name, changes)

    def _check_partition(self, topic: str, partition: int) -> None:
        count = self.partition_count(topic)
        if not isinstance(partition, int) or not 0 <= partition < count:
            count = self._topics.partition_count(topic, refresh=True)  # grown meanwhile?
            if not isinstance(partition, int) or not 0 <= partition < count:
                raise UnknownTopicOrPartitionError(topic, partition)

    # --------------------------------------------------------------- records

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
        """Produce `values` to one partition; return their offsets once every record
        is acknowledged (see `log.kafka.writer`)."""
        return self._append(topic, partition, values, keys, timestamps, headers, compression)

    def appender(
        self, *, delivery_timeout_ms: int = 0, stop: threading.Event | None = None
    ) -> Callable[..., range]:
        """`append`, with appends that wait `delivery_timeout_ms` for a broker (0: no
        limit, as Kafka Connect's source producers: delivery.timeout.ms and max.block.ms
        at their maximum) instead of the client config's, until `stop` is set: then
        an append gives up once no delivery report has come for a second, with
        KafkaUnavailableError (see `log.kafka.writer`)."""

        def append(
            topic: str,
            partition: int,
            values: Sequence[bytes | None],
            *,
            keys: Sequence[bytes | None] | None = None,
            timestamps: Sequence[int] | None = None,
            headers: Sequence[Sequence[Header]] | None = None,
            compression: str | None = None,
        ) -> range:
            return self._append(
                topic,
                partition,
                values,
                keys,
                timestamps,
                headers,
                compression,
                delivery_timeout_ms=delivery_timeout_ms,
                stop=stop,
            )

        return append

    def _append(
        self,
        topic: str,
        partition: int,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None,
        timestamps: Sequence[int] | None,
        headers: Sequence[Sequence[Header]] | None,
        compression: str | None,
        *,
        delivery_timeout_ms: int | None = None,
        stop: threading.Event | None = None,
    ) -> range:
        self._check_open()
        self._check_partition(topic, partition)
        config = self._topics.topic_config(topic)
        codec = compression or config.compression_type
        codec = "none" if codec == "producer" else codec
        if codec not in CODEC_IDS:
            raise InvalidConfigError("compression.type", compression, "unknown codec")
        if config.compacted and (keys is None or any(k is None for k in keys)):
            raise InvalidRecordError(topic, partition, "a compacted topic needs a key per record")
        # the longest value and key together first, in C: no record is looked at in
        # Python unless one might be too large
        longest = max(map(len, filter(None, values)), default=0)
        if keys is not None:
            longest += max(map(len, filter(None, keys)), default=0)
        for i, value in enumerate(values if longest > config.max_message_bytes else ()):
            size = len(value or b"") + len((keys[i] if keys is not None else None) or b"")
            if size > config.max_message_bytes:
                raise InvalidRecordError(
                    topic,
                    partition,
                    f"a record of {size} bytes exceeds "
                    f"max.message.bytes={config.max_message_bytes}",
                )
        offsets = self._writer.append(
            topic,
            partition,
            values,
            keys=keys,
            timestamps=timestamps,
            headers=headers,
            codec=codec,
            delivery_timeout_ms=delivery_timeout_ms,
            stop=stop,
        )
        with self._appended:
            self._append_seq += 1
            self._appended.notify_all()
        return offsets

    def read(
        self,
        topic: str,
        partition: int,
        offset: int,
        *,
        max_records: int | None = None,
        max_bytes: int = 1 << 20,
        isolation_level: str = "read_uncommitted",
    ) -> list[Record]:
        self._check_open()
        self._check_partition(topic, partition)
        pool = self._pool(isolation_level)
        return self._read(topic, partition, offset, max_records, max_bytes, pool)

    def prepare_appends(self) -> None:
        """Make the producer of plain appends (no compression, the client config's
        delivery timeout) now, so that its idempotence handshake with the cluster
        (InitProducerId: about 0.5 s on a real broker) runs while the caller does
        other things. Why: a worker's first append (its join of the group) waited
        for it after replaying its tables; the herder calls this before the replays."""
        self._check_open()
        timeout_ms = self._config.delivery_floor(int(self._config.delivery_timeout_s * 1000))
        self._writer._producer("none", timeout_ms)

    def _pool(self, isolation_level: str) -> ReaderPool:
        if isolation_level == "read_uncommitted":
            return self._readers
        if isolation_level != "read_committed":
            raise ValueError(f"unknown isolation level {isolation_level!r}")
        with self._lock:
            if self._committed_readers is None:
                self._committed_readers = ReaderPool(self._config, isolation_level="read_committed")
            return self._committed_readers

    def last_stable_offset(self, topic: str, partition: int) -> int:
        """The partition's last stable offset: the high watermark a read_committed
        reader is given (the first offset of the oldest open transaction, or the
        log end)."""
        self._check_open()
        self._check_partition(topic, partition)
        return self._watermarks(topic, partition, self._pool("read_committed"))[1]

    def transactional_producer(
        self,
        transactional_id: str,
        *,
        transaction_timeout_ms: int = 60_000,
        compression: str = "none",
    ) -> KafkaTransactionalProducer:
        """A producer of transactions for `transactional_id` (call its
        `init_transactions()` first; see log.kafka.transactions)."""
        self._check_open()
        return KafkaTransactionalProducer(
            self._config,
            transactional_id,
            transaction_timeout_ms=transaction_timeout_ms,
            compression=compression,
        )

    def _read(
        self,
        topic: str,
        partition: int,
        offset: int,
        max_records: int | None,
        max_bytes: int,
        pool: ReaderPool | None = None,
    ) -> list[Record]:
        with (pool or self._readers).use(topic, partition) as reader:
            return reader.read(offset, max_records, max_bytes)

    def _watermarks(
        self, topic: str, partition: int, pool: ReaderPool | None = None
    ) -> tuple[int, int]:
        with (pool or self._readers).use(topic, partition) as reader:
            return reader.watermarks()

    def earliest_offset(self, topic: str, partition: int) -> int:
        self._check_open()
        self._check_partition(topic, partition)
        return self._watermarks(topic, partition)[0]

    def latest_offset(self, topic: str, partition: int) -> int:
        self._check_open()
        self._check_partition(topic, partition)
        return self._watermarks(topic, partition)[1]

    def offset_ranges(
        self, topic: str, partitions: Sequence[int] | None = None
    ) -> dict[int, tuple[int, int]]:
        """(earliest, latest) of each of `partitions` (default: all) in one ListOffsets
        round where the cluster has the admin API, else (and for any partition the
        round did not answer) one partition at a time (`log.kafka.reader`). Why: a
        table replays many partitions at once (a worker's start, `LogTable.refresh`)."""
        self._check_open()
        count = self.partition_count(topic)
        chosen = list(range(count) if partitions is None else partitions)
        for p in chosen:
            if not isinstance(p, int) or not 0 <= p < count:
                self._check_partition(topic, p)  # grown meanwhile, or unknown
        found: dict[int, tuple[int, int]] = {}
        if self.cluster.has_admin and len(chosen) > 1:  # one: one watermarks request
            found = offset_ranges(
                self._admin_client,
                topic,
                chosen,
                timeout_s=self._config.timeout_s,
                closed=lambda: self._closed,
            )
        for p in chosen:
            if p not in found:
                found[p] = self._watermarks(topic, p)
        return found

    def offset_for_timestamp(self, topic: str, partition: int, timestamp_ms: int) -> int | None:
        """The first offset whose timestamp is ≥ `timestamp_ms` (Kafka's ListOffsets),
        or None. The librdkafka mock ignores the timestamp and always answers "none";
        a "none" that the last record contradicts is therefore checked by a scan."""
        self._check_open()
        self._check_partition(topic, partition)
        tp = confluent_kafka.TopicPartition(topic, partition, timestamp_ms)
        with self._readers.use(topic, partition) as reader:
            consumer = reader._consumer
            try:
                (answer,) = consumer.offsets_for_times([tp], timeout=self._config.timeout_s)
            except confluent_kafka.KafkaException as exc:
                raise operation_error(f"offset for time in {topic}-{partition}", exc) from None
        if answer.offset >= 0:
            return answer.offset
        low, high = self._watermarks(topic, partition)
        if high == low:
            return None
        last = self._read(topic, partition, high - 1, None, 1 << 20)
        if not last or max(r.timestamp for r in last) < timestamp_ms:
            return None
        position = low
        while position < high:
            records = self._read(topic, partition, position, None, 4 << 20)
            for record in records:
                if record.timestamp >= timestamp_ms:
                    return record.offset
            if not records:
                break
            position = records[-1].offset + 1
        return None

    def flush(self, topic: str | None = None, partition: int | None = None) -> None:
        """Nothing to do: `append` returned after every replica acknowledged."""
        self._check_open()

    # ------------------------------------------------------- consumer groups

    def commit_offsets(
        self, group: str, offsets: Mapping[TopicPartition, OffsetAndMetadata | int]
    ) -> None:
        self._check_open()
        self._groups.commit(group, offsets)

    def committed_offsets(
        self, group: str, partitions: Sequence[TopicPartition] | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """The group's committed offsets; without `partitions`, those of every
        partition of every topic (Tributary's partition counts)."""
        self._check_open()
        if partitions is None:
            partitions = []
            for name in self.list_topics():
                try:
                    count = self.partition_count(name)
                except UnknownTopicOrPartitionError:
                    continue
                partitions.extend(TopicPartition(name, p) for p in range(count))
        return self._groups.fetch(group, partitions)

    def list_groups(self) -> list[str]:
        self._check_open()
        if not self.cluster.has_admin:
            raise AdminUnavailableError("list groups", self.bootstrap_servers)
        future = self._admin_client.list_consumer_groups(request_timeout=self._config.timeout_s)
        try:
            result = future.result(timeout=self._config.timeout_s + 1)
        except confluent_kafka.KafkaException as exc:
            raise operation_error("list groups", exc) from None
        return sorted(g.group_id for g in result.valid)

    def delete_group(self, group: str) -> None:
        self._check_open()
        if not self.cluster.has_admin:
            raise AdminUnavailableError(f"delete group {group}", self.bootstrap_servers)
        self._groups.forget(group)
        future = self._admin_client.delete_consumer_groups(
            [group], request_timeout=self._config.timeout_s
        )[group]
        try:
            future.result(timeout=self._config.timeout_s + 1)
        except confluent_kafka.KafkaException as exc:
            raise operation_error(f"delete group {group}", exc) from None

    def delete_committed_offsets(self, group: str, partitions: Sequence[TopicPartition]) -> None:
        """confluent-kafka has no OffsetDelete: forgetting every committed offset of the
        group deletes the group; forgetting some of them is refused."""
        self._check_open()
        committed = self.committed_offsets(group)
        if set(committed) - set(partitions):
            raise AdminUnavailableError(
                f"delete some committed offsets of group {group}", self.bootstrap_servers
            )
        if committed:
            self.delete_group(group)

    def join_group(self, group: str, member_id: str, topics: Sequence[str]) -> KafkaGroupMember:
        self._check_open()
        for topic in topics:
            validate_topic_name(topic)
        member = KafkaGroupMember(
            self._config,
            group,
            member_id,
            topics,
            self.partition_count,
            on_leave=self._groups.remove_member,
        )
        self._groups.add_member(member)
        return member

    # ------------------------------------------------------ waiting for data

    def append_sequence(self) -> int:
        return self._append_seq

    def wait_for_append(self, after: int, timeout_s: float) -> None:
        with self._appended:
            if self._append_seq == after:
                self._appended.wait(timeout_s)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._writer.close()
        self._groups.close()
        self._readers.close()
        if self._committed_readers is not None:
            self._committed_readers.close()

    def __enter__(self) -> KafkaLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"KafkaLog({self.bootstrap_servers!r})"
