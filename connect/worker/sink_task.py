"""Runs a SinkTask: consume → convert → transform → put → pre_commit → commit.

The task consumes its topics as the consumer group `connect-<connector>`; the tasks of
one connector share the topics' partitions through the group (see log.group).

One iteration (numbered as in the code):
1. If the last delivery raised RetriableError (or the task was fenced before it),
   back off — `context.timeout()` when the task set one, else 100 ms doubling up to
   1 s — with every assigned partition paused, polling meanwhile so the group goes
   on: a rebalance revokes partitions here, and what it takes leaves the pending
   delivery (the next owner reads it from the committed offset). Then deliver what
   remains again; nothing new is consumed meanwhile.
2. Poll the consumer, a chunk of records per partition.
3. When the task takes Arrow batches (it overrides `put_batches` and the connector
   has no transforms), offer each partition's values to the value converter's
   `to_arrow`; what it decodes becomes `SinkBatch`es (`connect.api.sink_batch`), with
   numpy offsets and timestamps made once per chunk and no Python object per record.
   Every other chunk — the converter answered None or raised, or decoded no row —
   takes the record path: keys, values and headers converted per partition in
   batches, a batch that fails redone record by record under the error policy
   (failures go to the dead-letter topic when tolerated), then each record
   transformed.
4. `put_batches()` the batches, if any, then `put()` the records (always, even none).
   Only once a call returned do its chunks' next offsets become consumed: what a
   commit may pass. A RetriableError keeps what that call was handed for step 1 and
   consumes none of it.

Offset commit, every `offset.flush.interval.ms`, on `context.request_commit()`,
before partitions are revoked, and on a clean stop:
1. `pre_commit(consumed offsets)` — the task makes its writes durable and says which
   offsets are safe; an offset past what was consumed is clamped to it, one of a
   partition the task does not hold is ignored (the task cannot vouch for records it
   was never handed);
2. the dead-letter topic is fsynced (what it holds must not be lost behind a commit);
3. those offsets are committed for the group (the log fsyncs before recording them).
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from connect.api import (
    ConfigError,
    ConnectError,
    Converter,
    ErrantRecordReporter,
    HeaderConverter,
    Headers,
    RetriableError,
    SchemaAndValue,
    SinkRecord,
    SinkTask,
    SinkTaskContext,
    TopicPartition,
)
from connect.api.data import Type
from connect.errors import (
    ERRANT_RECORD_CLASS,
    DeadLetterQueueReporter,
    ErrorContext,
    RetryWithTolerance,
    Stage,
)
from connect.metrics.task import TaskMetrics
from connect.worker.task_base import StatusListener, WorkerTask
from log import Consumer, Log, LogError, Record
from log import TopicPartition as LogTopicPartition

if TYPE_CHECKING:  # numpy and pyarrow load with the first batch (a record-only sink never)
    from connect.api.sink_batch import SinkBatch

__all__ = ["WorkerSinkTask"]

_log = logging.getLogger("connect.worker")
#: A null key converts to null with every converter; records without keys skip it.
_NULL = SchemaAndValue(None, None)

Transform = Callable[[SinkRecord], SinkRecord | None]
#: A poll's records of one partition, in offset order (`Consumer.poll_chunks`).
Chunk = tuple[LogTopicPartition, list[Record]]
# Record fields by position: C-level getters for `map` over a chunk.
_offset_of = itemgetter(2)
_timestamp_of = itemgetter(3)
_value_of = itemgetter(5)
#: The redelivery back-off when the task sets no `context.timeout()`: from the first,
#: doubling up to the last. Why: a sink whose store is down must not be called in a
#: tight loop (hundreds of thousands of put() calls a second), and one whose store
#: hiccupped should not wait long.
_RETRY_BACKOFF_FIRST_S = 0.1
_RETRY_BACKOFF_MAX_S = 1.0


class _Reporter(ErrantRecordReporter):
    def __init__(self, owner: WorkerSinkTask) -> None:
        self._owner = owner

    def report(self, record: SinkRecord, error: BaseException) -> Future[None]:
        """Logs and dead-letters the record; a failure to do so is the future's. With
        errors.tolerance=none it then raises here, in the task's put(), as Kafka's
        reporter does, so the task fails."""
        future: Future[None] = Future()
        try:
            self._owner.report_errant(record, error)
            future.set_result(None)
        except _ToleranceExceeded:
            raise
        except BaseException as exc:
            future.set_exception(exc)
        return future


class _ToleranceExceeded(ConnectError):
    """An errant record was reported while errors.tolerance is none."""


class _Context(SinkTaskContext):
    def __init__(self, owner: WorkerSinkTask) -> None:
        self._owner = owner

    @property
    def configs(self) -> Mapping[str, str]:
        return self._owner.props

    def offset(self, offsets: Mapping[TopicPartition, int]) -> None:
        self._owner.rewinds.update(offsets)

    def timeout(self, timeout_ms: int) -> None:
        self._owner.retry_backoff_s = max(0, timeout_ms) / 1000

    def assignment(self) -> set[TopicPartition]:
        return {TopicPartition(*tp) for tp in self._owner.consumer.assignment()}

    def pause(self, *partitions: TopicPartition) -> None:
        paused = [LogTopicPartition(*tp) for tp in partitions]
        self._owner.consumer.pause(paused)
        # The task's own pause outlives a redelivery's (see WorkerSinkTask._back_off).
        self._owner.retry_paused.difference_update(paused)

    def resume(self, *partitions: TopicPartition) -> None:
        self._owner.consumer.resume([LogTopicPartition(*tp) for tp in partitions])

    def request_commit(self) -> None:
        self._owner.commit_requested = True

    @property
    def errant_record_reporter(self) -> ErrantRecordReporter | None:
        return self._owner.errant_reporter


def _sink_records(
    raw: list[Record],
    keys: list[SchemaAndValue],
    values: list[SchemaAndValue],
    headers: list[Headers],
) -> list[SinkRecord]:
    """SinkRecords for converted log records, made without a keyword call per record.

    A dataclass `__init__` with nine keyword arguments costs several times what
    filling the slots of a bare instance does (docs/performance.md), and this runs
    once per record. The fields a log record does not set keep their defaults."""
    new = object.__new__
    out = []
    append = out.append
    for r, k, v, h in zip(raw, keys, values, headers, strict=True):
        rec = new(SinkRecord)
        rec.topic = r.topic
        rec.kafka_partition = r.partition
        rec.key_schema = k.schema
        rec.key = k.value
        rec.value_schema = v.schema
        rec.value = v.value
        rec.timestamp = r.timestamp
        rec.headers = h
        rec.kafka_offset = r.offset
        rec.timestamp_type = "CreateTime"
        rec.original_topic = None
        rec.original_kafka_partition = None
        rec.original_kafka_offset = None
        append(rec)
    return out


@dataclass(slots=True)
class _Delivery:
    """What one poll hands the task, kept whole until the task accepts it: the Arrow
    batches, the chunks they were made of (for records, should the task answer
    NotImplemented), the records, and each polled partition's next offset — which
    becomes consumed, and so committable, only once the task took the delivery."""

    batches: list[SinkBatch]
    batched: list[Chunk]
    records: list[SinkRecord]
    offsets: dict[TopicPartition, int]

    def drop(self, revoked: set[TopicPartition]) -> None:
        """Forget revoked partitions: their next owner reads them from the committed
        offset, so delivering them here too would write them twice. (Runs on a
        revocation during a redelivery only: a filter per record is fine there.)"""
        self.batches = [b for b in self.batches if (b.topic, b.partition) not in revoked]
        self.batched = [c for c in self.batched if (c[0].topic, c[0].partition) not in revoked]
        self.records = [r for r in self.records if r.topic_partition not in revoked]
        for tp in revoked:
            self.offsets.pop(tp, None)


class WorkerSinkTask(WorkerTask):
    def __init__(
        self,
        connector: str,
        task: int,
        plugin: SinkTask,
        props: Mapping[str, str],
        *,
        log: Log,
        topics: Sequence[str],
        topics_regex: str,
        key_converter: Converter,
        value_converter: Converter,
        header_converter: HeaderConverter,
        transform: Transform | None,
        errors: RetryWithTolerance,
        dlq: DeadLetterQueueReporter | None,
        offset_flush_interval_ms: int,
        on_status: StatusListener,
        paused: bool = False,
        max_poll_records: int = 10_000,
        on_topic: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(connector, task, on_status=on_status, paused=paused)
        self._on_topic = on_topic
        self.plugin = plugin
        self.props = dict(props)
        self._data_log = log  # the records' log; `_log` is this module's logger
        self._topics = list(topics)
        self._regex = re.compile(topics_regex) if topics_regex else None
        self._key_converter = key_converter
        self._value_converter = value_converter
        self._header_converter = header_converter
        self._transform = transform
        self._errors = errors
        self._dlq = dlq
        if dlq is not None and (
            dlq.topic in self._topics
            or (self._regex is not None and self._regex.fullmatch(dlq.topic))
        ):
            # Why: a record dead-lettered there would be read back, fail again and be
            # dead-lettered again, without end (Kafka refuses this config too).
            consumed_by = "topics" if dlq.topic in self._topics else "topics.regex"
            raise ConfigError(
                "errors.deadletterqueue.topic.name",
                dlq.topic,
                f"the connector consumes that topic ({consumed_by}); a record dead-lettered "
                "there would be read, fail and be dead-lettered again without end",
            )
        self.errant_reporter = (
            _Reporter(self)
            if (dlq or errors.policy.log_errors or errors.policy.tolerate_all)
            else None
        )
        self._flush_interval_s = offset_flush_interval_ms / 1000
        self.group = f"connect-{connector}"
        self.consumer = Consumer(
            log,
            group_id=self.group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            max_poll_records=max_poll_records,
            member_id=f"{connector}-{task}",
        )
        self._consumed: dict[TopicPartition, int] = {}
        self._committed: dict[TopicPartition, int] = {}
        #: Arrow batches for the task: it takes them and nothing works on records in
        #: between (see the module docstring, step 3).
        self.batch_path = transform is None and (
            type(plugin).put_batches is not SinkTask.put_batches
        )
        self._redeliver: _Delivery | None = None
        #: Set by `context.timeout()`; 0: the default back-off (_RETRY_BACKOFF_*).
        self.retry_backoff_s = 0.0
        self._default_backoff_s = _RETRY_BACKOFF_FIRST_S
        #: Partitions paused for a redelivery (not by the task): resumed after it.
        self.retry_paused: set[LogTopicPartition] = set()
        self.rewinds: dict[TopicPartition, int] = {}
        self.commit_requested = False
        self._last_commit = time.monotonic()
        self._last_topic_scan = 0.0
        self.metrics = TaskMetrics("sink")

    @property
    def records_put(self) -> int:
        return self.metrics.records_sent

    def metrics_snapshot(self) -> dict[str, Any]:
        """The task's counters with its error handler's and dead-letter reporter's, and
        how many partitions it is assigned (see connect.metrics.task)."""
        try:
            partitions = len(self.consumer.assignment())
        except Exception:  # closed or rebalancing: not worth failing a scrape for
            partitions = 0
        return self.metrics.snapshot(
            record_failures=self._errors.errors_total,
            records_skipped=self._errors.records_skipped,
            dlq_records=self._dlq.reported if self._dlq is not None else 0,
            partition_count=partitions,
        )

    # ------------------------------------------------------------------ lifecycle

    def initialize_and_start(self) -> None:
        self.plugin.initialize(_Context(self))
        self.plugin.start(self.props)
        self._subscribe()

    def _subscribe(self) -> None:
        topics = list(self._topics)
        if self._regex is not None:
            topics += [t for t in self._data_log.list_topics() if self._regex.fullmatch(t)]
        self.consumer.subscribe(
            sorted(set(topics)), on_assign=self._on_assign, on_revoke=self._on_revoke
        )
        self._subscribed = set(topics)
        self._last_topic_scan = time.monotonic()

    def _on_assign(self, partitions: set[LogTopicPartition]) -> None:
        if self._on_topic is not None:
            for topic in sorted({tp.topic for tp in partitions}):
                self._on_topic(topic)
        self.plugin.open(sorted(TopicPartition(*tp) for tp in partitions))

    def _on_revoke(self, partitions: set[LogTopicPartition]) -> None:
        revoked = {TopicPartition(*tp) for tp in partitions}
        if self._redeliver is not None:
            self._redeliver.drop(revoked)
        self.retry_paused.difference_update(partitions)
        self.commit_offsets(only=revoked)
        self.plugin.close(sorted(revoked))
        for tp in revoked:
            self._consumed.pop(tp, None)
            self._committed.pop(tp, None)  # the next owner commits from here on

    def iterate(self) -> None:
        if self._regex is not None and time.monotonic() - self._last_topic_scan > 5:
            matching = {t for t in self._data_log.list_topics() if self._regex.fullmatch(t)}
            if not matching <= self._subscribed:
                self._subscribe()
            self._last_topic_scan = time.monotonic()
        # Step 1
        if self._redeliver is not None:
            self._back_off()
            pending, self._redeliver = self._redeliver, None
            if pending is not None and not self._stopping.is_set():
                self._deliver(pending)
            else:
                self._redeliver = pending  # stopping: delivered by the next owner
            self._maybe_commit()
            return
        self._apply_rewinds()
        # Step 2
        chunks = self.consumer.poll_chunks(0.2)
        if chunks:
            self.metrics.records_read += sum(len(records) for _, records in chunks)
            # Step 3
            batches: list[SinkBatch] = []
            batched: list[Chunk] = []
            rest = chunks
            if self.batch_path:
                rest = []
                for chunk in chunks:
                    made = self._batches_of(*chunk)
                    if made is None:
                        rest.append(chunk)
                    else:
                        batches += made
                        batched.append(chunk)
            records = self._convert_and_transform(rest) if rest else []
            # Step 4
            offsets = {
                TopicPartition(tp.topic, tp.partition): polled[-1].offset + 1
                for tp, polled in chunks
            }
            self._deliver(_Delivery(batches, batched, records, offsets))
        else:
            # As Kafka does: put() after every poll, empty or not, so a sink on an
            # idle topic still gets to flush buffers, time out batches or fail.
            self._deliver(_Delivery([], [], [], {}))
        self._maybe_commit()

    def _apply_rewinds(self) -> None:
        if not self.rewinds:
            return
        rewinds, self.rewinds = self.rewinds, {}
        for tp, offset in rewinds.items():
            with contextlib.suppress(ValueError):  # not assigned (any more): ignore
                self.consumer.seek(LogTopicPartition(*tp), offset)
                self._consumed[tp] = offset

    def _deliver(self, delivery: _Delivery) -> None:
        """`put_batches(batches)` when there are any, then `put(records)`; `batched` are
        the chunks the batches were made of, converted to records should the task
        answer NotImplemented after all. Only a delivery the task accepted moves the
        consumed offsets (module docstring, step 4)."""
        batches, records = delivery.batches, delivery.records
        if (batches or records) and not self.may_write():
            # Fenced while stopping: nothing is committed past these records, and the
            # next owner reads them again from the committed offset.
            self._redeliver = delivery
            return
        started = time.perf_counter()
        delivered = bool(records)
        try:
            if batches:
                if self.plugin.put_batches(batches) is NotImplemented:
                    _log.info("task %s: put_batches() is not implemented; using put()", self.name)
                    self.batch_path = False
                    records = self._convert_and_transform(delivery.batched) + records
                    delivery.records = records
                else:
                    self.metrics.records_sent += sum(b.records_in for b in batches)
                    delivered = True
                    # Accepted: their partitions are consumed whatever put() does next
                    # (a retry below is put()'s alone; each chunk went one way).
                    offsets = delivery.offsets
                    for tp, _ in delivery.batched:
                        key = TopicPartition(tp.topic, tp.partition)
                        self._consumed[key] = offsets.pop(key)
                delivery.batches, delivery.batched = [], []
            self.plugin.put(records)
            self.metrics.records_sent += len(records)
            if delivered or records:
                self.metrics.batch(time.perf_counter() - started)
        except RetriableError as exc:
            _log.warning(
                "task %s: retriable error, redelivering %d batches and %d records: %s",
                self.name,
                len(delivery.batches),
                len(records),
                exc,
            )
            self._redeliver = delivery
            return
        self._consumed.update(delivery.offsets)
        self._default_backoff_s = _RETRY_BACKOFF_FIRST_S
        if self.retry_paused:
            self.consumer.resume(self.retry_paused)
            self.retry_paused.clear()

    def _back_off(self) -> None:
        """Wait before a redelivery (module docstring, step 1). The consumer is polled
        with every partition paused, as Kafka's is: the group membership goes on (a
        rebalance revokes here, and `_on_revoke` takes the revoked partitions out of
        the pending delivery) while nothing new is read. A wait the task set is
        honoured; else the default doubles, so a store that stays down is called about
        once a second, not in a tight loop."""
        if self.retry_backoff_s > 0:
            wait = self.retry_backoff_s
        else:
            wait = self._default_backoff_s
            self._default_backoff_s = min(wait * 2, _RETRY_BACKOFF_MAX_S)
        deadline = time.monotonic() + wait
        consumer = self.consumer
        while not self._stopping.is_set():
            fresh = consumer.assignment() - consumer.paused()  # incl. newly assigned
            if fresh:
                consumer.pause(fresh)
                self.retry_paused |= fresh
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            for tp, polled in consumer.poll_chunks(min(remaining, 0.1)):
                # Read only from a partition assigned by this very poll, or resumed by
                # the task: put back, to be read after the redelivery.
                consumer.seek(tp, polled[0].offset)

    def commit_final(self) -> None:
        self.commit_offsets()

    def stop_plugin(self) -> None:
        """Leave the group first (revoking commits and closes the partitions, as
        Kafka does), then stop the plugin task."""
        try:
            self.consumer.close()
        finally:
            self.plugin.stop()

    def close_resources(self) -> None:
        with contextlib.suppress(Exception):
            self.consumer.close()  # after a failure: still release the partitions
        if self._dlq is not None:
            # A task that failed on a record dead-lettered it first: keep it.
            try:
                self._dlq.flush()
            except Exception:
                _log.exception("task %s: could not flush the dead-letter topic", self.name)
        for converter in (self._key_converter, self._value_converter, self._header_converter):
            with contextlib.suppress(Exception):
                converter.close()

    # ------------------------------------------------------- convert / transform

    def _batches_of(self, tp: LogTopicPartition, polled: list[Record]) -> list[SinkBatch] | None:
        """The chunk as Arrow batches, or None when it takes the record path: the
        converter answers None or raises (the record path then dead-letters what is
        bad, per errors.tolerance), or decodes no row (nothing but tombstones), or
        breaks the contract of `Converter.to_arrow` (rows out of order)."""
        import numpy as np

        from connect.api.sink_batch import SinkBatch

        try:
            runs = self._value_converter.to_arrow(tp.topic, list(map(_value_of, polled)))
        except Exception as exc:  # the record path says what is wrong, per record
            _log.debug("task %s: to_arrow failed on %s, converting records: %s", self.name, tp, exc)
            return None
        if not runs:
            return None
        n = len(polled)
        last = -1
        for schema, values, rows in runs:
            if (
                schema is None
                or schema.type is not Type.STRUCT
                or len(rows) == 0
                or len(rows) != values.num_rows
                or rows[0] <= last
                or (len(rows) > 1 and not (np.diff(rows) > 0).all())
            ):
                return None
            last = rows[-1]
        if last >= n:
            return None
        first = polled[0].offset
        if polled[-1].offset - first == n - 1:  # no gaps (not compacted): no pass needed
            offsets = np.arange(first, first + n, dtype=np.int64)
        else:
            offsets = np.fromiter(map(_offset_of, polled), np.int64, n)
        stamps = np.fromiter(map(_timestamp_of, polled), np.int64, n)
        # Records without a value are in no run; each goes with the batch whose rows
        # follow it (trailing ones with the last), so batches do not overlap.
        owner = tombstones = None
        if sum(len(rows) for _, _, rows in runs) != n:
            missing = np.ones(n, dtype=bool)
            for _, _, rows in runs:
                missing[rows] = False
            tombstones = np.flatnonzero(missing)
            lasts = np.array([rows[-1] for _, _, rows in runs], dtype=np.int64)
            owner = np.minimum(np.searchsorted(lasts, tombstones), len(runs) - 1)
        out = []
        for k, (schema, values, rows) in enumerate(runs):
            every = len(rows) == n  # the usual case: one run, no tombstones, no copy
            batch = SinkBatch(
                topic=tp.topic,
                partition=tp.partition,
                value_schema=schema,
                values=values,
                offsets=offsets if every else offsets[rows],
                timestamps=stamps if every else stamps[rows],
            )
            if tombstones is not None:
                batch.tombstones = offsets[tombstones[owner == k]]
            out.append(batch)
        return out

    def _convert_and_transform(self, chunks: list[Chunk]) -> list[SinkRecord]:
        out: list[SinkRecord] = []
        for tp, polled in chunks:  # one topic per chunk: it converts as a batch
            out.extend(self._convert_topic(tp.topic, polled))
        if self._transform is None:
            return out
        transformed = []
        for rec in out:
            ok, result = self._errors.transform(
                self._transform, rec, lambda rec=rec: self._context_of(rec)
            )
            if ok and result is not None:
                transformed.append(result)
        return transformed

    def _convert_topic(self, topic: str, raw: list[Record]) -> list[SinkRecord]:
        try:
            raw_keys = [r.key for r in raw]
            if raw_keys.count(None) == len(raw_keys):  # no keys: skip the converter
                keys: list[SchemaAndValue] = [_NULL] * len(raw)
            else:
                keys = self._key_converter.to_connect_batch(topic, raw_keys)
            values = self._value_converter.to_connect_batch(topic, [r.value for r in raw])
            headers = [self._headers(topic, r) if r.headers else Headers() for r in raw]
        except Exception:
            return [rec for rec in map(self._convert_one, raw) if rec is not None]
        return _sink_records(raw, keys, values, headers)

    def _convert_one(self, r: Record) -> SinkRecord | None:
        def context() -> dict[str, Any]:
            return {
                "topic": r.topic,
                "partition": r.partition,
                "offset": r.offset,
                "raw_key": r.key,
                "raw_value": r.value,
                "raw_headers": r.headers,
                "record": r,
            }

        ok, key = self._errors.execute(
            Stage.KEY_CONVERTER,
            type(self._key_converter).__name__,
            lambda: self._key_converter.to_connect_data(r.topic, r.key),
            context,
        )
        if not ok:
            return None
        ok, value = self._errors.execute(
            Stage.VALUE_CONVERTER,
            type(self._value_converter).__name__,
            lambda: self._value_converter.to_connect_data(r.topic, r.value),
            context,
        )
        if not ok:
            return None
        ok, headers = self._errors.execute(
            Stage.HEADER_CONVERTER,
            type(self._header_converter).__name__,
            lambda: self._headers(r.topic, r),
            context,
        )
        if not ok:
            return None
        return SinkRecord(
            topic=r.topic,
            kafka_partition=r.partition,
            key_schema=key.schema,
            key=key.value,
            value_schema=value.schema,
            value=value.value,
            timestamp=r.timestamp,
            headers=headers,
            kafka_offset=r.offset,
        )

    def _headers(self, topic: str, r: Record) -> Headers:
        headers = Headers()
        for name, data in r.headers:
            converted = self._header_converter.to_connect_header(topic, name, data)
            headers.add(name, converted.value, converted.schema)
        return headers

    def _context_of(self, rec: SinkRecord) -> dict[str, Any]:
        raw = self._raw_of(rec)
        return {
            "topic": rec.original_topic or rec.topic,
            "partition": rec.original_kafka_partition
            if rec.original_kafka_partition is not None
            else rec.kafka_partition,
            "offset": rec.original_kafka_offset
            if rec.original_kafka_offset is not None
            else rec.kafka_offset,
            "raw_key": raw.key if raw else None,
            "raw_value": raw.value if raw else None,
            "raw_headers": raw.headers if raw else (),
            "record": rec,
        }

    def _raw_of(self, rec: SinkRecord) -> Record | None:
        """The record's original bytes, read back from the log (for the DLQ)."""
        tp = rec.topic_partition
        offset = (
            rec.original_kafka_offset if rec.original_kafka_offset is not None else rec.kafka_offset
        )
        try:
            found = self._data_log.read(tp.topic, tp.partition, offset, max_records=1)
        except Exception:
            return None
        return found[0] if found and found[0].offset == offset else None

    def report_errant(self, record: SinkRecord, error: BaseException) -> None:
        """The ErrantRecordReporter's work: log and/or dead-letter, per `errors.*`."""
        ctx = ErrorContext(Stage.TASK_PUT, ERRANT_RECORD_CLASS, error, **self._context_of(record))
        if self._errors.policy.log_errors:
            _log.error(
                "task %s reported an errant record at %s-%s@%s: %s",
                self.name,
                ctx.topic,
                ctx.partition,
                ctx.offset,
                error,
            )
        if self._dlq is not None:
            self._dlq(ctx)
        if not self._errors.policy.tolerate_all:
            # as Kafka's reporter: reported (logged, dead-lettered), then the task fails
            raise _ToleranceExceeded(
                f"Tolerance exceeded in error handler: errant record at "
                f"{ctx.topic}-{ctx.partition}@{ctx.offset} with errors.tolerance=none"
            ) from error

    # ---------------------------------------------------------------- commit

    def _maybe_commit(self) -> None:
        if self.commit_requested or time.monotonic() - self._last_commit >= self._flush_interval_s:
            self.commit_offsets()

    def commit_offsets(self, *, only: set[TopicPartition] | None = None) -> None:
        """See the module docstring."""
        self.commit_requested = False
        self._last_commit = time.monotonic()
        consumed = {tp: o for tp, o in self._consumed.items() if only is None or tp in only}
        if not consumed or self.lease_lapsed():
            return
        started = time.perf_counter()
        ok = False
        try:
            # Step 1
            safe = self.plugin.pre_commit(dict(consumed))
            changed = {}
            for tp, offset in safe.items():
                done = consumed.get(tp)
                if done is None:
                    continue  # not held by this task (any more): not its to commit
                if offset > done:
                    _log.warning(
                        "task %s: pre_commit() returned offset %d for %s, past the %d "
                        "consumed; committing %d",
                        self.name,
                        offset,
                        tp,
                        done,
                        done,
                    )
                    offset = done
                if self._committed.get(tp) != offset:
                    changed[tp] = offset
            if not changed:
                ok = True
                return
            # Step 2
            if self._dlq is not None:
                self._dlq.flush()
            # Step 3
            flush_started = time.perf_counter()
            try:
                self._data_log.commit_offsets(
                    self.group, {LogTopicPartition(*tp): o for tp, o in changed.items()}
                )
            except LogError as exc:
                # Why: as in Kafka Connect, a refused commit (the group rebalancing, the
                # coordinator away) is not the task's failure: the records stay
                # delivered, and the next commit carries the offsets again.
                _log.warning("task %s: offset commit failed, will retry: %s", self.name, exc)
                return
            self.metrics.fsync(time.perf_counter() - flush_started)
            self._committed.update(changed)
            ok = True
        finally:
            self.metrics.commit(time.perf_counter() - started, ok=ok)
