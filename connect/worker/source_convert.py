"""A source task's records to the bytes of the log: its key, value and header
converters, under its error policy.

One job: what steps 3 (convert) and, for a `SourceBatch`, the columnar encoding of
`connect.worker.source_task` make of records: `convert` takes every record of one
topic through the converters' batch entry points and says None when one fails;
`convert_one_by_one` then redoes them record by record under the error policy (a
failure goes to the dead-letter topic when tolerated, and names the converter);
`encode_batch` hands Arrow columns to the converters' `from_arrow`. Everything here
runs on the task's thread.
"""

from __future__ import annotations

import contextlib
import operator
from typing import Any

from connect.api import Converter, HeaderConverter, SourceRecord
from connect.api.batches import SourceBatch
from connect.errors import RetryWithTolerance, Stage

__all__ = ["SourceConverter"]

_KEY = operator.attrgetter("key")
_KEY_SCHEMA = operator.attrgetter("key_schema")
_VALUE = operator.attrgetter("value")
_VALUE_SCHEMA = operator.attrgetter("value_schema")
_HEADERS = operator.attrgetter("headers")


class SourceConverter:
    """The task's three converters and its error handler (see the module docstring)."""

    def __init__(
        self,
        key: Converter,
        value: Converter,
        header: HeaderConverter,
        errors: RetryWithTolerance,
    ) -> None:
        self.key, self.value, self.header = key, value, header
        self._errors = errors

    def close(self) -> None:
        for converter in (self.key, self.value, self.header):
            with contextlib.suppress(Exception):
                converter.close()

    def encode_batch(self, batch: SourceBatch) -> tuple[list[bytes] | None, list[bytes]] | None:
        """(keys, values) as bytes, or None when a converter cannot take the columns."""
        values = self.value.from_arrow(batch.topic, batch.value_schema, batch.values)
        if values is None:
            return None
        if batch.keys is None or batch.key_schema is None:
            return None, values
        keys = self.key.from_arrow(batch.topic, batch.key_schema, batch.keys)
        return None if keys is None else (keys, values)

    def convert(
        self, topic: str, recs: list[SourceRecord]
    ) -> tuple[list[bytes | None], list[bytes | None], list] | None:
        """(key bytes, value bytes, headers) of every record, or None when one fails
        (then `convert_one_by_one` finds which)."""
        try:
            key_values = list(map(_KEY, recs))
            key_schemas = list(map(_KEY_SCHEMA, recs))
            n = len(recs)
            if key_values.count(None) == n and key_schemas.count(None) == n:
                keys: list[bytes | None] = key_values  # no keys: skip the converter
            else:
                keys = self.key.from_connect_batch(topic, key_schemas, key_values)
            values = self.value.from_connect_batch(
                topic, list(map(_VALUE_SCHEMA, recs)), list(map(_VALUE, recs))
            )
            if any(map(_HEADERS, recs)):
                headers = [self.headers(topic, r) if r.headers else () for r in recs]
            else:
                headers = [()] * n  # the usual: no record has headers
            return keys, values, headers
        except Exception:
            return None

    def convert_one_by_one(self, topic: str, recs: list[SourceRecord]) -> list[tuple]:
        """(index, key bytes, value bytes, headers) of each record that converts; the
        others are reported under the error policy, naming their stage."""
        out = []
        for i, rec in enumerate(recs):

            def context(rec: SourceRecord = rec) -> dict[str, Any]:
                return {"record": rec, "topic": rec.topic}

            ok, key = self._errors.execute(
                Stage.KEY_CONVERTER,
                type(self.key).__name__,
                lambda rec=rec: self.key.from_connect_data(topic, rec.key_schema, rec.key),
                context,
            )
            if not ok:
                continue
            ok, value = self._errors.execute(
                Stage.VALUE_CONVERTER,
                type(self.value).__name__,
                lambda rec=rec: self.value.from_connect_data(topic, rec.value_schema, rec.value),
                context,
            )
            if not ok:
                continue
            ok, headers = self._errors.execute(
                Stage.HEADER_CONVERTER,
                type(self.header).__name__,
                lambda rec=rec: self.headers(topic, rec),
                context,
            )
            if ok:
                out.append((i, key, value, headers))
        return out

    def headers(self, topic: str, rec: SourceRecord) -> list[tuple[str, bytes | None]]:
        return [
            (h.key, self.header.from_connect_header(topic, h.key, h.schema, h.value))
            for h in rec.headers
        ]
