"""`df.write.format("tributary")` and `df.writeStream.format("tributary")`: Spark writes
to the log, each batch exactly once (options: `writer_options`; encoding:
`writer_encode`).

Why a staging area. Spark runs `write` in the tasks, on executors, and `commit` once
all tasks are done, on the driver — for a stream, in a Python process started for
that commit alone. A transaction of the log cannot pass between processes (a new
producer of the same transactional.id aborts the open one, on Kafka as on FileLog),
and a transaction per task would make a batch visible a task at a time. So tasks
stage their encoded records, and the commit appends them all in one transaction,
with the marker that makes a replayed batch recognisable in the same transaction.

Protocol (numbered as `# Step N` below):
  1. Each task encodes its rows (the costly part, in parallel) and stages them as one
     Arrow IPC file `<staging.dir>/<write id>/<task>-<attempt>-<uuid>.arrow`, its
     batches each of one topic partition; its commit message names the file, its
     row count and the streaming query's id (Spark's `sql.streaming.queryId`). A
     failed or speculative attempt's file is in no message and is never appended.
  2. (Streams.) The commit reads the marker: the consumer group
     `tributary-spark-<query id>` holds, as its offset of `__spark_batches`
     partition 0, the next batch id the query must write. A batch id below it was
     written before — Spark re-runs the last batch it planned after a restart from
     its checkpoint, also when it had committed it but not yet noted so — and is
     skipped: its staged files deleted, nothing appended.
  3. The transactional producer `tributary-spark-<query id>` (a batch write: the
     write's own id) is initialised, which fences an earlier commit process of the
     query that died mid-transaction and aborts what it left open.
  4. Begin; every staged file's batches are appended in task order, in chunks of
     about `_CHUNK_BYTES`.
  5. (Streams.) The marker, batch id + 1, is sent to the transaction as the group's
     offset (Kafka Streams' way of committing its input position).
  6. Commit: the rows of every task and the marker become visible at once to
     read_committed readers (Connect sinks, `connect log consume`, the Spark reader
     on a FileLog) — or, after a crash before it, never.
  7. The staged files are deleted (a crash before this: the replay's step 2 does it).
  `abort` deletes the files of the tasks that finished.
A batch write (`df.write`) takes steps 1, 3, 4, 6 and 7 under an id of its own; given
`txnVersion` (a `foreachBatch` passing its batch id) all of them, under the marker of
`txnAppId` (default: the query id in `checkpointLocation`).

Staged files are not fsynced: they matter only until this run's commit. After a crash
of the machine Spark re-runs the batch (its checkpoint has no commit for it), which
stages them anew.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)

from connectors.spark.datasource.writer_encode import STAGED, Encoder
from connectors.spark.datasource.writer_options import WriterOptions, parse_writer_options

__all__ = ["MARKER_TOPIC", "TributaryBatchWriter", "TributaryStreamWriter", "marker_group"]

MARKER_TOPIC = "__spark_batches"
_CHUNK_BYTES = 4 << 20


def marker_group(query_id: str) -> str:
    """The consumer group whose offset is a query's next batch id (step 2)."""
    return f"tributary-spark-{query_id}"


@dataclass(frozen=True)
class StagedFile(WriterCommitMessage):
    """What a task staged (step 1): None as path when it had no rows."""

    path: str | None
    rows: int
    query_id: str | None


def _stage(opts: WriterOptions, write_id: str, batches: Iterator[pa.RecordBatch]) -> StagedFile:
    """Step 1, in a task."""
    from pyspark import TaskContext

    context = TaskContext.get()
    task = context.partitionId() if context is not None else 0
    attempt = context.attemptNumber() if context is not None else 0
    query = context.getLocalProperty("sql.streaming.queryId") if context is not None else None
    log = opts.open_log()
    encoder = Encoder(opts, log, task)
    path, rows, out = None, 0, None
    try:
        for batch in batches:
            for staged in encoder.encode(batch):
                if out is None:
                    directory = os.path.join(opts.staging_dir, query or write_id)
                    os.makedirs(directory, exist_ok=True)
                    path = os.path.join(directory, f"{task}-{attempt}-{uuid.uuid4().hex}.arrow")
                    out = pa.ipc.new_stream(path, STAGED)
                out.write_batch(staged)
                rows += staged.num_rows
    finally:
        if out is not None:
            out.close()
        encoder.close()
        log.close()  # type: ignore[attr-defined]
    return StagedFile(path, rows, query)


def _headers(column: pa.Array) -> list[list[tuple[str, bytes | None]]]:
    return [[(h["key"], h["value"]) for h in row or ()] for row in column.to_pylist()]


def _append_staged(producer: Any, path: str) -> int:
    """Step 4 for one file: its batches appended in chunks; the rows appended."""
    rows = 0
    with pa.ipc.open_stream(path) as reader:
        for batch in reader:
            if batch.num_rows == 0:
                continue
            topic = batch.column(0)[0].as_py()
            partition = batch.column(1)[0].as_py()
            size = batch.get_total_buffer_size()
            step = max(1, batch.num_rows * _CHUNK_BYTES // max(size, 1))
            for start in range(0, batch.num_rows, step):
                chunk = batch.slice(start, step)
                headers, stamps = chunk.column(5), chunk.column(4)
                producer.append(
                    topic,
                    partition,
                    chunk.column(3).to_pylist(),
                    keys=chunk.column(2).to_pylist(),
                    # None: every record stamped with the append's time (one field of
                    # the batch, not a column of a million ints to build and write).
                    timestamps=None if stamps.null_count == len(stamps) else stamps.to_pylist(),
                    headers=None if headers.null_count == len(headers) else _headers(headers),
                )
            rows += batch.num_rows
    return rows


def _delete(messages: Sequence[Any]) -> None:
    """Step 7 (and abort): the staged files, then their directories once empty."""
    for message in messages:
        if isinstance(message, StagedFile) and message.path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(message.path)
            # Kept while other batches' or attempts' files are there.
            with contextlib.suppress(OSError):
                os.rmdir(os.path.dirname(message.path))


def _query_id(opts: WriterOptions, messages: Sequence[Any]) -> str:
    """The streaming query's id: from the tasks, else the checkpoint's metadata."""
    for message in messages:
        if isinstance(message, StagedFile) and message.query_id:
            return message.query_id
    if opts.checkpoint is not None:
        with open(os.path.join(opts.checkpoint, "metadata"), encoding="utf-8") as f:
            return str(json.loads(f.readline())["id"])
    raise ValueError("no streaming query id: the tasks had none and no checkpointLocation")


def commit_staged(
    opts: WriterOptions,
    messages: Sequence[Any],
    transactional_id: str,
    *,
    marker: tuple[str, int] | None = None,
) -> int:
    """Steps 2–7; the rows appended (0 for a batch written before)."""
    from log import OffsetAndMetadata, TopicExistsError, TopicPartition

    log: Any = opts.open_log()
    try:
        marker_tp = TopicPartition(MARKER_TOPIC, 0)
        if marker is not None:
            with contextlib.suppress(TopicExistsError):
                log.create_topic(MARKER_TOPIC, 1, config={"cleanup.policy": "compact"})
            # Step 2
            group, batch_id = marker
            done = log.committed_offsets(group, [marker_tp]).get(marker_tp)
            if done is not None and done.offset > batch_id:
                _delete(messages)
                return 0
        # Step 3
        producer = log.transactional_producer(
            transactional_id, transaction_timeout_ms=opts.transaction_timeout_ms
        )
        try:
            producer.init_transactions()
            # Step 4
            producer.begin_transaction()
            rows = 0
            for message in sorted(
                (m for m in messages if isinstance(m, StagedFile) and m.path), key=lambda m: m.path
            ):
                rows += _append_staged(producer, message.path)
            if marker is not None:
                # Step 5
                meta = json.dumps({"batch": marker[1], "rows": rows})
                producer.send_offsets_to_transaction(
                    marker[0], {marker_tp: OffsetAndMetadata(marker[1] + 1, meta)}
                )
            # Step 6
            producer.commit_transaction()
        finally:
            producer.close()
    finally:
        log.close()
    # Step 7
    _delete(messages)
    return rows


class TributaryBatchWriter(DataSourceArrowWriter):
    """`df.write.format("tributary").mode("append")`: one transaction per write."""

    def __init__(self, options: dict[str, str]) -> None:
        self.opts = parse_writer_options(options)
        self.write_id = f"write-{uuid.uuid4().hex}"  # made in the driver, shared by tasks

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StagedFile:
        return _stage(self.opts, self.write_id, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        version = self.opts.txn_version
        if version is None:
            commit_staged(self.opts, messages, f"tributary-spark-{self.write_id}")
            return
        # A foreachBatch's write: the micro-batch's marker, as a streaming write's.
        group = marker_group(self.opts.txn_app_id or _query_id(self.opts, []))
        commit_staged(self.opts, messages, group, marker=(group, version))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        _delete(messages)


class TributaryStreamWriter(DataSourceStreamArrowWriter):
    """`df.writeStream.format("tributary")`: one transaction per micro-batch, a
    replayed batch id recognised by the query's marker."""

    def __init__(self, options: dict[str, str]) -> None:
        self.opts = parse_writer_options(options)
        self.write_id = f"stream-{uuid.uuid4().hex}"

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StagedFile:
        return _stage(self.opts, self.write_id, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        query = _query_id(self.opts, messages)
        group = marker_group(query)
        commit_staged(self.opts, messages, group, marker=(group, batchId))

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        _delete(messages)

