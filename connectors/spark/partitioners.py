"""Partitioners: which directory each record goes to, Hive-style (`name=value`), as
in Confluent's storage connectors. They work on a whole Arrow record batch at once.

- default: `partition=<log partition>`;
- field (`partition.field.name`): `<field>=<value>/…` from the value's fields;
- time-based (`partition.duration.ms`, `path.format`, `timezone`): the record's time
  (`timestamp.extractor`: its log timestamp, a value field, or the wall clock)
  floored to the duration, formatted with a Joda-style pattern such as
  `'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH`; Daily and Hourly are presets.

`split(batch, timestamps)` returns `(directory, row indices)` pairs in the order each
directory first appears, so the split of a batch is a pure function of its rows (what
makes re-written files identical to the ones a crash interrupted).
"""

from __future__ import annotations

import datetime as dt
import re
import time
import zoneinfo
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from connect.api import ConfigError, DataError
from connectors.spark.config import SinkSettings

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

__all__ = ["Partitioner", "joda_to_strftime", "partitioner_for"]

Split = list[tuple[str, "np.ndarray"]]

_JODA = {
    "YYYY": "%Y",
    "yyyy": "%Y",
    "YY": "%y",
    "yy": "%y",
    "MM": "%m",
    "M": "%-m",
    "dd": "%d",
    "d": "%-d",
    "DD": "%j",
    "HH": "%H",
    "H": "%-H",
    "mm": "%M",
    "ss": "%S",
}
_TOKEN = re.compile(r"'(?P<quoted>[^']*)'|(?P<letters>([A-Za-z])\3*)|(?P<other>[^A-Za-z']+)")


def joda_to_strftime(pattern: str, key: str = "path.format") -> str:
    """A Joda DateTimeFormat pattern (the subset paths use) as a strftime format."""
    out = []
    for m in _TOKEN.finditer(pattern):
        if m["quoted"] is not None:
            out.append(m["quoted"].replace("%", "%%"))
        elif m["letters"] is not None:
            letters = m["letters"]
            if letters not in _JODA:
                raise ConfigError(key, pattern, f"unsupported date pattern letters {letters!r}")
            out.append(_JODA[letters])
        else:
            out.append(m["other"].replace("%", "%%"))
    return "".join(out)


class Partitioner:
    """Directories for the rows of record batches (see the module docstring).

    numpy and pyarrow are imported by the methods that split a batch, once a batch is
    in hand: the connector builds a Partitioner in the worker's own process to refuse a
    bad path.format, and that process never writes a file (the two are ~45 MB)."""

    def __init__(self, settings: SinkSettings, clock: Callable[[], float] = time.time) -> None:
        self.kind = settings.partitioner
        self.fields = settings.partition_fields
        self.duration_ms = settings.partition_duration_ms
        self._format = joda_to_strftime(settings.path_format) if self.kind == "time" else ""
        self._zone = zoneinfo.ZoneInfo(settings.timezone)
        self._extractor = settings.extractor
        self._ts_field = settings.timestamp_field
        self._clock = clock

    def split(self, batch: pa.RecordBatch, partition: int, timestamps: np.ndarray) -> Split:
        import numpy as np

        n = batch.num_rows
        if self.kind == "default":
            return [(f"partition={partition}", np.arange(n))]
        if self.kind == "field":
            keys = self._field_keys(batch)
        else:
            keys = self._time_keys(batch, timestamps)
        return _group(keys)

    def _field_keys(self, batch: pa.RecordBatch) -> list[str]:
        import pyarrow as pa
        import pyarrow.compute as pc

        parts = []
        for name in self.fields:
            index = batch.schema.get_field_index(name)
            if index < 0:
                raise DataError(f"partition.field.name: the value has no field {name!r}")
            column = batch.column(index)
            if pa.types.is_struct(column.type) or pa.types.is_list(column.type):
                raise DataError(f"partition.field.name: {name!r} is not a primitive field")
            text = pc.cast(column, pa.string()) if column.type != pa.string() else column
            values = text.to_pylist()
            parts.append([f"{name}={_escape(v)}" for v in values])
        return ["/".join(p) for p in zip(*parts, strict=True)]

    def _time_keys(self, batch: pa.RecordBatch, timestamps: np.ndarray) -> list[str]:
        import numpy as np

        if self._extractor == "Wallclock":
            ms = np.full(batch.num_rows, int(self._clock() * 1000), dtype=np.int64)
        elif self._extractor == "RecordField":
            ms = self._field_ms(batch)
        else:
            ms = timestamps
        floored = (ms // self.duration_ms) * self.duration_ms
        names: dict[int, str] = {}
        out = []
        for value in floored.tolist():
            name = names.get(value)
            if name is None:
                moment = dt.datetime.fromtimestamp(value / 1000, self._zone)
                name = names[value] = moment.strftime(self._format)
            out.append(name)
        return out

    def _field_ms(self, batch: pa.RecordBatch) -> np.ndarray:
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        index = batch.schema.get_field_index(self._ts_field)
        if index < 0:
            raise DataError(f"timestamp.field: the value has no field {self._ts_field!r}")
        column: Any = batch.column(index)
        if column.null_count:
            raise DataError(f"timestamp.field: {self._ts_field!r} is null in some records")
        if pa.types.is_timestamp(column.type):
            # floored to ms first: a µs timestamp (a MicroTimestamp's) is no whole ms
            floored = pc.floor_temporal(column, unit="millisecond")
            column = floored.cast(pa.timestamp("ms", tz=column.type.tz)).cast(pa.int64())
        elif pa.types.is_string(column.type):
            parsed = pc.strptime(column, "%Y-%m-%dT%H:%M:%S", "ms", error_is_null=True)
            column = parsed.cast(pa.int64())
        elif not pa.types.is_integer(column.type):
            raise DataError(f"timestamp.field: {self._ts_field!r} is not a time")
        return column.to_numpy(zero_copy_only=False).astype(np.int64)


def _escape(value: Any) -> str:
    if value is None:
        return "__HIVE_DEFAULT_PARTITION__"
    return str(value).replace("/", "%2F").replace("=", "%3D")


def _group(keys: list[str]) -> Split:
    """Row indices per key, keys in order of first appearance."""
    import numpy as np

    positions: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        positions.setdefault(key, []).append(i)
    return [(key, np.asarray(rows, dtype=np.int64)) for key, rows in positions.items()]


def partitioner_for(settings: SinkSettings) -> Partitioner:
    return Partitioner(settings)
