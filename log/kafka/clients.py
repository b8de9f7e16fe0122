"""How KafkaLog configures its confluent-kafka clients, and what it learns about the
cluster on connecting.

Every client gets the same base settings (`bootstrap.servers`, `client.id`, quiet
logging) plus whatever the caller passed that a client of its kind takes: librdkafka
marks each of its properties producer-only (P), consumer-only (C) or both (its
CONFIGURATION.md), and warns at every client's start about a key of the other kind
("… is a producer property and will be ignored by this consumer instance"): a
worker's `kafka.delivery.timeout.ms` made every reader and group client of the log say
so. So producer-only keys go to producers only, consumer-only keys to consumers only,
and the admin client (a producer handle in librdkafka) gets neither. Producers are
idempotent with `acks=all`, so
a record is durable on every in-sync replica before its delivery report says so, and
librdkafka's own retries never reorder or duplicate. Nothing KafkaLog runs lets the
broker auto-create topics, except the one step of `create_topic` that must (see
`log.kafka.topics`): a typo in a topic name should fail, not make a topic.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import confluent_kafka

from log.kafka.errors import KafkaOperationError, KafkaUnavailableError

__all__ = [
    "CONSUMER_ONLY",
    "PRODUCER_ONLY",
    "UNAVAILABLE",
    "ClientConfig",
    "ClusterInfo",
    "operation_error",
    "probe_cluster",
]

#: librdkafka's producer-only properties ("P" in its CONFIGURATION.md, global and
#: topic-level), Kafka's names among them (acks, delivery.timeout.ms, linger.ms …).
PRODUCER_ONLY = frozenset(
    {
        "transactional.id",
        "transaction.timeout.ms",
        "enable.idempotence",
        "enable.gapless.guarantee",
        "queue.buffering.max.messages",
        "queue.buffering.max.kbytes",
        "queue.buffering.max.ms",
        "linger.ms",
        "message.send.max.retries",
        "retries",
        "queue.buffering.backpressure.threshold",
        "compression.codec",
        "compression.type",
        "compression.level",
        "batch.num.messages",
        "batch.size",
        "delivery.report.only.error",
        "sticky.partitioning.linger.ms",
        "request.required.acks",
        "acks",
        "request.timeout.ms",
        "message.timeout.ms",
        "delivery.timeout.ms",
        "queuing.strategy",
        "produce.offset.report",
        "partitioner",
    }
)
#: librdkafka's consumer-only properties ("C" in its CONFIGURATION.md).
CONSUMER_ONLY = frozenset(
    {
        "group.id",
        "group.instance.id",
        "partition.assignment.strategy",
        "session.timeout.ms",
        "heartbeat.interval.ms",
        "group.protocol.type",
        "group.protocol",
        "group.remote.assignor",
        "coordinator.query.interval.ms",
        "max.poll.interval.ms",
        "enable.auto.commit",
        "auto.commit.enable",
        "auto.commit.interval.ms",
        "enable.auto.offset.store",
        "queued.min.messages",
        "queued.max.messages.kbytes",
        "fetch.wait.max.ms",
        "fetch.queue.backoff.ms",
        "fetch.message.max.bytes",
        "max.partition.fetch.bytes",
        "fetch.max.bytes",
        "fetch.min.bytes",
        "fetch.error.backoff.ms",
        "isolation.level",
        "enable.partition.eof",
        "check.crcs",
        "auto.offset.reset",
        "offset.store.method",
        "offset.store.path",
        "offset.store.sync.interval.ms",
        "consume.callback.max.messages",
    }
)
_ONE_KIND = PRODUCER_ONLY | CONSUMER_ONLY

_quiet = logging.getLogger("log.kafka.librdkafka")


class _OncePerOutage(logging.Filter):
    """Lets through one connection failure (librdkafka's FAIL lines) per client per
    `REPEAT_S`. Why: every client retries its connections several times a second
    while a broker is away, and each retry logged an ERROR: about 7,000 lines in a
    30-second outage for one worker, burying the one warning that says what happens
    (the tasks' "the log cannot be reached")."""

    REPEAT_S = 60.0

    def __init__(self) -> None:
        super().__init__()
        self._last: dict[str, float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if not (isinstance(args, tuple) and len(args) == 3 and args[0] == "FAIL"):
            return True
        client = str(args[1])
        now = time.monotonic()
        if now - self._last.get(client, -self.REPEAT_S) < self.REPEAT_S:
            return False
        self._last[client] = now
        return True


_quiet.addFilter(_OncePerOutage())


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
        """The settings every kind of client takes: neither producer-only nor
        consumer-only keys (see the module docstring)."""
        return {
            "bootstrap.servers": self.bootstrap_servers,
            "client.id": "tributary",
            "logger": _quiet,
            **{k: v for k, v in self.extra.items() if k not in _ONE_KIND},
        }

    def _of_kind(self, keys: frozenset[str]) -> dict[str, object]:
        return {k: v for k, v in self.extra.items() if k in keys}

    @property
    def delivery_timeout_s(self) -> float:
        """How long an append waits for a broker to take its records: Kafka's producer
        `delivery.timeout.ms` (librdkafka's `message.timeout.ms`), 120 s unless the
        client config says otherwise, never less than the request timeout. Why not the
        request timeout (10 s) as before: the offset and status writes then failed
        whenever the broker was away for more than 10 s; Kafka's producers wait two
        minutes. (A source task's own appends wait without a limit: `Writer.append`.)"""
        given = self.extra.get("delivery.timeout.ms", self.extra.get("message.timeout.ms"))
        ms = int(given) if given is not None else 120_000  # type: ignore[call-overload]
        return self.delivery_floor(ms) / 1000

    def delivery_floor(self, ms: int) -> int:
        """A delivery timeout of `ms` as the producers get it: 0 (no limit) stays 0,
        anything else is at least the request timeout (Kafka's producer refuses a
        delivery.timeout.ms under its request.timeout.ms)."""
        return 0 if ms == 0 else max(int(ms), int(self.timeout_s * 1000))

    def producer(
        self, compression: str, *, delivery_timeout_ms: int | None = None
    ) -> dict[str, object]:
        """A producer's settings; `delivery_timeout_ms` over the client config's
        (0: no limit, librdkafka's message.timeout.ms=0)."""
        if delivery_timeout_ms is None:
            delivery_timeout_ms = int(self.delivery_timeout_s * 1000)
        settings = {
            **self.base(),
            **self._of_kind(PRODUCER_ONLY),
            "acks": "all",
            "enable.idempotence": True,
            "compression.type": compression,
            "allow.auto.create.topics": False,
            "linger.ms": 1,
            "message.timeout.ms": self.delivery_floor(delivery_timeout_ms),
        }
        settings.pop("delivery.timeout.ms", None)  # an alias: librdkafka takes one
        return settings

    def reader(self) -> dict[str, object]:
        """A consumer used with assign/seek only: no group membership, no commits."""
        return {
            **self.consumer(),
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
            **self.consumer(),
            "group.id": group,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "allow.auto.create.topics": False,
        }

    def consumer(self) -> dict[str, object]:
        """What every consumer of the log starts from: the base and consumer-only keys."""
        return {**self.base(), **self._of_kind(CONSUMER_ONLY)}

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


_KE = confluent_kafka.KafkaError
#: Failures that mean "the cluster cannot be reached for now": no broker answered in
#: time, or a leader or the group coordinator is moving. Raised as
#: KafkaUnavailableError, a LogUnavailableError, which the runtime's tasks ride out.
UNAVAILABLE = frozenset(
    {
        _KE._TRANSPORT,
        _KE._ALL_BROKERS_DOWN,
        _KE._DESTROY_BROKER,  # a broker left the cluster's metadata; its leaders move
        _KE._TIMED_OUT,
        _KE._MSG_TIMED_OUT,
        _KE._WAIT_COORD,
        _KE._RESOLVE,
        _KE.REQUEST_TIMED_OUT,
        _KE.NETWORK_EXCEPTION,
        _KE.LEADER_NOT_AVAILABLE,
        _KE.NOT_LEADER_FOR_PARTITION,
        _KE.COORDINATOR_NOT_AVAILABLE,
        _KE.NOT_COORDINATOR,
        _KE.COORDINATOR_LOAD_IN_PROGRESS,
        _KE.NOT_ENOUGH_REPLICAS,
        _KE.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    }
)


def operation_error(
    operation: str, exc: BaseException, *, unavailable: frozenset[int] = UNAVAILABLE
) -> KafkaOperationError:
    """Our error for a librdkafka failure (a KafkaException or a KafkaError): a
    KafkaUnavailableError for the codes in `unavailable`."""
    err = exc.args[0] if isinstance(exc, confluent_kafka.KafkaException) and exc.args else exc
    if isinstance(err, confluent_kafka.KafkaError):
        if err.code() in unavailable:
            return KafkaUnavailableError(operation, err.name(), err.str(), retriable=True)
        return KafkaOperationError(operation, err.name(), err.str(), retriable=err.retriable())
    return KafkaOperationError(operation, type(exc).__name__, str(exc), retriable=False)
