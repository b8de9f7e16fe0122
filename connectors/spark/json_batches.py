"""`value.format=json`: JsonConverter's bytes → Arrow record batches, a batch at a time.

The decoding is the runtime's (`connect.converters.json_arrow_read`, which
`JsonConverter.to_arrow` uses too); this is the older way in, kept for the configs
that use it: `value.converter=ByteArrayConverter` hands the sink the messages' bytes,
and the sink decodes them itself — with or without the schema envelope (schemaless
JSON objects get the types Arrow infers), nulls written as they are. A connector whose
value.converter is JsonConverter needs no `value.format`: the runtime hands the sink
Arrow batches (`SinkTask.put_batches`) decoded the same way, and falls back to
records where they cannot be.

The one import of the runtime a connector makes (tests/test_boundaries.py lists it as
the only exception to "connectors import only connect.api"). Why it stays: the
reader is JsonConverter's, built on the converter's schema-JSON and value codecs
(`json_schema`, `json_values`), and this path needs its lenient mode, which no
`Converter` method offers; a copy in `connect.api` would drift from the converter,
and a converter instance cannot reach a connector (nor the Spark data source, which
runs without a worker) without a runtime hook the API does not have. The way out is
that hook, or this older path retired in favour of value.converter=JsonConverter.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from connect.api import DataError, file_batch
from connect.converters.json_arrow_read import JsonArrowReader

__all__ = ["JsonBatchDecoder"]


class JsonBatchDecoder:
    """Decodes JsonConverter messages a run at a time (see the module docstring)."""

    def __init__(self) -> None:
        self._reader = JsonArrowReader(strict=False)

    def decode(self, values: Sequence[bytes]) -> list[tuple[pa.RecordBatch, np.ndarray]]:
        """Record batches and, for each, the positions in `values` of its rows."""
        try:
            runs = self._reader.read(values)
        except DataError as exc:
            raise DataError(
                f"value.format=json: {exc} (value.format=json reads the bytes of "
                "value.converter=ByteArrayConverter; with value.converter=JsonConverter "
                "leave value.format unset)"
            ) from exc
        return [
            (batch if schema is None else file_batch(schema, batch), rows)
            for schema, batch, rows in runs
        ]
