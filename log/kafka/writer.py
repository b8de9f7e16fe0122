"""Batched appends with delivery confirmed before `append` returns.

`append(topic, partition, values, …)` hands every record to an idempotent producer
(`acks=all`) and then waits for each record's delivery report. It returns only when
all of them are acknowledged by the leader and its in-sync replicas, so the runtime,
which commits a source offset after `append` returns, never commits an offset for a
record Kafka does not hold. Any failed report fails the whole call with
KafkaOperationError (earlier records of the batch may be stored: at-least-once, the
same as a FileLog append interrupted by a crash). While no broker answers, librdkafka
keeps the records and retries for the delivery timeout, and the append waits:

- by default `ClientConfig.delivery_timeout_s` (Kafka's delivery.timeout.ms, 120 s):
  an append waits out a broker restart, and fails with KafkaUnavailableError
  (`_MSG_TIMED_OUT`) only after that;
- `delivery_timeout_ms=0`: without a limit, as Kafka Connect's source producers
  (delivery.timeout.ms and max.block.ms at their maximum: a source task waits out any
  outage), also while the local queue is full; another value: that limit.

A `stop` event ends the wait: once it is set, the append gives up as soon as no
delivery report has come for `STOP_GRACE_S` (a broker that answers finishes the batch,
so a stop of a healthy task costs no duplicates), with KafkaUnavailableError. Records
it gave up on may still reach the log while it stays open: like any failed append,
at-least-once. `close` drops the records no append waits for any more instead of
waiting the request timeout for a broker that is away.

Offsets: Kafka assigns them. A batch that fits one produce request (`batch.size`,
1 MB by default) gets contiguous offsets; a larger one may be interleaved with
another producer's records on the same partition, and the returned range then spans
those too. The runtime writes each partition from one place, so this does not arise
there.

Compression and the delivery timeout are producer settings in librdkafka, not per-call
ones, so there is one producer per (codec, delivery timeout), made on first use.
Producers are thread-safe; calls from several threads share them.

Records without timestamps or headers (the runtime's source batches, most appends) go
to librdkafka by `produce_batch`, `BATCH_RECORDS` at a time: one call per slice instead
of one `produce()` with its keyword arguments per record, a fifth less CPU a record
(docs/performance.md, "MySQL CDC"). A slice is handed
over only when the producer's queue has room for it, so a record refused there (queue
full) is rare; refused records are handed over again, in order, once deliveries made
room, and only when every record after them was refused too (otherwise the order on
the partition would change, and the append fails as a retriable error).
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

__all__ = ["STOP_GRACE_S", "Writer"]

#: How long an append whose caller is stopping waits for a next delivery report.
STOP_GRACE_S = 1.0
#: Records handed to librdkafka by one `produce_batch` call.
BATCH_RECORDS = 4096

_QUEUE_FULL = confluent_kafka.KafkaError._QUEUE_FULL

_UNKNOWN_PARTITION = confluent_kafka.KafkaError._UNKNOWN_PARTITION


_QUEUE_FULL_ERROR = confluent_kafka.KafkaError(_QUEUE_FULL)


class _Refusal:
    """What one append does when librdkafka refuses a record, on either produce path:
    a full local queue waits for deliveries to drain it; an unknown partition gets one
    metadata refresh per append (`Writer._learn`), then the error stands; any
    other error ends the append."""

    def __init__(
        self,
        writer: Writer,
        producer: confluent_kafka.Producer,
        wait: _Wait,
        batch: _Batch,
        topic: str,
        partition: int,
        total: int,
    ) -> None:
        self._writer, self._producer, self._wait, self._batch = writer, producer, wait, batch
        self._topic, self._partition, self._total = topic, partition, total
        self._learned = False

    def retry_after(self, error: confluent_kafka.KafkaError) -> None:
        """Return when the refused record may go again; raise when it may not."""
        code = error.code()
        if code == _QUEUE_FULL:
            self._wait.check(self._batch.pending, self._total)
            self._producer.poll(0.05)
            return
        if code == _UNKNOWN_PARTITION and not self._learned:
            self._learned = True
            if self._writer._learn(self._producer, self._topic, self._partition):
                return
        raise operation_error(self._wait.what, error)


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


class _Wait:
    """When an append stops waiting for its reports (see the module docstring)."""

    __slots__ = ("_deadline", "_last", "_quiet_since", "_stop", "_stopped_at", "what")

    def __init__(self, what: str, timeout_s: float, stop: threading.Event | None) -> None:
        self.what = what
        now = time.monotonic()
        # librdkafka reports every record by its message.timeout.ms; the margin covers
        # a report still on its way.
        self._deadline = now + timeout_s + 5 if timeout_s else None
        self._stop = stop
        self._stopped_at: float | None = None
        self._quiet_since = now
        self._last = -1

    def check(self, pending: int, total: int) -> None:
        """Raise KafkaUnavailableError when the wait for `pending` reports is over."""
        now = time.monotonic()
        if pending != self._last:
            self._last, self._quiet_since = pending, now
        if self._deadline is not None and now > self._deadline:
            reason = f"{pending} of {total} records have no delivery report"
            raise KafkaUnavailableError(self.what, "_TIMED_OUT", reason, retriable=True)
        if self._stop is None or not self._stop.is_set():
            return
        if self._stopped_at is None:
            self._stopped_at = now
        if now - max(self._quiet_since, self._stopped_at) >= STOP_GRACE_S:
            reason = f"{pending} of {total} records not delivered when the caller stopped"
            raise KafkaUnavailableError(self.what, "_STOPPED", reason, retriable=True)


class Writer:
    """The producers of one KafkaLog (see the module docstring)."""

    def __init__(self, config: ClientConfig) -> None:
        self._config = config
        self._lock = threading.Lock()
        self._producers: dict[tuple[str, int], confluent_kafka.Producer] = {}
        self._closed = False
        self._in_flight = 0  # appends between their first produce and their return
        #: records a producer's queue holds (librdkafka refuses more: queue full)
        self._room = int(config.producer("none").get("queue.buffering.max.messages", 100_000))

    def _producer(self, codec: str, timeout_ms: int) -> confluent_kafka.Producer:
        """The producer of `codec` whose records wait `timeout_ms` (0: no limit)."""
        with self._lock:
            if self._closed:
                raise LogClosedError()
            producer = self._producers.get((codec, timeout_ms))
            if producer is None:
                settings = self._config.producer(codec, delivery_timeout_ms=timeout_ms)
                producer = confluent_kafka.Producer(settings)
                self._producers[(codec, timeout_ms)] = producer
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
        delivery_timeout_ms: int | None = None,
        stop: threading.Event | None = None,
    ) -> range:
        """Produce `values` and wait for their reports (see the module docstring):
        `delivery_timeout_ms` None is the client config's, 0 no limit; `stop` ends
        the wait."""
        if not values:
            return range(0)  # FileLog too refuses nothing and assigns nothing
        if delivery_timeout_ms is None:
            delivery_timeout_ms = int(self._config.delivery_timeout_s * 1000)
        timeout_ms = self._config.delivery_floor(delivery_timeout_ms)
        producer = self._producer(codec, timeout_ms)
        with self._lock:
            self._in_flight += 1
        try:
            wait = _Wait(f"append to {topic}-{partition}", timeout_ms / 1000, stop)
            return self._produce(
                producer, wait, topic, partition, values, keys, timestamps, headers
            )
        finally:
            with self._lock:
                self._in_flight -= 1

    def _produce(
        self,
        producer: confluent_kafka.Producer,
        wait: _Wait,
        topic: str,
        partition: int,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None,
        timestamps: Sequence[int] | None,
        headers: Sequence[Sequence[Header]] | None,
    ) -> range:
        batch = _Batch(len(values))
        if timestamps is None and (headers is None or not any(headers)):
            self._produce_slices(producer, wait, batch, topic, partition, values, keys)
        else:
            self._produce_each(
                producer, wait, batch, topic, partition, values, keys, timestamps, headers
            )
        while batch.pending > 0:
            wait.check(batch.pending, len(values))
            producer.flush(0.1)
        if batch.error is not None:
            raise operation_error(wait.what, batch.error)
        return range(min(batch.offsets), max(batch.offsets) + 1)

    def _produce_slices(
        self,
        producer: confluent_kafka.Producer,
        wait: _Wait,
        batch: _Batch,
        topic: str,
        partition: int,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None,
    ) -> None:
        """Records without timestamps or headers, `BATCH_RECORDS` per call (see the
        module docstring)."""
        if keys is None:
            messages = [{"value": v} for v in values]
        else:
            messages = [{"value": v, "key": k} for v, k in zip(values, keys, strict=True)]
        room = self._room
        step = max(1, min(BATCH_RECORDS, room // 2))
        refusal = _Refusal(self, producer, wait, batch, topic, partition, len(messages))
        start = 0
        while start < len(messages):
            chunk = messages[start : start + step]
            while len(producer) + len(chunk) > room:  # wait for room: none refused
                wait.check(batch.pending, len(messages))
                producer.poll(0.05)
            queued = producer.produce_batch(
                topic, chunk, partition=partition, on_delivery=batch.report
            )
            if queued == len(chunk):
                start += len(chunk)
                continue
            errors = [m.get("_error") for m in chunk]
            first = next(i for i, e in enumerate(errors) if e is not None)
            if any(e is None for e in errors[first:]):  # a gap: the order would change
                raise operation_error(wait.what, errors[first])
            start += first  # the refused tail goes again, in order
            for m in chunk[first:]:
                del m["_error"]
            refusal.retry_after(errors[first])

    def _produce_each(
        self,
        producer: confluent_kafka.Producer,
        wait: _Wait,
        batch: _Batch,
        topic: str,
        partition: int,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None,
        timestamps: Sequence[int] | None,
        headers: Sequence[Sequence[Header]] | None,
    ) -> None:
        """Records with timestamps or headers, one `produce()` each."""
        refusal = _Refusal(self, producer, wait, batch, topic, partition, len(values))
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
                    error = _QUEUE_FULL_ERROR
                except confluent_kafka.KafkaException as exc:
                    error = exc.args[0] if exc.args else None
                    if not isinstance(error, confluent_kafka.KafkaError):
                        raise operation_error(wait.what, exc) from None
                refusal.retry_after(error)  # outside the handler: no chained traceback

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
        """Close the producers. Records still queued when no append waits any more are
        those of appends that gave up (a stop, a timeout): their callers were told they
        failed, so they are dropped rather than waited for (up to the request timeout
        during an outage). An append still in flight gets the request timeout."""
        with self._lock:
            self._closed = True
            producers = list(self._producers.values())
            self._producers.clear()
            waited_for = self._in_flight > 0
        for producer in producers:
            if not waited_for:
                producer.purge()
            producer.flush(self._config.timeout_s if waited_for else 0)
