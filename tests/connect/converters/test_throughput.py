"""A throughput check: printed for the record, asserted only loosely (shared CI boxes
vary). Batches of 10,000 as the worker converts them; 200,000 records per figure (a
million took 12.6 s of the suite for the same loose check; bench/ has the figures)."""

from __future__ import annotations

import json
import random
import string
import time

from connect.api import STRING_SCHEMA, Converter, Schema
from connect.converters import IntegerConverter, JsonConverter, StringConverter

RECORDS, BATCH = 200_000, 10_000


def measure(converter: Converter, schema: Schema | None, values: list) -> tuple[float, float]:
    schemas = [schema] * len(values)
    converter.to_connect_batch("t", converter.from_connect_batch("t", schemas, values))  # warm
    to_bytes = from_bytes = 0.0
    for _ in range(RECORDS // len(values)):
        t0 = time.perf_counter()
        data = converter.from_connect_batch("t", schemas, values)
        t1 = time.perf_counter()
        converter.to_connect_batch("t", data)
        from_bytes += time.perf_counter() - t1
        to_bytes += t1 - t0
    return round(to_bytes, 3), round(from_bytes, 3)


def test_throughput(capsys: object) -> None:
    rng = random.Random(7)
    texts = ["".join(rng.choices(string.ascii_letters, k=100)) for _ in range(BATCH)]
    with_schemas = JsonConverter()
    with_schemas.configure({}, False)
    plain = JsonConverter()
    plain.configure({"schemas.enable": "false"}, False)
    strings = StringConverter()
    strings.configure({}, False)
    figures = {
        "json_schemas_s": measure(with_schemas, STRING_SCHEMA, texts),
        "json_schemaless_s": measure(plain, None, texts),
        "string_s": measure(strings, None, texts),
        "integer_s": measure(IntegerConverter(), None, list(range(BATCH))),
    }
    print(json.dumps({"records": RECORDS, "value_bytes": 100, "to_bytes/from_bytes": figures}))
    # The target is 3 s a million both ways (0.6 s here); five times it only catches collapse.
    assert sum(figures["json_schemas_s"]) < 15 * RECORDS / 1_000_000
