"""`value.format=json`: JsonConverter's bytes → Arrow record batches, a batch at a time.

The decoding is the plugin API's `JsonArrowReader` (`connect.api.json_arrow_read`,
which the runtime's `JsonConverter.to_arrow` uses too), in its lenient mode; this is
the older way in, kept for the configs that use it: `value.converter=ByteArrayConverter`
hands the sink the messages' bytes, and the sink decodes them itself — with or
without the schema envelope (schemaless JSON objects get the types Arrow infers),
nulls written as they are. A connector whose value.converter is JsonConverter needs
no `value.format`: the runtime hands the sink Arrow batches (`SinkTask.put_batches`)
decoded the same way, and falls back to records where they cannot be.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from connect.api import DataError, JsonArrowReader, file_batch

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
