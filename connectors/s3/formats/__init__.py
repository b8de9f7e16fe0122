"""Object formats: JSON lines, Avro, Parquet, ByteArray (and CSV, read only)."""

from __future__ import annotations

from connectors.s3.config import LayoutSettings
from connectors.s3.formats.base import FileWriter, Format, Sink

__all__ = ["FileWriter", "Format", "Sink", "make_format"]


def make_format(layout: LayoutSettings, *, csv_header: bool = True) -> Format:
    """The format named by `format.class`, with its keys applied. Imported lazily:
    pyarrow takes a while to import and only Parquet needs it."""
    gzip = layout.compression == "gzip"
    if layout.format == "json":
        from connectors.s3.formats.text import JsonFormat

        return JsonFormat(
            gzip=gzip, level=layout.compression_level, numeric_decimals=layout.json_decimal_numeric
        )
    if layout.format == "bytearray":
        from connectors.s3.formats.text import ByteArrayFormat

        return ByteArrayFormat(
            gzip=gzip,
            level=layout.compression_level,
            extension=layout.bytearray_extension,
            separator=layout.bytearray_separator,
        )
    if layout.format == "avro":
        from connectors.s3.formats.avro import AvroFormat

        return AvroFormat(codec=layout.avro_codec)
    if layout.format == "parquet":
        from connectors.s3.formats.parquet import ParquetFormat

        return ParquetFormat(codec=layout.parquet_codec)
    from connectors.s3.formats.csv import CsvFormat

    return CsvFormat(header=csv_header)
