"""One topic partition's files: buffering, rotation, the commit protocol, recovery.

Records arrive as Arrow record batches with their log offsets and timestamps. They are
split by the partitioner into directories and buffered per directory (as Arrow data,
not Python objects). The open files of a topic partition are committed together when:
- `flush.size` records were buffered (the batch is cut at exactly that record);
- the records' timestamps span `rotate.interval.ms` (cut at the first record past it);
- a record with another schema arrives (the old files close, new ones start);
- `rotate.schedule.interval.ms` of wall-clock time passed (`commit_due`).
The first three are pure functions of the record sequence, so re-reading after a crash
cuts the same files; the last is not, and needs no determinism: recovery reads the
files, not a replay.

A schema the writer has not admitted before goes to the topic's `TableSchema` first,
before any of its rows is buffered: one the table's readers could not merge with the
files it holds stops the task (`SchemaConflictError`) with nothing of it written.

Commit (numbered as in `commit`):
1. Each open file is written whole to `+tmp/<topic>/<partition>/<uuid>.parquet`
   (fsynced), without its columns of Arrow's null type (`table_schema.stored`).
2. The intent — every (temp, final) pair — is written to
   `<logs.dir>/<topic>/<partition>/commit.intent` (temp file, fsync, rename).
3. Each temp file is renamed to its final name, which carries the offsets.
4. The intent is deleted. The partition's committed offset is the last offset + 1.

Recovery on open (numbered as in `recover`), so a crash at any point neither loses
nor duplicates a record:
1. An intent left behind is finished: temp files it names that still exist are renamed
   (step 2 had completed, so all of them were durable).
2. Other temp files of the partition are deleted: their records were never published,
   and are read again from the log.
3. The largest end offset in the names of the partition's published files is where it
   stopped; the task resumes after it (HDFS's rule: the files win over the consumer
   group's committed offset, which may lag behind them).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from connect.api import TopicPartition
from connectors.spark.config import SinkSettings
from connectors.spark.files import TMP_DIR, file_name, parse_file_name
from connectors.spark.partitioners import Partitioner
from connectors.spark.storage import Storage
from connectors.spark.table_schema import TableSchema, stored

__all__ = ["TopicPartitionWriter"]

_log = logging.getLogger(__name__)


@dataclass(slots=True)
class _OpenFile:
    batches: list[pa.RecordBatch] = field(default_factory=list)
    start: int = -1
    end: int = -1
    rows: int = 0


class TopicPartitionWriter:
    """The files of one topic partition (see the module docstring)."""

    def __init__(
        self,
        tp: TopicPartition,
        settings: SinkSettings,
        storage: Storage,
        partitioner: Partitioner,
        *,
        table: TableSchema | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.tp = tp
        self._table = table or TableSchema(tp.topic, storage, settings.topics_dir)
        #: The last schema the table admitted for this writer.
        self._admitted: pa.Schema | None = None
        self._settings = settings
        self._storage = storage
        self._partitioner = partitioner
        self._clock = clock
        self._open: dict[str, _OpenFile] = {}
        self._schema: pa.Schema | None = None
        self._buffered = 0
        self._first_ts: int | None = None
        #: Offset after the last record published in a file (None: none yet).
        self.committed: int | None = None
        #: Offset after the last record seen (written, buffered or skipped).
        self.consumed: int | None = None
        self.files_committed = 0
        self.rows_committed = 0
        self._next_schedule = self._next_scheduled_commit()

    # ---------------------------------------------------------------- paths

    @property
    def _tmp_dir(self) -> str:
        return f"{self._settings.topics_dir}/{TMP_DIR}/{self.tp.topic}/{self.tp.partition}"

    @property
    def _intent(self) -> str:
        return f"{self._settings.logs_dir}/{self.tp.topic}/{self.tp.partition}/commit.intent"

    def _final(self, directory: str, start: int, end: int) -> str:
        name = file_name(self.tp.topic, self.tp.partition, start, end, self._settings.pad)
        return f"{self._settings.topics_dir}/{self.tp.topic}/{directory}/{name}"

    # ------------------------------------------------------------- recovery

    def recover(self) -> int | None:
        """Finish or undo a commit in flight; return the offset to resume from (None:
        no file of this partition was ever published)."""
        # Step 1
        text = self._storage.read_text(self._intent)
        if text is not None:
            pairs = json.loads(text)["files"]
            for tmp, final in pairs:
                if self._storage.exists(tmp):
                    self._storage.rename(tmp, final)
            self._storage.delete(self._intent)
            _log.info("%s: finished an interrupted commit of %d file(s)", self.tp, len(pairs))
        # Step 2
        for path in list(self._storage.walk_files(self._tmp_dir)):
            self._storage.delete(path)
        # Step 3
        last = -1
        for path in self._storage.walk_files(f"{self._settings.topics_dir}/{self.tp.topic}"):
            parsed = parse_file_name(path.rsplit("/", 1)[-1])
            if parsed is not None and parsed.partition == self.tp.partition:
                last = max(last, parsed.end)
        self.committed = self.consumed = (last + 1) if last >= 0 else None
        return self.committed

    # ---------------------------------------------------------------- writes

    def skip(self, offset: int) -> None:
        """A record consumed that has nothing to write (a tombstone)."""
        self.consumed = offset + 1

    def write(self, batch: pa.RecordBatch, offsets: np.ndarray, timestamps: np.ndarray) -> None:
        """Buffer rows (offsets ascending), committing whenever a rotation rule says so."""
        settings = self._settings
        start = 0
        n = batch.num_rows
        admitted = self._admitted
        if admitted is None or (batch.schema is not admitted and not batch.schema.equals(admitted)):
            self._table.admit(batch.schema)  # raises before anything is buffered
            self._admitted = batch.schema
        while start < n:
            if self._schema is not None and not batch.schema.equals(self._schema):
                self.commit()
            if self._schema is None:
                self._schema = batch.schema
            end = min(n, start + settings.flush_size - self._buffered)
            if settings.rotate_interval_ms >= 0:
                first = self._first_ts if self._first_ts is not None else int(timestamps[start])
                past = np.nonzero(timestamps[start:end] - first >= settings.rotate_interval_ms)[0]
                if past.size:
                    cut = start + int(past[0])
                    if cut == start:  # this record opens the next file
                        self.commit()
                        continue
                    end = cut
            self._add(batch.slice(start, end - start), offsets[start:end], timestamps[start:end])
            start = end
            if self._buffered >= settings.flush_size:
                self.commit()

    def _add(self, batch: pa.RecordBatch, offsets: np.ndarray, timestamps: np.ndarray) -> None:
        if self._first_ts is None:
            self._first_ts = int(timestamps[0])
        for directory, rows in self._partitioner.split(batch, self.tp.partition, timestamps):
            part = batch if rows.size == batch.num_rows else batch.take(pa.array(rows))
            opened = self._open.get(directory)
            if opened is None:
                opened = self._open[directory] = _OpenFile(start=int(offsets[rows[0]]))
            opened.batches.append(part)
            opened.end = int(offsets[rows[-1]])
            opened.rows += part.num_rows
        self._buffered += batch.num_rows
        self.consumed = int(offsets[-1]) + 1

    # ---------------------------------------------------------------- commit

    @property
    def buffered(self) -> int:
        return self._buffered

    def safe_offset(self) -> int | None:
        """The offset the consumer group may commit: everything before it is published
        (or had nothing to publish)."""
        return self.consumed if not self._open else self.committed

    def _next_scheduled_commit(self) -> float:
        interval = self._settings.rotate_schedule_interval_ms
        if interval <= 0:
            return float("inf")
        now_ms = self._clock() * 1000
        return ((now_ms // interval) + 1) * interval / 1000

    def commit_due(self) -> bool:
        return bool(self._open) and self._clock() >= self._next_schedule

    def maybe_commit_scheduled(self) -> None:
        if self._clock() >= self._next_schedule:
            if self._open:
                self.commit()
            self._next_schedule = self._next_scheduled_commit()

    def commit(self) -> None:
        """Publish every open file (see the module docstring)."""
        if not self._open:
            self._reset()
            return
        storage, codec = self._storage, self._settings.codec
        pairs: list[tuple[str, str]] = []
        rows = 0
        # Step 1
        for directory, opened in self._open.items():
            tmp = f"{self._tmp_dir}/{uuid.uuid4().hex}.parquet"
            table = stored(pa.Table.from_batches(opened.batches))
            storage.write_parquet(table, tmp, codec)
            pairs.append((tmp, self._final(directory, opened.start, opened.end)))
            rows += opened.rows
        last = max(opened.end for opened in self._open.values())
        # Step 2
        storage.write_text(self._intent, json.dumps({"files": pairs}))
        # Step 3
        for tmp, final in pairs:
            storage.rename(tmp, final)
        # Step 4
        storage.delete(self._intent)
        self._table.published(final for _, final in pairs)
        self.committed = last + 1
        self.files_committed += len(pairs)
        self.rows_committed += rows
        self._reset()

    def _reset(self) -> None:
        self._open = {}
        self._schema = None
        self._buffered = 0
        self._first_ts = None

    def close(self) -> None:
        """Drop what is buffered: it was never published, and is read again."""
        self._reset()
