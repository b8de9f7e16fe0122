"""Runs a SinkTask: consume → convert → transform → put → pre_commit → commit.

The task consumes its topics as the consumer group `connect-<connector>`; the tasks of
one connector share the topics' partitions through the group (see log.group). Its
parts, one job each: `sink_convert` (records and Arrow batches from the log's),
`sink_retry` (a delivery kept for redelivery and the waits: the back-off after a
RetriableError, riding out a log that cannot be reached), `sink_offsets` (consumed
and committed offsets, and the commit protocol). This module runs the loop.

One iteration (numbered as in the code):
1. If the last delivery raised RetriableError (or the task was fenced before it),
   back off — `context.timeout()` when the task set one, else 100 ms doubling up to
   1 s — with every assigned partition paused, polling meanwhile so the group goes
   on: a rebalance revokes partitions here, and what it takes leaves the pending
   delivery (the next owner reads it from the committed offset). Then deliver what
   remains again; nothing new is consumed meanwhile.
2. Poll the consumer, a chunk of records per partition (on the batch path of step 3,
   each batch's values as the file log stores them: `Consumer.poll_values`). A log
   that cannot be reached (a Kafka broker away: LogUnavailableError) is no failure:
   the task waits a back-off and polls again for as long as it lasts, as Kafka
   Connect's tasks ride out broker outages (one warning, not one per try).
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

Offsets are committed (`sink_offsets`) every `offset.flush.interval.ms`, on
`context.request_commit()`, before partitions are revoked, and on a clean stop. On
Kafka "before revoked" means inside the coordinator's revoke, before the partitions
move (log.kafka.groups): their next owner starts where this task stopped. A lost
assignment (the session expired) closes the partitions without a commit.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from connect.api import (
    ConfigError,
    ConnectError,
    Converter,
    ErrantRecordReporter,
    HeaderConverter,
    RetriableError,
    SinkRecord,
    SinkTask,
    SinkTaskContext,
    TopicPartition,
)
from connect.errors import (
    ERRANT_RECORD_CLASS,
    DeadLetterQueueReporter,
    ErrorContext,
    RetryWithTolerance,
    Stage,
)
from connect.metrics.task import TaskMetrics
from connect.worker.sink_convert import Chunk, SinkConverter, Transform, chunk_end, records_of
from connect.worker.sink_offsets import SinkOffsets
from connect.worker.sink_retry import Delivery, LogOutage, Redelivery
from connect.worker.task_base import StatusListener, WorkerTask
from log import Consumer, Log, LogUnavailableError
from log import TopicPartition as LogTopicPartition

if TYPE_CHECKING:  # numpy and pyarrow load with the first batch (a record-only sink never)
    from connect.api.sink_batch import SinkBatch

__all__ = ["WorkerSinkTask"]

_log = logging.getLogger("connect.worker")


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
        self._owner.redelivery.backoff_s = max(0, timeout_ms) / 1000

    def assignment(self) -> set[TopicPartition]:
        return {TopicPartition(*tp) for tp in self._owner.consumer.assignment()}

    def pause(self, *partitions: TopicPartition) -> None:
        paused = [LogTopicPartition(*tp) for tp in partitions]
        self._owner.consumer.pause(paused)
        # The task's own pause outlives a redelivery's (see Redelivery.back_off).
        self._owner.redelivery.paused.difference_update(paused)

    def resume(self, *partitions: TopicPartition) -> None:
        self._owner.consumer.resume([LogTopicPartition(*tp) for tp in partitions])

    def request_commit(self) -> None:
        self._owner.offsets.requested = True

    @property
    def errant_record_reporter(self) -> ErrantRecordReporter | None:
        return self._owner.errant_reporter


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
        isolation_level: str = "read_uncommitted",
    ) -> None:
        super().__init__(connector, task, on_status=on_status, paused=paused)
        self._on_topic = on_topic
        self.plugin = plugin
        self.props = dict(props)
        self._data_log = log  # the records' log; `_log` is this module's logger
        self._topics = list(topics)
        self._regex = re.compile(topics_regex) if topics_regex else None
        self._check_dlq(dlq)
        self._errors = errors
        self._dlq = dlq
        self.errant_reporter = (
            _Reporter(self)
            if (dlq or errors.policy.log_errors or errors.policy.tolerate_all)
            else None
        )
        self.convert = SinkConverter(
            self.name,
            log,
            key_converter=key_converter,
            value_converter=value_converter,
            header_converter=header_converter,
            transform=transform,
            errors=errors,
        )
        self.group = f"connect-{connector}"
        self.consumer = Consumer(
            log,
            group_id=self.group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            max_poll_records=max_poll_records,
            member_id=f"{connector}-{task}",
            # read_committed: only what exactly-once sources committed (the worker
            # decides: connect.worker.exactly_once_config.sink_isolation_level).
            isolation_level=isolation_level,
        )
        #: Arrow batches for the task: it takes them and nothing works on records in
        #: between (see the module docstring, step 3).
        self.batch_path = transform is None and (
            type(plugin).put_batches is not SinkTask.put_batches
        )
        self.redelivery = Redelivery(self.consumer, self._stopping)
        self.outage = LogOutage(self.name, self._stopping)
        self.metrics = TaskMetrics("sink")
        self.offsets = SinkOffsets(
            self.name,
            plugin=plugin,
            log=log,
            group=self.group,
            dlq=dlq,
            metrics=self.metrics,
            outage=self.outage,
            lease_lapsed=self.lease_lapsed,
            flush_interval_ms=offset_flush_interval_ms,
        )
        self.rewinds: dict[TopicPartition, int] = {}
        self._last_topic_scan = 0.0

    def _check_dlq(self, dlq: DeadLetterQueueReporter | None) -> None:
        """Refuse a dead-letter topic the connector consumes. Why: a record
        dead-lettered there would be read back, fail again and be dead-lettered again,
        without end (Kafka refuses this config too)."""
        if dlq is None:
            return
        if dlq.topic in self._topics:
            consumed_by = "topics"
        elif self._regex is not None and self._regex.fullmatch(dlq.topic):
            consumed_by = "topics.regex"
        else:
            return
        raise ConfigError(
            "errors.deadletterqueue.topic.name",
            dlq.topic,
            f"the connector consumes that topic ({consumed_by}); a record dead-lettered "
            "there would be read, fail and be dead-lettered again without end",
        )

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
            sorted(set(topics)),
            on_assign=self._on_assign,
            on_revoke=self._on_revoke,
            on_lost=self._on_lost,
        )
        self._subscribed = set(topics)
        self._last_topic_scan = time.monotonic()

    def _on_assign(self, partitions: set[LogTopicPartition]) -> None:
        if self._on_topic is not None:
            for topic in sorted({tp.topic for tp in partitions}):
                self._on_topic(topic)
        self.plugin.open(sorted(TopicPartition(*tp) for tp in partitions))

    def _on_revoke(self, partitions: set[LogTopicPartition]) -> None:
        """Commit what the task took of the revoked partitions, then close them. On
        Kafka this runs inside the coordinator's revoke, before the partitions move
        (log.kafka.groups): their next owner starts where this task stopped."""
        self._close_partitions(partitions, commit=True)

    def _on_lost(self, partitions: set[LogTopicPartition]) -> None:
        """The group took the partitions already (the session expired): nothing can
        be committed; their next owner reads what came after the last commit again."""
        self._close_partitions(partitions, commit=False)

    def _close_partitions(self, partitions: set[LogTopicPartition], *, commit: bool) -> None:
        revoked = {TopicPartition(*tp) for tp in partitions}
        self.redelivery.revoked(partitions, revoked)
        if commit:
            self.offsets.commit(only=revoked)
        self.plugin.close(sorted(revoked))
        self.offsets.forget(revoked)  # the next owner commits from here on

    def iterate(self) -> None:
        redelivery = self.redelivery
        chunks: list[Chunk] | None = None
        try:
            self._scan_topics()
            if redelivery.pending is not None:
                # Step 1
                redelivery.back_off()
            else:
                self._apply_rewinds()
                # Step 2
                chunks = self._poll()
        except LogUnavailableError as exc:
            # Step 2: not a failure. Only the log's reads are caught: nothing polled is
            # lost with the error (a poll hands over what it read before one), and a
            # failing put() or dead-letter write stays the task's failure.
            self.outage.failed(exc)
            return
        if chunks is None:
            pending, redelivery.pending = redelivery.pending, None
            if pending is not None and not self._stopping.is_set():
                self._deliver(pending)
            else:
                redelivery.pending = pending  # stopping: delivered by the next owner
        else:
            if chunks or self.consumer.assignment() - self.consumer.paused():
                self.outage.ok()  # records, or reads that answered: the log is there
            self._deliver(self._delivery_of(chunks))
        self.offsets.maybe_commit()

    def _poll(self) -> list[Chunk]:
        """Step 2: a chunk per partition; on the batch path each batch's values as
        the log stores them (`Consumer.poll_values`), when the log reads them so."""
        if self.batch_path and self.consumer.values_readable:
            return self.consumer.poll_values(0.2)
        return self.consumer.poll_chunks(0.2)

    def _scan_topics(self) -> None:
        """With topics.regex: subscribe again when new topics match (every 5 s)."""
        if self._regex is None or time.monotonic() - self._last_topic_scan <= 5:
            return
        matching = {t for t in self._data_log.list_topics() if self._regex.fullmatch(t)}
        if not matching <= self._subscribed:
            self._subscribe()
        self._last_topic_scan = time.monotonic()

    def _delivery_of(self, chunks: list[Chunk]) -> Delivery:
        """Step 3: the task's batches and records of a poll's chunks. None polled
        makes an empty delivery: as Kafka does, put() comes after every poll, so a
        sink on an idle topic still gets to flush buffers, time out batches or fail."""
        if not chunks:
            return Delivery([], [], [], {})
        ends = [chunk_end(chunk) for chunk in chunks]
        self.metrics.records_read += sum(count for count, _ in ends)
        batches: list[SinkBatch] = []
        batched: list[Chunk] = []
        rest = chunks
        if self.batch_path:
            rest = []
            for chunk in chunks:
                made = self.convert.batches_of(*chunk)
                if made is None:
                    rest.append(records_of(chunk))
                else:
                    batches += made
                    batched.append(chunk)
        records = self.convert.convert_and_transform(rest) if rest else []
        offsets = {
            TopicPartition(tp.topic, tp.partition): end
            for (tp, _), (_, end) in zip(chunks, ends, strict=True)
        }
        return Delivery(batches, batched, records, offsets)

    def _apply_rewinds(self) -> None:
        if not self.rewinds:
            return
        rewinds, self.rewinds = self.rewinds, {}
        for tp, offset in rewinds.items():
            with contextlib.suppress(ValueError):  # not assigned (any more): ignore
                self.consumer.seek(LogTopicPartition(*tp), offset)
                self.offsets.consumed[tp] = offset

    def _deliver(self, delivery: Delivery) -> None:
        """Step 4: `put_batches(batches)` when there are any, then `put(records)`;
        `batched` are the chunks the batches were made of, converted to records should
        the task answer NotImplemented after all. Only a delivery the task accepted
        moves the consumed offsets."""
        batches, records = delivery.batches, delivery.records
        if (batches or records) and not self.may_write():
            # Fenced while stopping: nothing is committed past these records, and the
            # next owner reads them again from the committed offset.
            self.redelivery.pending = delivery
            return
        started = time.perf_counter()
        delivered = bool(records)
        consumed = self.offsets.consumed
        try:
            if batches:
                if self.plugin.put_batches(batches) is NotImplemented:
                    _log.info("task %s: put_batches() is not implemented; using put()", self.name)
                    self.batch_path = False
                    batched = list(map(records_of, delivery.batched))
                    records = self.convert.convert_and_transform(batched) + records
                    delivery.records = records
                else:
                    self.metrics.records_sent += sum(b.records_in for b in batches)
                    delivered = True
                    # Accepted: their partitions are consumed whatever put() does next
                    # (a retry below is put()'s alone; each chunk went one way).
                    offsets = delivery.offsets
                    for tp, _ in delivery.batched:
                        key = TopicPartition(tp.topic, tp.partition)
                        consumed[key] = offsets.pop(key)
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
            self.redelivery.pending = delivery
            return
        consumed.update(delivery.offsets)
        self.redelivery.accepted()

    def commit_offsets(self, *, only: set[TopicPartition] | None = None) -> None:
        """Commit what is safe to commit now (see connect.worker.sink_offsets)."""
        self.offsets.commit(only=only)

    def commit_final(self) -> None:
        self.offsets.commit()

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
        self.convert.close()

    def report_errant(self, record: SinkRecord, error: BaseException) -> None:
        """The ErrantRecordReporter's work: log and/or dead-letter, per `errors.*`."""
        context = self.convert.context_of(record)
        ctx = ErrorContext(Stage.TASK_PUT, ERRANT_RECORD_CLASS, error, **context)
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
