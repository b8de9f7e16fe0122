"""How KafkaLog configures its confluent-kafka clients, and what it learns about the
cluster on connecting.

Every client gets the same base settings (`bootstrap.servers`, `client.id`, quiet
logging) plus whatever the caller passed. Producers are idempotent with `acks=all`, so
a record is durable on every in-sync replica before its delivery report says so, and
librdkafka's own retries never reorder or duplicate. Nothing KafkaLog runs lets the
broker auto-create topics, except the one step of `create_topic` that must (see
`log.kafka.topics`): a typo in a topic name should fail, not make a topic.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

import confluent_kafka

from log.kafka.errors import KafkaOperationError

__all__ = ["ClientConfig", "ClusterInfo", "operation_error", "probe_cluster"]

_quiet = logging.getLogger("log.kafka.librdkafka")


@dataclass(frozen=True, slots=True)
class ClientConfig:
    """Base settings for every client of one KafkaLog."""

    bootstrap_servers: str
    extra: Mapping[str, object]
    timeout_s: float = 10.0
    #: Settings of the consumers that are group members (sink tasks), over `extra`:
    #: Kafka Connect's `consumer.`-prefixed worker keys, e.g. session.timeout.ms.
    member: Mapping[str, object] = field(default_factory=dict)

    def base(self) -> dict[str, object]:
        return {
            "bootstrap.servers": self.bootstrap_servers,
            "client.id": "tributary",
            "logger": _quiet,
            **self.extra,
        }

    def producer(self, compression: str) -> dict[str, object]:
        return {
            **self.base(),
            "acks": "all",
            "enable.idempotence": True,
            "compression.type": compression,
            "allow.auto.create.topics": False,
            "linger.ms": 1,
            "message.timeout.ms": int(self.timeout_s * 1000),
        }

    def reader(self) -> dict[str, object]:
        """A consumer used with assign/seek only: no group membership, no commits."""
        return {
            **self.base(),
            "group.id": "tributary-reader",  # required by the client; never joined
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "error",
            "enable.partition.eof": True,
            "allow.auto.create.topics": False,
            "fetch.wait.max.ms": 10,
        }

    def group_client(self, group: str) -> dict[str, object]:
        """A consumer that only commits and fetches the offsets of `group`."""
        return {
            **self.base(),
            "group.id": group,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "allow.auto.create.topics": False,
        }

    def admin(self) -> dict[str, object]:
        return self.base()


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    """What the first metadata answer says: the brokers and whether the controller is
    one of them. A real cluster always names a live broker as controller; the
    librdkafka mock names broker 0, which does not exist, and answers no admin request
    (CreateTopics, DeleteTopics, DescribeConfigs … time out)."""

    brokers: tuple[str, ...]
    has_admin: bool
    #: The cluster's id as its metadata names it (Kafka's `kafka_cluster_id` in a
    #: Connect worker's `GET /`), or None from a broker too old to say.
    cluster_id: str | None = None


def probe_cluster(admin: confluent_kafka.admin.AdminClient, timeout_s: float) -> ClusterInfo:
    try:
        md = admin.list_topics(timeout=timeout_s)
    except confluent_kafka.KafkaException as exc:
        raise operation_error("connect to the cluster", exc) from None
    brokers = tuple(f"{b.host}:{b.port}" for b in md.brokers.values())
    return ClusterInfo(
        brokers=brokers, has_admin=md.controller_id in md.brokers, cluster_id=md.cluster_id
    )


def operation_error(operation: str, exc: BaseException) -> KafkaOperationError:
    """Our error for a librdkafka failure (a KafkaException or a KafkaError)."""
    err = exc.args[0] if isinstance(exc, confluent_kafka.KafkaException) and exc.args else exc
    if isinstance(err, confluent_kafka.KafkaError):
        return KafkaOperationError(operation, err.name(), err.str(), retriable=err.retriable())
    return KafkaOperationError(operation, type(exc).__name__, str(exc), retriable=False)
