"""S3Source: objects back into topics — a restore of what S3Sink wrote, or any
objects under a prefix (GENERIC).

Task lifecycle:
1. `start` checks the bucket (a missing bucket, refused credentials or an
   unreachable endpoint fail the task with a message that says which) and lists it.
2. `poll` reads the next object of the catalog (catalog.py) whole, decodes it with
   the format, and returns its records `record.batch.max.size` at a time, each
   restore record to its original topic and partition (with its key and headers, read
   from the `.keys.<ext>` and `.headers.<ext>` objects beside it when
   `store.kafka.keys` / `store.kafka.headers` are on, sidecars.py). Only the last
   record of a poll carries the source offset (object, position): the runtime keeps only the
   latest offset per source partition anyway, and one dict per poll is cheaper than
   one per record.
3. Every `s3.poll.interval.ms` the bucket is listed again, so objects written while
   the task runs are read too; while there is nothing to read, `poll` waits up to a
   second and returns nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from connect.api import (
    ConfigDef,
    ConfigValue,
    DataError,
    ExactlyOnceSupport,
    SourceConnector,
    SourceRecord,
    SourceTask,
)
from connectors.s3.catalog import Catalog, Work
from connectors.s3.config import (
    SOURCE_CONFIG,
    TASK_COUNT,
    TASK_ID,
    SourceSettings,
    validate_source,
)
from connectors.s3.errors import S3StoreError
from connectors.s3.formats import make_format
from connectors.s3.sidecars import (
    KeysSidecar,
    Sidecar,
    make_sidecars,
    restore_headers,
    restore_key,
)
from connectors.s3.store import Store

__all__ = ["S3SourceConnector", "S3SourceTask"]

_log = logging.getLogger("connectors.s3")
VERSION = "0.1.0"
_IDLE_WAIT_S = 1.0


class S3SourceConnector(SourceConnector):
    """Confluent's `io.confluent.connect.s3.source.S3SourceConnector`, same keys."""

    VERSION = VERSION

    def config(self) -> ConfigDef:
        return SOURCE_CONFIG

    def validate(self, props: Mapping[str, Any]) -> list[ConfigValue]:
        return validate_source(props)

    def start(self, props: Mapping[str, str]) -> None:
        SourceSettings.parse(props)
        self._props = dict(props)

    def task_class(self) -> type:
        return S3SourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [
            {**self._props, TASK_ID: str(i), TASK_COUNT: str(max_tasks)} for i in range(max_tasks)
        ]

    def stop(self) -> None:
        pass

    def exactly_once_support(self, props: Mapping[str, str]) -> ExactlyOnceSupport | None:
        """An object read from a stored (object, record) position yields the same
        records again: objects the sink wrote are never rewritten."""
        return ExactlyOnceSupport.SUPPORTED


class S3SourceTask(SourceTask):
    """See the module docstring."""

    VERSION = VERSION

    def start(self, props: Mapping[str, str]) -> None:
        # Step 1
        self.settings = SourceSettings.parse(props)
        self.store = Store(self.settings.store)
        self.store.check_bucket()
        self.format = make_format(self.settings.layout, csv_header=self.settings.csv_header)
        self.sidecars = () if self.settings.generic else make_sidecars(self.settings.layout)
        # Per sidecar of the object being read: (schema, entries), or None when the
        # object has none (its records come back without keys or headers).
        self._sides: list[tuple[Any, list[Any]] | None] = []
        reader = self.context.offset_storage_reader
        self.catalog = Catalog(self.settings, self.store, self.format.extension, reader.offset)
        self._stopping = threading.Event()
        self._current: Work | None = None
        self._schema: Any = None
        self._values: list[Any] = []
        self._position = 0
        self._next_listing = 0.0
        self.objects_read = 0

    def _maybe_list(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if force or now >= self._next_listing:
            self.catalog.refresh()
            self._next_listing = now + self.settings.poll_interval_ms / 1000

    def poll(self) -> list[SourceRecord] | None:
        # Step 2
        if self._current is None and not self._open_next():
            # Step 3
            wait = min(_IDLE_WAIT_S, max(0.0, self._next_listing - time.monotonic()))
            self._stopping.wait(wait)
            return None
        work = self._current
        assert work is not None
        end = min(len(self._values), self._position + self.settings.batch_max_size)
        values = self._values[self._position : end]
        records = SourceRecord.batch(work.topic, values, value_schema=self._schema)
        if work.partition is not None:
            partition = work.partition
            for rec in records:
                rec.kafka_partition = partition
        for sidecar, side in zip(self.sidecars, self._sides, strict=True):
            if side is not None:
                _restore(sidecar, side[0], side[1][self._position : end], records)
        self._position = end
        complete = end >= len(self._values)
        last = records[-1] if records else None
        if last is not None:
            last.source_partition = work.source_partition
            offset: dict[str, Any] = {"position": end, "complete": complete}
            if work.partition is not None:
                offset = {"object": work.key, "start": work.start, **offset}
            last.source_offset = offset
        if complete:
            self._current = None
            self._values = []
            self.objects_read += 1
        return records or None

    def _open_next(self) -> bool:
        self._maybe_list()
        work = self.catalog.next()
        if work is None:
            return False
        schema, values = self.format.read(self.store.get(work.key))
        self._sides = [self._read_side(s, work.key, len(values)) for s in self.sidecars]
        self._current = work
        self._schema = schema
        self._values = values
        self._position = min(work.skip, len(values))
        if self._position >= len(values) and values:
            # Everything was delivered before a restart; only the offset was not
            # marked complete. Nothing to send.
            self._current = None
            self._values = []
            return self._open_next()
        return True

    def _read_side(self, sidecar: Sidecar, key: str, count: int) -> tuple[Any, list[Any]] | None:
        """(schema, entries) of the sidecar object beside the object `key`."""
        ext = self.format.extension
        side_key = key[: len(key) - len(ext)] + sidecar.suffix + sidecar.format.extension
        try:
            data = self.store.get(side_key)
        except S3StoreError as exc:
            if exc.code != "NoSuchKey":
                raise
            _log.warning(
                "%s has no %s object %s: its records are restored without them",
                key,
                sidecar.suffix.lstrip("."),
                side_key,
            )
            return None
        schema, entries = sidecar.format.read(data)
        if len(entries) != count:
            raise DataError(f"{side_key} holds {len(entries)} entries for {count} records of {key}")
        return schema, entries

    def stop(self) -> None:
        stopping = getattr(self, "_stopping", None)
        if stopping is not None:
            stopping.set()


def _restore(
    sidecar: Sidecar, schema: Any, entries: list[Any], records: list[SourceRecord]
) -> None:
    """Put a sidecar's entries back on their records: keys, or headers."""
    if isinstance(sidecar, KeysSidecar):
        for rec, entry in zip(records, entries, strict=True):
            rec.key_schema, rec.key = restore_key(schema, entry)
        return
    for rec, entry in zip(records, entries, strict=True):
        rec.headers = restore_headers(entry)
