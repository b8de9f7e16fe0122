"""Batched appends with delivery confirmed before `append` returns.

`append(topic, partition, values, …)` hands every record to an idempotent producer
(`acks=all`) and then waits for each record's delivery report. It returns only when
all of them are acknowledged by the leader and its in-sync replicas, so the runtime,
which commits a source offset after `append` returns, never commits an offset for a
record Kafka does not hold. Any failed report fails the whole call with
KafkaOperationError (earlier records of the batch may be stored: at-least-once, the
same as a FileLog append interrupted by a crash). While no broker answers, librdkafka
keeps the records and retries for `ClientConfig.delivery_timeout_s` (Kafka's
delivery.timeout.ms, 120 s): an append waits out a broker restart, and fails with
KafkaUnavailableError (`_MSG_TIMED_OUT`) only after that.

Offsets: Kafka assigns them. A batch that fits one produce request (`batch.size`,
1 MB by default) gets contiguous offsets; a larger one may be interleaved with
another producer's records on the same partition, and the returned range then spans
those too. The runtime writes each partition from one place, so this does not arise
there.

Compression is a producer setting in librdkafka, not a per-call one, so there is one
producer per codec, made on first use. Producers are thread-safe; calls from several
threads share them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import confluent_kafka

from log.errors import LogClosedError
from log.kafka.clients import ClientConfig, operation_error
from log.kafka.errors import KafkaUnavailableError
from log.records import Header

__all__ = ["Writer"]

_UNKNOWN_PARTITION = confluent_kafka.KafkaError._UNKNOWN_PARTITION


def _unknown_partition(exc: confluent_kafka.KafkaException) -> bool:
    err = exc.args[0] if exc.args else None
    return isinstance(err, confluent_kafka.KafkaError) and err.code() == _UNKNOWN_PARTITION


class _Batch:
    """Delivery reports of one append, filled in by librdkafka's callback thread
    (inside `poll`/`flush`, i.e. in whichever caller thread serves them)."""

    __slots__ = ("error", "offsets", "pending")

    def __init__(self, count: int) -> None:
        self.pending = count
        self.offsets: list[int] = []
        self.error: confluent_kafka.KafkaError | None = None

    def report(self, err: confluent_kafka.KafkaError | None, msg: confluent_kafka.Message) -> None:
        self.pending -= 1
        if err is not None:
            self.error = self.error or err
        else:
            self.offsets.append(msg.offset())


class Writer:
    """The producers of one KafkaLog (see the module docstring)."""

    def __init__(self, config: ClientConfig) -> None:
        self._config = config
        self._lock = threading.Lock()
        self._producers: dict[str, confluent_kafka.Producer] = {}
        self._closed = False

    def _producer(self, codec: str) -> confluent_kafka.Producer:
        with self._lock:
            if self._closed:
                raise LogClosedError()
            producer = self._producers.get(codec)
            if producer is None:
                producer = confluent_kafka.Producer(self._config.producer(codec))
                self._producers[codec] = producer
            return producer

    def append(
        self,
        topic: str,
        partition: int,
        values: Sequence[bytes | None],
        *,
        keys: Sequence[bytes | None] | None,
        timestamps: Sequence[int] | None,
        headers: Sequence[Sequence[Header]] | None,
        codec: str,
    ) -> range:
        if not values:
            return range(0)  # FileLog too refuses nothing and assigns nothing
        producer = self._producer(codec)
        batch = _Batch(len(values))
        learned = False
        for i, value in enumerate(values):
            kwargs: dict[str, object] = {"partition": partition, "on_delivery": batch.report}
            if keys is not None and keys[i] is not None:
                kwargs["key"] = keys[i]
            if timestamps is not None:
                kwargs["timestamp"] = timestamps[i]
            if headers is not None and headers[i]:
                kwargs["headers"] = list(headers[i])
            while True:
                try:
                    producer.produce(topic, value, **kwargs)
                    break
                except BufferError:  # local queue full: let deliveries drain it
                    producer.poll(0.05)
                except confluent_kafka.KafkaException as exc:
                    if not learned and _unknown_partition(exc):
                        learned = True  # one refresh per append, then the error stands
                        if self._learn(producer, topic, partition):
                            continue
                    raise operation_error(f"append to {topic}-{partition}", exc) from None
        # librdkafka reports every record by its message.timeout.ms; the margin covers
        # a report still on its way.
        deadline = time.monotonic() + self._config.delivery_timeout_s + 5
        while batch.pending > 0:
            if time.monotonic() > deadline:
                raise KafkaUnavailableError(
                    f"append to {topic}-{partition}",
                    "_TIMED_OUT",
                    f"{batch.pending} of {len(values)} records have no delivery report",
                    retriable=True,
                )
            producer.flush(0.1)
        if batch.error is not None:
            raise operation_error(f"append to {topic}-{partition}", batch.error)
        return range(min(batch.offsets), max(batch.offsets) + 1)

    def _learn(self, producer: confluent_kafka.Producer, topic: str, partition: int) -> bool:
        """Refresh the producer's metadata of `topic` until it knows `partition`.

        Why: librdkafka refuses a record for a partition its cached metadata lacks and
        refreshes that cache only every few minutes, while KafkaLog checked the
        partition against fresh metadata: a partition added since the producer last
        asked (create_partitions here, or by another process) was refused as unknown.
        A metadata request for the topic updates the cache. False when the partition
        still does not show within the timeout."""
        deadline = time.monotonic() + self._config.timeout_s
        while time.monotonic() < deadline:
            try:
                md = producer.list_topics(topic, timeout=self._config.timeout_s)
            except confluent_kafka.KafkaException:
                return False
            known = md.topics.get(topic)
            if known is not None and partition in known.partitions:
                return True
            time.sleep(0.05)
        return False

    def close(self) -> None:
        with self._lock:
            self._closed = True
            producers = list(self._producers.values())
            self._producers.clear()
        for producer in producers:
            producer.flush(self._config.timeout_s)
