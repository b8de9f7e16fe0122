"""CSV objects, read by the source's GENERIC mode (the sink never writes CSV).

Each row becomes a Struct of optional strings named by the header row
(`csv.first.row.as.header=true`, the default) or `column1`, `column2`, … — a schema a
JDBC or Parquet sink can use as it is.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from connect.api import OPTIONAL_STRING_SCHEMA, DataError, Schema, Struct
from connectors.s3.formats.base import FileWriter, Format, Sink
from connectors.s3.formats.text import _gunzip

__all__ = ["CsvFormat"]


class CsvFormat(Format):
    def __init__(self, *, header: bool) -> None:
        self._header = header

    @property
    def extension(self) -> str:
        return ".csv"

    def writer(self, sink: Sink, schema: Schema | None) -> FileWriter:
        raise DataError("CsvFormat is read-only: S3Sink writes json, avro, parquet or bytearray")

    def read(self, data: bytes) -> tuple[Schema | None, list[Any]]:
        rows = list(csv.reader(io.StringIO(_gunzip(data).decode("utf-8"), newline="")))
        if not rows:
            return None, []
        if self._header:
            names, rows = rows[0], rows[1:]
        else:
            names = [f"column{i + 1}" for i in range(max(len(r) for r in rows))]
        schema = Schema.struct([(n, OPTIONAL_STRING_SCHEMA) for n in names])
        width = len(names)
        # Every value is a string or None, as every (optional string) field takes.
        return schema, [Struct.trusted(schema, (row + [None] * width)[:width]) for row in rows]
