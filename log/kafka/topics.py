"""Topic administration on Kafka, with and without the cluster's admin API.

`create_topic` (numbered as in `TopicAdmin.create`):
  1. Validate the name, the count and the config keys before anything is sent.
  2. A topic the broker already has is TopicExistsError, registered or not: callers
     that only need the topic to exist (the runtime's stores) catch it and use
     `partition_count`, which is the broker's count for a topic Tributary did not
     register.
  3. With an admin API: CreateTopics with the count and the config overrides (so an
     internal topic is created with `cleanup.policy=compact`), then wait until the
     metadata shows it.
  4. Without one (librdkafka's mock cluster): a metadata request that lets the broker
     auto-create the topic. It gets the broker's default count (4 on the mock). If
     that is fewer than asked, InvalidConfigError names the count the broker gave;
     if more, the extra partitions stay unused (see `log.kafka.registry`). The
     config is recorded but the broker applies its own defaults (the mock neither
     compacts nor deletes).
  5. Record the count and config in the topic registry.

`alter_config` sends only the keys that change, with IncrementalAlterConfigs (SET, or
DELETE for a key reset to its default): the older AlterConfigs replaced a topic's whole
config, so a key set by someone else between our read and our write was lost, and
confluent-kafka deprecates it. Values go to the broker in Kafka's spelling
(`_broker_config`); the registry keeps Tributary's.

`delete_topic`, growing a topic past the broker's count, listing and deleting groups
need the admin API and raise AdminUnavailableError without it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping

import confluent_kafka
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
)

from log.config import TopicConfig
from log.errors import InvalidConfigError, TopicExistsError, UnknownTopicOrPartitionError
from log.kafka.clients import ClientConfig, ClusterInfo, operation_error
from log.kafka.errors import AdminUnavailableError, KafkaOperationError
from log.kafka.registry import TopicRegistry
from log.names import validate_topic_name

__all__ = ["TopicAdmin"]

_EXISTS = confluent_kafka.KafkaError.TOPIC_ALREADY_EXISTS

#: Values Tributary spells differently from a Kafka broker, per key. Why: FileLog's
#: `compression.type=none` (the codec's name in the batch format) is `uncompressed` to
#: a broker, which refuses `none` with INVALID_CONFIG.
_BROKER_VALUES: dict[str, dict[str, str]] = {"compression.type": {"none": "uncompressed"}}


def _broker_value(key: str, value: object) -> str:
    text = str(value)
    return _BROKER_VALUES.get(key, {}).get(text, text)


def _broker_config(config: Mapping[str, object]) -> dict[str, str]:
    """A topic config as a broker takes it: strings, in Kafka's spelling."""
    return {k: _broker_value(k, v) for k, v in config.items()}


class TopicAdmin:
    """Topic metadata and administration of one KafkaLog (see the module docstring)."""

    def __init__(
        self,
        config: ClientConfig,
        admin: AdminClient,
        cluster: ClusterInfo,
        registry: TopicRegistry,
    ) -> None:
        self._config = config
        self._admin = admin
        self.cluster = cluster
        self.registry = registry
        self._counts: dict[str, int] = {}

    def _require_admin(self, operation: str) -> None:
        if not self.cluster.has_admin:
            raise AdminUnavailableError(operation, self._config.bootstrap_servers)

    # ------------------------------------------------------------- metadata

    def broker_counts(self) -> dict[str, int]:
        """Every topic the broker has, with its partition count (refreshes the cache).
        A request for all topics never makes the broker auto-create one."""
        try:
            md = self._admin.list_topics(timeout=self._config.timeout_s)
        except confluent_kafka.KafkaException as exc:
            raise operation_error("list topics", exc) from None
        counts = {
            name: len(t.partitions)
            for name, t in md.topics.items()
            if t.error is None and t.partitions
        }
        self._counts = counts
        return counts

    def broker_count(self, name: str, *, refresh: bool = False) -> int | None:
        count = None if refresh else self._counts.get(name)
        if count is None:
            count = self.broker_counts().get(name)
        return count

    def partition_count(self, name: str, *, refresh: bool = False) -> int:
        validate_topic_name(name)
        broker = self.broker_count(name, refresh=refresh)
        if broker is None:
            raise UnknownTopicOrPartitionError(name)
        entry = self.registry.get(name, refresh=refresh)
        return min(entry.partitions, broker) if entry is not None else broker

    def topic_config(self, name: str) -> TopicConfig:
        entry = self.registry.get(name)
        return TopicConfig.parse(entry.config if entry is not None else None)

    # ---------------------------------------------------------------- admin

    def create(self, name: str, partitions: int, config: Mapping[str, object] | None) -> None:
        # Step 1
        validate_topic_name(name)
        if not isinstance(partitions, int) or isinstance(partitions, bool) or partitions < 1:
            raise InvalidConfigError("partitions", partitions, "must be at least 1")
        overrides = dict(config or {})
        TopicConfig.parse(overrides)
        # Step 2
        if self.broker_count(name, refresh=True) is not None:
            raise TopicExistsError(name)
        if self.cluster.has_admin:
            # Step 3
            self._create_with_admin(name, partitions, overrides)
        else:
            # Step 4
            count = self._auto_create(name)
            if count < partitions:
                raise InvalidConfigError(
                    "partitions",
                    partitions,
                    f"the cluster has no admin API and auto-created {name} with {count} partitions",
                )
        # Step 5
        self.registry.put(name, partitions, overrides)

    def _create_with_admin(self, name: str, partitions: int, config: Mapping[str, object]) -> None:
        topic = NewTopic(
            name,
            num_partitions=partitions,
            config=_broker_config(config),
        )
        future = self._admin.create_topics([topic], request_timeout=self._config.timeout_s)[name]
        try:
            future.result(timeout=self._config.timeout_s + 1)
        except confluent_kafka.KafkaException as exc:
            err = exc.args[0] if exc.args else None
            if isinstance(err, confluent_kafka.KafkaError) and err.code() == _EXISTS:
                # Another client made it first, and the controller says so before this
                # broker's metadata shows it: callers that tolerate an existing topic
                # (workers starting side by side on a new cluster, each making the
                # internal topics) use it at once, so wait until it shows.
                with contextlib.suppress(KafkaOperationError):
                    self._wait_for(name, lambda count: count is not None)
                raise TopicExistsError(name) from None
            raise operation_error(f"create topic {name}", exc) from None
        self._wait_for(name, lambda count: count is not None and count >= partitions)

    def _auto_create(self, name: str) -> int:
        """A metadata request for `name` from a client that allows auto-creation."""
        creator = confluent_kafka.Producer(
            {**self._config.base(), "allow.auto.create.topics": True}
        )
        try:
            creator.list_topics(name, timeout=self._config.timeout_s)
        except confluent_kafka.KafkaException as exc:
            raise operation_error(f"auto-create topic {name}", exc) from None
        finally:
            creator.flush(0)
        count = self._wait_for(name, lambda count: count is not None)
        assert count is not None
        return count

    def _wait_for(self, name: str, done: Callable[[int | None], bool]) -> int | None:
        """Poll metadata until `done(count)` holds (admin changes reach every broker's
        metadata a little after the controller answers)."""
        deadline = time.monotonic() + self._config.timeout_s
        while True:
            count = self.broker_count(name, refresh=True)
            if done(count):
                return count
            if time.monotonic() > deadline:
                raise KafkaOperationError(
                    f"wait for topic {name}",
                    "_TIMED_OUT",
                    "the metadata did not show the change in time",
                    retriable=True,
                )
            time.sleep(0.05)

    def delete(self, name: str) -> None:
        validate_topic_name(name)
        if self.broker_count(name, refresh=True) is None:
            raise UnknownTopicOrPartitionError(name)
        self._require_admin(f"delete topic {name}")
        future = self._admin.delete_topics([name], request_timeout=self._config.timeout_s)[name]
        try:
            future.result(timeout=self._config.timeout_s + 1)
        except confluent_kafka.KafkaException as exc:
            raise operation_error(f"delete topic {name}", exc) from None
        self._wait_for(name, lambda count: count is None)
        if self.registry.get(name, refresh=True) is not None:
            self.registry.remove(name)

    def create_partitions(self, name: str, total: int) -> None:
        """Grow to `total` (never shrinks). Within the partitions the broker already
        has (an auto-created topic), only the registry changes."""
        count = self.partition_count(name, refresh=True)
        if total <= count:
            raise InvalidConfigError(
                "partitions", total, f"topic {name} already has {count} partitions"
            )
        broker = self.broker_count(name) or 0
        if total > broker:
            self._require_admin(f"add partitions to {name}")
            future = self._admin.create_partitions(
                [NewPartitions(name, total)], request_timeout=self._config.timeout_s
            )[name]
            try:
                future.result(timeout=self._config.timeout_s + 1)
            except confluent_kafka.KafkaException as exc:
                raise operation_error(f"add partitions to {name}", exc) from None
            self._wait_for(name, lambda c: c is not None and c >= total)
        entry = self.registry.get(name)  # read fresh by partition_count above
        self.registry.put(name, total, entry.config if entry is not None else {})

    def alter_config(self, name: str, changes: Mapping[str, object]) -> None:
        """Set (None: reset) config keys; the broker applies them when it has an admin
        API, and the registry records them either way."""
        count = self.partition_count(name, refresh=True)
        entry = self.registry.get(name)  # read fresh by partition_count above
        merged = {**(entry.config if entry is not None else {}), **changes}
        merged = {k: v for k, v in merged.items() if v is not None}
        TopicConfig.parse(merged)
        if self.cluster.has_admin and changes:
            set_, delete = AlterConfigOpType.SET, AlterConfigOpType.DELETE
            entries = [
                ConfigEntry(k, None, incremental_operation=delete)
                if v is None
                else ConfigEntry(k, _broker_value(k, v), incremental_operation=set_)
                for k, v in changes.items()
            ]
            resource = ConfigResource("topic", name, incremental_configs=entries)
            future = self._admin.incremental_alter_configs(
                [resource], request_timeout=self._config.timeout_s
            )[resource]
            try:
                future.result(timeout=self._config.timeout_s + 1)
            except confluent_kafka.KafkaException as exc:
                raise operation_error(f"alter config of {name}", exc) from None
        self.registry.put(name, entry.partitions if entry is not None else count, merged)
