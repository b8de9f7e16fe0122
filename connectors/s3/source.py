"""S3Source: objects back into topics — a restore of what S3Sink wrote, or any
objects under a prefix (GENERIC).

Task lifecycle:
1. `start` checks the bucket (a missing bucket, refused credentials or an
   unreachable endpoint fail the task with a message that says which) and lists it.
2. `poll` reads the next object of the catalog (catalog.py) whole, decodes it with
   the format, and returns its records `record.batch.max.size` at a time, each
   restore record to its original topic and partition (with its key, read from the
   `.keys.<ext>` object beside it, when `store.kafka.keys` is on). Only the last record of a
   poll carries the source offset (object, position): the runtime keeps only the
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
from connectors.s3.formats import make_format, make_keys_format
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
            {**self._props, TASK_ID: str(i), TASK_COUNT: str(max_tasks)}
            for i in range(max_tasks)
        ]

    def stop(self) -> None:
        pass


class S3SourceTask(SourceTask):
    """See the module docstring."""

    VERSION = VERSION

    def start(self, props: Mapping[str, str]) -> None:
        # Step 1
        self.settings = SourceSettings.parse(props)
        self.store = Store(self.settings.store)
        self.store.check_bucket()
        self.format = make_format(self.settings.layout, csv_header=self.settings.csv_header)
        self.keys_format = None if self.settings.generic else make_keys_format(
            self.settings.layout)
        self._keys: list[Any] | None = None
        self._key_schema: Any = None
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
        if self._keys is not None:
            key_schema = self._key_schema
            for rec, key in zip(records, self._keys[self._position : end], strict=True):
                rec.key = key
                rec.key_schema = key_schema
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
        self._keys = None
        if self.keys_format is not None:
            self._read_keys(work.key, len(values))
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

    def _read_keys(self, key: str, count: int) -> None:
        """The keys of an object from its `.keys.<ext>` object (`store.kafka.keys`)."""
        keys_format = self.keys_format
        assert keys_format is not None
        ext = self.format.extension
        keys_key = key[: len(key) - len(ext)] + ".keys" + keys_format.extension
        try:
            data = self.store.get(keys_key)
        except S3StoreError as exc:
            if exc.code != "NoSuchKey":
                raise
            _log.warning("%s has no keys object %s: its records are restored without keys",
                         key, keys_key)
            return
        schema, keys = keys_format.read(data)
        if len(keys) != count:
            raise DataError(f"{keys_key} holds {len(keys)} keys for {count} records of {key}")
        self._keys = keys
        self._key_schema = schema

    def stop(self) -> None:
        stopping = getattr(self, "_stopping", None)
        if stopping is not None:
            stopping.set()
