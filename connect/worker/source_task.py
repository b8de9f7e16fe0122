"""Runs a SourceTask: poll → transform → convert → append to the log → commit offsets.

One iteration (numbered as in the code):
1. `poll()` the plugin task. RetriableError: try again after a short backoff.
2. Transform each record (errors per `errors.*`; a dropped record still counts as
   processed, so its source offset moves on).
3. Convert keys, values and headers, one batch per topic (the converters' batch entry
   points; a failing batch is redone record by record under the error policy:
   `connect.worker.source_convert`).
4. Append one batch per (topic, partition); the partition is the record's own, else
   Kafka's murmur2 of the key bytes, else one partition per poll round-robin. On Kafka
   an append waits out any outage, until the task stops (`connect.worker.source_appends`).
5. Remember each source partition's latest offset, and queue the acknowledgement of
   the appended records (`commit_record` and its batch forms, only if the task
   overrides one) for when they are durable: see "Acknowledgements" below.

A `SourceBatch` in what `poll()` returns (Arrow columns for many records) takes the
same steps on its columns (`_send_batch`): the chain's `apply_batch`, the converters'
`from_arrow`, the partitioner's batch hash, one append per partition. Wherever a stage
answers that it cannot (NotImplemented, None) or fails, the batch becomes its
`records()` and takes the steps above from the start, so the error policy and the
dead-letter queue see records exactly as they would have.

Offset commit, every `offset.flush.interval.ms`, on a clean stop and after a failure:
1. fsync every log partition written since the last commit;
2. acknowledge the records queued in step 5 (`commit_record`, ...): step 1 made them
   durable;
3. write the remembered offsets to the offset store (fsynced there);
4. call the task's `commit()`.
So a committed source offset never points past records a crash could lose. A step 3
the log cannot take (`LogUnavailableError`: a Kafka broker away) fails nothing, as in
Kafka Connect: the records are in the log already, only their offsets wait, so the
offsets are kept, newer ones taking their place, and written at the next flush; one
warning per outage. A clean stop while that lasts does not try again (each try waits
the log's delivery timeout): it says which offsets it leaves uncommitted, and a
restart polls their records again (at-least-once). After a
failure the same commit is safe (Kafka's WorkerSourceTask makes it too): step 5 above
remembers a poll's offsets only once every record of it is in the log (or dropped by
the error policy), so a poll, a send or an append that raised left nothing remembered
past its records, and what was remembered is what a restart must not write again.

Acknowledgements: `commit_record` (and its batch forms) is called once a record is
durable, so it waits for an fsync that covers it: step 2 of the offset commit, or
sooner (steps 1 and 2 alone, `_acknowledge`) when too many wait or for too long. The
queue and why it is bounded so: `connect.worker.source_acks`.

Exactly-once (`exactly.once.source.support=enabled`): the same steps 1 to 5, but every
append goes into the task's open transaction and the offset commit is the
transaction's commit, with the offsets inside it, at the connector's transaction
boundary; acknowledgements wait for that commit. The transactions' own steps:
`connect.worker.source_transactions`. The at-least-once path is untouched by it: one
branch per poll, none per record.
"""

from __future__ import annotations

import contextlib
import logging
import operator
import time
from collections.abc import Callable, Mapping
from typing import Any

from connect.api import (
    Converter,
    HeaderConverter,
    RetriableError,
    SourceRecord,
    SourceTask,
)
from connect.api.batches import SourceBatch
from connect.errors import RetryWithTolerance
from connect.metrics.task import TaskMetrics
from connect.storage import OffsetStore, partition_key
from connect.worker.gc_freeze import freeze_long_lived
from connect.worker.source_acks import Acknowledgements, Landed
from connect.worker.source_appends import source_append, stop_ends_append
from connect.worker.source_context import OffsetReader, TaskContext
from connect.worker.source_convert import SourceConverter
from connect.worker.source_transactions import ExactlyOnceSteps, SourceTransactions
from connect.worker.task_base import StatusListener, WorkerTask
from log import KeyPartitioner, Log, LogUnavailableError, TopicExistsError

__all__ = ["WorkerSourceTask"]

_log = logging.getLogger("connect.worker")

Transform = Callable[[SourceRecord], SourceRecord | None]
#: Creates a topic the first time a source writes to it: (topic) -> None.
TopicCreator = Callable[[str], None]


_SOURCE_PARTITION = operator.attrgetter("source_partition")
_KAFKA_PARTITION = operator.attrgetter("kafka_partition")
_TIMESTAMP = operator.attrgetter("timestamp")
_TOPIC = operator.attrgetter("topic")


class WorkerSourceTask(ExactlyOnceSteps, WorkerTask):
    def __init__(
        self,
        connector: str,
        task: int,
        plugin: SourceTask,
        props: Mapping[str, str],
        *,
        log: Log,
        offsets: OffsetStore,
        key_converter: Converter,
        value_converter: Converter,
        header_converter: HeaderConverter,
        transform: Transform | None,
        errors: RetryWithTolerance,
        create_topic: TopicCreator,
        offset_flush_interval_ms: int,
        on_status: StatusListener,
        paused: bool = False,
        on_topic: Callable[[str], None] | None = None,
        transactions: SourceTransactions | None = None,
        delivery_timeout_ms: int = 0,
    ) -> None:
        super().__init__(connector, task, on_status=on_status, paused=paused)
        #: Exactly-once: appends go into the task's transactions (module docstring).
        self._txn = transactions
        append = source_append(log, delivery_timeout_ms, self._stopping)
        self._append_records = append if transactions is None else transactions.append
        self._on_topic = on_topic
        self.plugin = plugin
        self.props = dict(props)
        self._data_log = log  # the records' log; `_log` is this module's logger
        self._offsets = offsets
        self._converter = SourceConverter(key_converter, value_converter, header_converter, errors)
        self._transform = transform
        self._errors = errors
        self._create_topic = create_topic
        self._flush_interval_s = offset_flush_interval_ms / 1000
        self._last_commit = time.monotonic()
        self._pending: dict[bytes, tuple[Mapping[str, Any], Mapping[str, Any] | None]] = {}
        #: When the offset commits began failing for want of the log (None: they go through).
        self._commits_failing_since: float | None = None
        self._known_topics: dict[str, int] = {}
        self._keys = KeyPartitioner()
        self._round_robin = 0
        self._wants_commit_record = (
            type(plugin).commit_record is not SourceTask.commit_record
            or type(plugin).commit_records is not SourceTask.commit_records
            or type(plugin).commit_batch is not SourceTask.commit_batch
        )
        self.metrics = TaskMetrics("source")
        self._acks = Acknowledgements(log, self.metrics)

    @property
    def records_polled(self) -> int:
        return self.metrics.records_polled

    @property
    def records_written(self) -> int:
        return self.metrics.records_written

    def metrics_snapshot(self) -> dict[str, Any]:
        """The task's counters with its error handler's (see connect.metrics.task)."""
        return self.metrics.snapshot(
            record_failures=self._errors.errors_total,
            records_skipped=self._errors.records_skipped,
        )

    # ------------------------------------------------------------------ lifecycle

    def initialize_and_start(self) -> None:
        txn = self._txn
        if txn is not None:
            txn.start()  # fences the task's predecessor, then reads the offsets back
        reader = OffsetReader(txn or self._offsets, self.connector)
        self.plugin.initialize(TaskContext(self.props, reader, txn))
        self.plugin.start(self.props)
        freeze_long_lived("start")

    def iterate(self) -> None:
        if self._txn is not None:
            return self._iterate_exactly_once(self._txn)
        records = self._poll()
        if records:
            if not self.may_write():
                return  # fenced: the work's next owner polls these again from the offsets
            with stop_ends_append(self._stopping):
                self._send_polled(records)
        if self._acks.due():
            self._acknowledge()
        self._maybe_commit()
        return None

    def _poll(self) -> list[Any] | None:
        """Step 1, counted in the task's metrics."""
        started = time.perf_counter()
        try:
            records = self.plugin.poll()
        except RetriableError as exc:
            _log.warning("task %s: retriable error from poll(): %s", self.name, exc)
            self._stopping.wait(0.1)
            records = None
        if records:
            metrics = self.metrics
            metrics.batch(time.perf_counter() - started)
            if SourceBatch in set(map(type, records)):
                metrics.records_polled += sum(
                    len(r) if type(r) is SourceBatch else 1 for r in records
                )
            else:
                metrics.records_polled += len(records)
        return records

    def _send_polled(self, records: list[Any]) -> None:
        """Steps 2 to 5 for what a poll returned."""
        if SourceBatch in set(map(type, records)):
            self._send_mixed(records)
        else:
            self._send(records)

    def commit_final(self) -> None:
        if self._txn is not None and self._txn.boundary == "connector":
            return self._commit_final_by_connector(self._txn)
        if self._txn is None and self._commits_failing_since is not None and self._pending:
            # A stop during an outage (see the module docstring): no try that would
            # hold the stop for the log's delivery timeout.
            _log.warning(
                "task %s: stopping with the offsets of %d source partition(s) not "
                "committed (the log could not be reached by the commits of the last "
                "%.0f s): a restart polls their records again",
                self.name,
                len(self._pending),
                time.monotonic() - self._commits_failing_since,
            )
            return None
        self.commit_offsets()
        return None

    def commit_on_pause(self) -> None:
        """A pause commits the open transaction whatever the boundary (Kafka's: a
        paused task must not hold readers of its topics behind an open one)."""
        self.commit_offsets()

    def commit_after_failure(self) -> None:
        """The offsets of what is already in the log (see the module docstring): a
        restart goes on after them rather than writing them again. Exactly-once: the
        open transaction is aborted instead (a failed task commits nothing)."""
        if self._txn is not None:
            self._abort_transaction()
            return
        self.commit_offsets()

    def on_stop_requested(self) -> None:
        # The plugin's poll may be waiting (a second for the file source): wake it.
        try:
            self.plugin.wakeup()
        except Exception:
            _log.exception("task %s: wakeup() failed; its poll ends on its own", self.name)

    def stop_plugin(self) -> None:
        self.plugin.stop()

    def close_resources(self) -> None:
        if self._txn is not None:
            self._txn.close()
        self._converter.close()

    # ---------------------------------------------------------------- sending

    def _send_mixed(self, items: list[Any]) -> None:
        """Records and batches in poll order: runs of records the usual way, each
        batch columnar where it can be."""
        run: list[SourceRecord] = []
        for item in items:
            if type(item) is SourceBatch:
                if run:
                    self._send(run)
                    run = []
                if len(item):
                    self._send_batch(item)
            else:
                run.append(item)
        if run:
            self._send(run)

    def _send_batch(self, batch: SourceBatch) -> None:
        """Steps 2–5 on columns (see the module docstring); `records()` where a stage
        cannot."""
        out: Any = batch
        try:
            if self._transform is not None:
                out = self._transform.apply_batch(batch)  # type: ignore[attr-defined]
            if out is NotImplemented or (out is not None and len(out) not in (0, len(batch))):
                return self._send(batch.records())
            if out is None or not len(out):
                self._remember_offsets([batch])
                if self._wants_commit_record:
                    self._acks.queue(self.plugin.commit_batch, batch, [None] * len(batch))
                return None
            encoded = self._converter.encode_batch(out)
        except Exception as exc:  # the record path reports it under the error policy
            _log.debug("task %s: a batch goes record by record: %s", self.name, exc)
            encoded = None
        if encoded is None:
            return self._send(batch.records())
        keys, values = encoded
        import numpy as np  # loaded by the batch's own columns already

        topic = out.topic
        count = self._partition_count(topic)
        if out.kafka_partition is not None:
            self._append_batch(batch, out, p=out.kafka_partition, keys=keys, values=values)
        elif keys is None or count == 1:
            self._round_robin = (self._round_robin + 1) % count
            self._append_batch(batch, out, p=self._round_robin, keys=keys, values=values)
        else:
            parts = self._keys.partitions(keys, count)
            for p in np.unique(parts).tolist():
                rows = np.flatnonzero(parts == p).tolist()
                pick = operator.itemgetter(*rows)
                sub_keys = list(pick(keys)) if len(rows) > 1 else [keys[rows[0]]]
                sub_values = list(pick(values)) if len(rows) > 1 else [values[rows[0]]]
                self._append_batch(batch, out, p=p, keys=sub_keys, values=sub_values, rows=rows)
        self._remember_offsets([batch])
        return None

    def _append_batch(
        self,
        original: SourceBatch,
        batch: SourceBatch,
        *,
        p: int,
        keys: list[bytes] | None,
        values: list[bytes],
        rows: list[int] | None = None,
    ) -> None:
        """Append rows `rows` (None: all) of the transformed `batch`, already encoded;
        `commit_records` gets the `original` rows, as the record path gives it the
        records before transforms."""
        topic = batch.topic
        # A batch without its own timestamp: the log stamps it (KafkaLog then produces it
        # a slice at a time); acknowledgements carry the stamps, so then they are given.
        stamps = None
        if batch.timestamp is not None or self._wants_commit_record:
            stamp = int(time.time() * 1000) if batch.timestamp is None else batch.timestamp
            stamps = [stamp] * len(values)
        offsets = self._append_records(topic, p, values, keys=keys, timestamps=stamps)
        self._acks.written.add((topic, p))
        self.metrics.records_written += len(values)
        self.metrics.log_appends += 1
        if self._wants_commit_record:
            if rows is not None:
                import numpy as np

                mask = np.zeros(len(original), dtype=bool)
                mask[rows] = True
                original = original.filter(mask)
            landed = Landed(topic, p, offsets, stamps)  # type: ignore[arg-type]
            self._acks.queue(self.plugin.commit_batch, original, landed)

    def _send(self, records: list[SourceRecord]) -> None:
        # Step 2
        transform = self._transform
        kept: list[SourceRecord] = []
        originals: list[SourceRecord] = []
        dropped: list[SourceRecord] = []
        if transform is None:
            kept = originals = records
        else:
            for rec in records:
                ok, out = self._errors.transform(
                    transform, rec, lambda rec=rec: {"record": rec, "topic": rec.topic}
                )
                if ok and out is not None:
                    kept.append(out)
                    originals.append(rec)
                else:
                    dropped.append(rec)
        # Steps 3 and 4
        topics = list(map(_TOPIC, kept))
        if topics and topics.count(topics[0]) == len(topics):
            self._send_topic(topics[0], kept, originals)  # one topic: no regrouping
        else:
            by_topic: dict[str, list[int]] = {}
            for i, topic in enumerate(topics):
                by_topic.setdefault(topic, []).append(i)
            for topic, indexes in by_topic.items():
                self._send_topic(topic, [kept[i] for i in indexes], [originals[i] for i in indexes])
        # Step 5
        self._remember_offsets(records)
        if self._wants_commit_record and dropped:
            self._acks.queue(self.plugin.commit_records, dropped, [None] * len(dropped))

    def _partition_count(self, topic: str) -> int:
        count = self._known_topics.get(topic)
        if count is None:
            with contextlib.suppress(TopicExistsError):
                self._create_topic(topic)
            count = self._known_topics[topic] = self._data_log.partition_count(topic)
            if self._on_topic is not None:
                self._on_topic(topic)
        return count

    def _send_topic(
        self, topic: str, recs: list[SourceRecord], originals: list[SourceRecord]
    ) -> None:
        count = self._partition_count(topic)
        self._round_robin = (self._round_robin + 1) % count
        partitions = list(map(_KAFKA_PARTITION, recs))
        columns = self._converter.convert(topic, recs)
        if columns is not None:
            keys, values, headers = columns
            if partitions.count(None) == len(recs) and (
                count == 1 or keys.count(None) == len(keys)
            ):
                # The common cases (no keys, or one partition, and no partitions chosen
                # by the source): one batch, no per-record routing or key hashing.
                self._append(topic, self._round_robin, recs, originals, keys, values, headers)
                return
            converted = list(zip(range(len(recs)), keys, values, headers, strict=True))
        else:
            converted = self._converter.convert_one_by_one(topic, recs)
        groups: dict[int, list[tuple]] = {}
        for item in converted:
            p = partitions[item[0]]
            if p is None:
                p = (
                    self._keys.partition(item[1], count)
                    if item[1] is not None
                    else self._round_robin
                )
            groups.setdefault(p, []).append(item)
        for p, items in groups.items():
            self._append(
                topic,
                p,
                [recs[it[0]] for it in items],
                [originals[it[0]] for it in items],
                [it[1] for it in items],
                [it[2] for it in items],
                [it[3] for it in items],
            )

    def _append(
        self,
        topic: str,
        p: int,
        recs: list[SourceRecord],
        originals: list[SourceRecord],
        keys: list[bytes | None],
        values: list[bytes | None],
        headers: list,
    ) -> None:
        stamps = list(map(_TIMESTAMP, recs))
        timestamps = None
        if stamps.count(None) != len(stamps):
            now = int(time.time() * 1000)
            timestamps = [now if t is None else t for t in stamps]
        offsets = self._append_records(
            topic,
            p,
            values,
            keys=None if keys.count(None) == len(keys) else keys,
            timestamps=timestamps,
            headers=headers if any(headers) else None,
        )
        self._acks.written.add((topic, p))
        self.metrics.records_written += len(values)
        self.metrics.log_appends += 1
        if self._wants_commit_record:
            stamps = timestamps or [int(time.time() * 1000)] * len(values)
            self._acks.queue(
                self.plugin.commit_records, originals, Landed(topic, p, offsets, stamps)
            )

    def _remember_offsets(self, records: list[SourceRecord]) -> None:
        pending = self._pending
        partitions = list(map(_SOURCE_PARTITION, records))
        first = partitions[0] if partitions else None
        if first is not None and len(set(map(id, partitions))) == 1:
            # one partition dict for the whole batch (most sources): its last offset
            pending[partition_key(self.connector, first)] = (first, records[-1].source_offset)
            return
        last_partition: object = None
        key = b""
        for rec in records:
            partition = rec.source_partition
            if partition is None:
                continue
            if partition is not last_partition:  # most sources reuse one dict per partition
                key = partition_key(self.connector, partition)
                last_partition = partition
            pending[key] = (partition, rec.source_offset)

    # ---------------------------------------------------------------- commit

    def _acknowledge(self) -> None:
        """Steps 1 and 2 of the offset commit, without the offsets (see
        "Acknowledgements" in the module docstring)."""
        # Commit step 1
        self._acks.fsync()
        # Commit step 2
        self._acks.deliver()

    def _maybe_commit(self) -> None:
        if time.monotonic() - self._last_commit >= self._flush_interval_s:
            self.commit_offsets()

    def commit_offsets(self) -> None:
        """See the module docstring: fsync the log, acknowledge the records, write the
        offsets, then commit(). A lapsed lease does none of it: the work's next owner
        starts from the offsets committed before. A task whose acknowledgement hook
        raises still gets its offsets written (the records are in the log whatever the
        hook thinks of them; a restart must not write them again), then the error
        goes on to fail the task."""
        self._last_commit = time.monotonic()
        if self._txn is not None:
            return self._commit_transaction(self._txn)
        if self.lease_lapsed():
            return
        if not self._pending:
            if self._acks:  # records without a source offset still get theirs
                self._acknowledge()
            return
        started = time.perf_counter()
        ok = False
        hook_failed: Exception | None = None
        try:
            # Commit step 1
            self._acks.fsync()
            # Commit step 2
            try:
                self._acks.deliver()
            except Exception as exc:
                hook_failed = exc
            # Commit step 3
            pending, self._pending = self._pending, {}
            # A task's own commit: its worker's generation (0 standalone), never None,
            # which would make it an operator's edit (connect.storage.offsets).
            epoch = (self.lease.generation if self.lease is not None else None) or 0
            try:
                self._offsets.put(self.connector, pending, epoch=epoch)
                ok = True
            except LogUnavailableError as exc:
                self._pending = {**pending, **self._pending}  # newer offsets win
                self._offsets_wait(exc, time.perf_counter() - started)
        finally:
            self.metrics.commit(time.perf_counter() - started, ok=ok)
        if hook_failed is not None:
            raise hook_failed
        if not ok:
            return  # step 4 waits for offsets that are committed, as in Kafka Connect
        if self._commits_failing_since is not None:
            _log.info(
                "task %s: offsets committed again, after %.1f s",
                self.name,
                time.monotonic() - self._commits_failing_since,
            )
            self._commits_failing_since = None
        self._warm()
        # Commit step 4
        self.plugin.commit()

    def _warm(self) -> None:
        """After an offset commit (a transaction's, exactly once): the lazy imports
        and caches of the first records are in, freeze them (`connect.worker.gc_freeze`)."""
        freeze_long_lived("warm")

    def _offsets_wait(self, exc: LogUnavailableError, waited_s: float) -> None:
        """Step 3 could not reach the log (after `waited_s`): warn once per outage (see
        the module docstring)."""
        self._last_commit = time.monotonic()  # the next try a whole interval later
        if self._commits_failing_since is None:
            self._commits_failing_since = self._last_commit - waited_s
            _log.warning(
                "task %s: could not commit the offsets of %d source partition(s), the log "
                "cannot be reached (%s); they are kept and retried at the next flush",
                self.name,
                len(self._pending),
                exc,
            )
