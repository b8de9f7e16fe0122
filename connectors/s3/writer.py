"""The writer of one topic partition: records in, complete objects out.

Records of a topic partition arrive in offset order. They go into the open objects of
their encoded partitions (directories), all of which together form the *open set*; the
open set is committed — every object in it completed, so visible — as one step, when:

1. `flush.size` records of the topic partition are in it (counted across all its
   directories, so object boundaries depend only on the record sequence);
2. `rotate.interval.ms`: a record's time (per `timestamp.extractor`) is that far past
   the first record's in the set, or, with a time-based partitioner, the record falls
   in another time directory than the previous record — checked when that record
   arrives, before it is added;
3. the value schema changes in a way `schema.compatibility` does not project away
   (NONE: any change), or, with `store.kafka.keys`, the key schema changes;
4. `partitioner.max.open.files` would be exceeded by a new directory;
5. `rotate.schedule.interval.ms`: the wall clock passed the next multiple of the
   interval (aligned to midnight in `timezone`) since the set opened — checked on every
   `put`, idle or not, so quiet partitions still get their objects on time.

Each object is named by its first record's offset (names.py), and has its keys' and
headers' objects beside it when the layout asks for them (sidecars.py), written and
committed with it. Objects complete in the background (upload.py) while the next set
fills. `safe_offset()` is the first
offset that is not yet in a complete object: the start of the oldest set still
completing, else of the open set, else the offset after the last record seen. That
is what the task lets the runtime commit, so a restart resumes exactly at the start of
the next object, and (for rules 1-4, which read only the records) cuts the same
objects with the same bytes again. Rule 5 reads the clock, so a replay after a crash
may cut differently.

On an S3 failure the task calls `reset()`: uploads are aborted, everything not yet
complete is dropped, and the runtime is told to deliver again from `safe_offset()`.
Records already seen (offset below the next expected one) are skipped, so a
redelivery never writes a record twice.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import time
import zoneinfo
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

from connect.api import DataError, Schema, SinkRecord, Struct, TopicPartition
from connectors.s3.config import SinkSettings
from connectors.s3.formats import FileWriter, Format
from connectors.s3.names import object_key
from connectors.s3.partitioners import Partitioner
from connectors.s3.sidecars import Sidecar
from connectors.s3.store import Store
from connectors.s3.timestamps import TimestampExtractor
from connectors.s3.upload import ObjectUpload

__all__ = ["TopicPartitionWriter"]

_NO_SCHEMA: Any = object()
#: Committed sets whose objects may still be completing in the background; one more
#: makes `commit` wait for the oldest (this bounds the memory of last parts in flight).
MAX_COMPLETING = 2


class _OpenFile:
    """An object being written, with its sidecars' objects (keys, headers) beside it,
    in the order of the writer's sidecars."""

    __slots__ = ("pending", "sides", "upload", "writer")

    def __init__(
        self, upload: ObjectUpload, writer: FileWriter, sides: Sequence[_OpenFile] = ()
    ) -> None:
        self.upload = upload
        self.writer = writer
        self.pending: list[Any] = []
        self.sides = tuple(sides)

    def drain(self) -> None:
        if self.pending:
            values, self.pending = self.pending, []
            self.writer.write(values)
        for side in self.sides:
            side.drain()

    def complete(self) -> list[Future[None]]:
        self.drain()
        self.writer.finish()
        futures = [self.upload.complete()]
        for side in self.sides:
            futures += side.complete()
        return futures

    def abort(self) -> None:
        self.upload.abort()
        for side in self.sides:
            side.abort()


class TopicPartitionWriter:
    """See the module docstring."""

    def __init__(
        self,
        tp: TopicPartition,
        *,
        settings: SinkSettings,
        store: Store,
        fmt: Format,
        partitioner: Partitioner,
        extractor: TimestampExtractor,
        clock: Callable[[], float] = time.time,
        sidecars: Sequence[Sidecar] = (),
    ) -> None:
        self.tp = tp
        self._sidecars = tuple(sidecars)
        self._tracks_keys = any(s.follows_key_schema for s in self._sidecars)
        self._key_schema: Any = _NO_SCHEMA
        self._s = settings
        self._store = store
        self._format = fmt
        self._partitioner = partitioner
        self._extractor = extractor
        self._clock = clock
        self._zone = zoneinfo.ZoneInfo(settings.layout.timezone or "UTC")
        self._files: dict[str, _OpenFile] = {}
        self._start: int | None = None
        self._count = 0
        self._base_ts: int | None = None
        self._last_encoded: str | None = None
        self._schema: Any = _NO_SCHEMA
        self._topic = tp.topic
        self._expected: int | None = None
        self._next_scheduled_ms: int | None = None
        self._needs_time = partitioner.time_based or settings.rotate_interval_ms > 0
        self.objects_committed = 0
        # (start offset, completions) of committed sets, oldest first.
        self._completing: deque[tuple[int, list[Future[None]]]] = deque()

    # ------------------------------------------------------------------ state

    def safe_offset(self) -> int | None:
        """The first offset not yet in a complete object (None: no record seen)."""
        self._reap(raising=False)
        if self._completing:
            return self._completing[0][0]
        return self._start if self._start is not None else self._expected

    def _reap(self, *, raising: bool, block: bool = False) -> bool:
        """Drop the oldest committed sets whose objects are all complete; True when
        any was. `raising`: a failed completion raises its S3StoreError (otherwise it
        stays, holding the safe offset back). `block`: wait for the oldest set."""
        reaped = False
        while self._completing:
            _, futures = self._completing[0]
            if not block and not all(f.done() for f in futures):
                break
            failed = next((f for f in futures if f.exception() is not None), None)
            if failed is not None:
                if raising:
                    failed.result()
                break
            self._completing.popleft()
            self.objects_committed += len(futures)
            reaped = True
            block = False
        return reaped

    def poll_completions(self) -> bool:
        """True when objects became visible since the last call; raises the error of
        a failed upload (the task then resets this writer)."""
        return self._reap(raising=True)

    @property
    def open_objects(self) -> int:
        return len(self._files)

    @property
    def buffered_bytes(self) -> int:
        return sum(f.upload.buffered for f in self._files.values())

    # ------------------------------------------------------------------ writes

    def write(self, records: Sequence[SinkRecord]) -> bool:
        """Add a run of this partition's records; True when objects were committed."""
        committed = self.objects_committed
        i, n = 0, len(records)
        fast = not self._partitioner.per_record and not self._needs_time
        while i < n:
            if fast:
                done = self._write_chunk(records, i)
                if done:
                    i += done
                    continue
            self._write_one(records[i])
            i += 1
        for f in self._files.values():
            f.drain()
        self.poll_completions()
        return self.objects_committed != committed

    def _write_chunk(self, records: Sequence[SinkRecord], i: int) -> int:
        """The fast path: a chunk that fits the open set, of one known schema, no nulls,
        no skips, one directory. Returns how many records it took (0: not possible)."""
        first = records[i]
        if self._expected is not None and first.kafka_offset < self._expected:
            return 0
        schema = first.value_schema
        if self._start is None or schema is not self._schema:
            return 0
        chunk = records[i : i + self._s.flush_size - self._count]
        values = [r.value for r in chunk]
        if None in values:
            return 0
        if [r.value_schema for r in chunk].count(schema) != len(chunk):
            return 0
        if self._tracks_keys and [r.key_schema for r in chunk].count(self._key_schema) != len(
            chunk
        ):
            return 0
        encoded = self._last_encoded
        assert encoded is not None
        file = self._files[encoded]
        file.drain()
        file.writer.write(values)
        for side, sidecar in zip(file.sides, self._sidecars, strict=True):
            side.writer.write(sidecar.entries(chunk))
        self._count += len(chunk)
        self._expected = chunk[-1].kafka_offset + 1
        if self._count >= self._s.flush_size:
            self.commit()
        return len(chunk)

    def _write_one(self, rec: SinkRecord) -> None:
        offset = rec.kafka_offset
        if self._expected is not None and offset < self._expected:
            return  # seen already: a redelivery after a retriable error
        value = rec.value
        if value is None:
            if not self._s.ignore_null_values:
                raise DataError(
                    f"record {rec.topic}-{rec.kafka_partition}@{offset} has a null value "
                    "(a tombstone); set behavior.on.null.values=ignore to skip such records"
                )
            self._expected = offset + 1
            return
        value = self._check_schema(rec, value)  # Step 3 (may commit)
        stamps = self._extractor([rec]) if self._needs_time else None
        encoded = self._partitioner.encode([rec], stamps)[0]
        if self._start is not None and stamps is not None and self._s.rotate_interval_ms > 0:
            # Step 2
            assert self._base_ts is not None
            if stamps[0] - self._base_ts >= self._s.rotate_interval_ms or (
                self._partitioner.time_based and encoded != self._last_encoded
            ):
                self.commit()
        max_open = self._s.max_open_files
        if max_open > 0 and encoded not in self._files and len(self._files) >= max_open:
            self.commit()  # Step 4
        if self._start is None:
            self._open_set(rec, stamps)
        file = self._files.get(encoded)
        if file is None:
            file = self._files[encoded] = self._open_file(encoded, offset)
        file.pending.append(value)
        for side, sidecar in zip(file.sides, self._sidecars, strict=True):
            side.pending.extend(sidecar.entries([rec]))
        self._last_encoded = encoded
        self._count += 1
        self._expected = offset + 1
        if self._count >= self._s.flush_size:
            self.commit()  # Step 1

    def _open_set(self, rec: SinkRecord, stamps: list[int] | None) -> None:
        self._start = rec.kafka_offset
        self._topic = rec.topic
        self._base_ts = stamps[0] if stamps else None
        if self._schema is _NO_SCHEMA:
            self._schema = rec.value_schema
        if self._key_schema is _NO_SCHEMA:
            self._key_schema = rec.key_schema
        interval = self._s.rotate_schedule_interval_ms
        if interval > 0:
            now = int(self._clock() * 1000)
            offset = _dt.datetime.fromtimestamp(now / 1000, self._zone).utcoffset()
            offset_ms = int(offset.total_seconds() * 1000) if offset else 0
            local = now + offset_ms
            self._next_scheduled_ms = local - local % interval + interval - offset_ms

    def _open_file(self, encoded: str, start: int) -> _OpenFile:
        layout = self._s.layout
        key = object_key(
            layout, self._topic, encoded, self.tp.partition, start, self._format.extension
        )
        upload = ObjectUpload(self._store, key, self._s.store.part_size)
        schema = None if self._schema is _NO_SCHEMA else self._schema
        key_schema = None if self._key_schema is _NO_SCHEMA else self._key_schema
        sides = []
        for sidecar in self._sidecars:
            side_key = object_key(
                layout,
                self._topic,
                encoded,
                self.tp.partition,
                start,
                sidecar.suffix + sidecar.format.extension,
            )
            side = ObjectUpload(self._store, side_key, self._s.store.part_size)
            sides.append(_OpenFile(side, sidecar.format.writer(side, sidecar.schema(key_schema))))
        return _OpenFile(upload, self._format.writer(upload, schema), sides)

    # ---------------------------------------------------------------- schemas

    def _check_schema(self, rec: SinkRecord, value: Any) -> Any:
        """Step 3: the value to write (projected where the compatibility allows);
        commits the open set when the schema change needs new objects."""
        if self._tracks_keys:
            key_schema = rec.key_schema
            if key_schema is not self._key_schema:
                if (
                    self._start is not None
                    and self._key_schema is not _NO_SCHEMA
                    and (key_schema != self._key_schema)
                ):
                    self.commit()  # one key schema per keys object
                self._key_schema = key_schema
        new = rec.value_schema
        current = self._schema
        if current is _NO_SCHEMA or new is current:
            self._schema = new
            return value
        if self._start is None:
            self._schema = new
            return value
        if (new is None) != (current is None):
            raise DataError(
                f"record {rec.topic}-{rec.kafka_partition}@{rec.kafka_offset}: switching "
                "between records with and without a value schema in one topic partition"
            )
        assert new is not None and current is not None
        if new == current:
            return value
        mode = self._s.schema_compatibility
        if mode != "NONE" and new.version is not None and current.version is not None:
            older = new.version < current.version
            newer = new.version > current.version
            if (older and mode in ("BACKWARD", "FULL")) or (newer and mode == "FORWARD"):
                return _project(value, current)
        self.commit()
        self._schema = new
        return value

    # ----------------------------------------------------------------- commits

    def maybe_rotate_on_schedule(self) -> bool:
        """Step 5: commit the open set when the scheduled time has passed; True when
        objects became visible since the last check."""
        due = self._next_scheduled_ms
        if self._start is not None and due is not None and self._clock() * 1000 >= due:
            self.commit()
        return self.poll_completions()

    def commit(self) -> None:
        """Complete every open object (each becomes visible at once, in the
        background), then start a new set. The safe offset moves past the set only
        once all its objects are complete."""
        if self._start is None:
            return
        futures = []
        for file in self._files.values():
            futures += file.complete()
        self._completing.append((self._start, futures))
        if len(self._completing) > MAX_COMPLETING:
            self._reap(raising=True, block=True)
        self._files.clear()
        self._start = None
        self._count = 0
        self._base_ts = None
        self._next_scheduled_ms = None

    def reset(self) -> int | None:
        """Drop everything not yet complete; returns the offset to consume from."""
        for _, futures in self._completing:
            for future in futures:
                with contextlib.suppress(Exception):
                    future.result()  # let completions under way end, failed or not
        target = self.safe_offset()
        self._completing.clear()
        for file in self._files.values():
            file.abort()
        self._files.clear()
        self._start = None
        self._count = 0
        self._base_ts = None
        self._next_scheduled_ms = None
        self._expected = target
        self._schema = self._key_schema = _NO_SCHEMA
        return target

    def close(self) -> None:
        """The partition goes away: abort what is open (it will be consumed again)."""
        self.reset()


def _project(value: Any, target: Schema) -> Any:
    """`value` (a Struct of an older or newer schema) as a Struct of `target`."""
    if not isinstance(value, Struct) or target.type.value != "struct":
        return value
    values = []
    source = value.schema
    for f in target.fields:
        src = source.field(f.name)
        if src is not None:
            v = value.get_without_default(f.name)
            if isinstance(v, Struct):
                v = _project(v, f.schema)
        elif f.schema.default is not None or f.schema.optional:
            v = f.schema.default
        else:
            raise DataError(
                f"cannot project to {target.name or 'the schema'}: field "
                f"{f.name!r} has no value and no default"
            )
        values.append(v)
    # Values of a valid struct, or defaults of `target`'s own fields.
    return Struct.trusted(target, values)
