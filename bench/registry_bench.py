"""Benchmark of the schema registry and the AvroConverter; prints one JSON object.

    python bench/registry_bench.py [--records N] [--rounds R]

Converter half: a 10-field record (int, long, string, double, boolean, bytes,
optional string, timestamp, decimal, nested struct) encoded and decoded through the
runtime's converter interface (`from_connect_batch` / `to_connect_batch`, batches of
1,000, registry in memory: the hot path makes no registry call) beside fastavro's
`schemaless_writer` / `schemaless_reader` called directly on the same records as
dicts, in the same run. Each side runs `--rounds` times; the best round counts. The
inputs are frozen out of the cyclic GC's sight (`gc.freeze`) before measuring.

Keys: avro_encode_rps, avro_decode_rps, fastavro_encode_rps, fastavro_decode_rps,
avro_encode_vs_fastavro, avro_decode_vs_fastavro (ratios, target ≥ 0.7), and from the
registry half: register_per_s, lookup_per_s, rebuild_10k_s.
"""

from __future__ import annotations

import argparse
import datetime as dt
import decimal
import gc
import json
import sys
import time
from io import BytesIO
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fastavro import parse_schema, schemaless_reader, schemaless_writer

from connect.api.data import (
    BOOLEAN_SCHEMA,
    BYTES_SCHEMA,
    FLOAT64_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    Schema,
    Struct,
)
from connect.api.logical import Decimal, Timestamp
from connect.converters.avro import AvroConverter, MemorySchemaRegistryClient, to_avro

BATCH = 1_000
TOPIC = "bench"

INNER = Schema.struct([("code", STRING_SCHEMA), ("qty", INT32_SCHEMA)], name="bench.Inner")
RECORD = Schema.struct(
    [
        ("id", INT32_SCHEMA),
        ("seq", INT64_SCHEMA),
        ("name", STRING_SCHEMA),
        ("score", FLOAT64_SCHEMA),
        ("ok", BOOLEAN_SCHEMA),
        ("blob", BYTES_SCHEMA),
        ("note", OPTIONAL_STRING_SCHEMA),
        ("ts", Timestamp.schema()),
        ("amount", Decimal.schema(2)),
        ("inner", INNER),
    ],
    name="bench.Record",
)
_EPOCH = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


def make_records(n: int) -> list[Struct]:
    return [
        Struct(
            RECORD,
            {
                "id": i,
                "seq": 1_000_000_000_000 + i,
                "name": f"customer-{i % 997}",
                "score": i * 0.25,
                "ok": i % 3 == 0,
                "blob": b"\x01\x02\x03\x04",
                "note": None if i % 2 else "a note",
                "ts": _EPOCH + dt.timedelta(milliseconds=i),
                "amount": decimal.Decimal(i % 10_000).scaleb(-2),
                "inner": Struct(INNER, {"code": "c", "qty": i % 50}),
            },
        )
        for i in range(n)
    ]


def _best(rounds: int, fn: Any) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def converter_figures(records: int, rounds: int) -> dict[str, Any]:
    """The converter half: our batch paths vs fastavro directly, same records."""
    structs = make_records(records)
    dicts = [s.to_dict() for s in structs]
    parsed = parse_schema(to_avro(RECORD))
    converter = AvroConverter(MemorySchemaRegistryClient())
    converter.configure({}, False)
    batches = [structs[i : i + BATCH] for i in range(0, records, BATCH)]
    schemas = [RECORD] * BATCH
    encoded: list[list[bytes | None]] = []

    def ours_encode() -> None:
        encoded[:] = [converter.from_connect_batch(TOPIC, schemas[: len(b)], b) for b in batches]

    payloads: list[bytes] = []

    def fastavro_encode() -> None:
        out = []
        for d in dicts:
            buf = BytesIO()
            schemaless_writer(buf, parsed, d)
            out.append(buf.getvalue())
        payloads[:] = out

    def ours_decode() -> None:
        for batch in encoded:
            converter.to_connect_batch(TOPIC, batch)

    def fastavro_decode() -> None:
        for p in payloads:
            schemaless_reader(BytesIO(p), parsed, None)

    ours_encode()  # warm the caches (one registration), then measure
    fastavro_encode()
    # The inputs (50k records, ~1M objects) live for the whole run; freezing them keeps
    # the cyclic GC from re-scanning them on every collection, which would charge the
    # side that allocates more containers (Structs) for the benchmark's own heap.
    gc.collect()
    gc.freeze()
    enc = _best(rounds, ours_encode)
    fa_enc = _best(rounds, fastavro_encode)
    dec = _best(rounds, ours_decode)
    fa_dec = _best(rounds, fastavro_decode)
    check = converter.to_connect_batch(TOPIC, encoded[0][:3])
    assert [sv.value for sv in check] == structs[:3], "round trip mismatch"
    return {
        "records": records,
        "batch": BATCH,
        "avro_encode_rps": round(records / enc),
        "fastavro_encode_rps": round(records / fa_enc),
        "avro_encode_vs_fastavro": round(fa_enc / enc, 3),
        "avro_decode_rps": round(records / dec),
        "fastavro_decode_rps": round(records / fa_dec),
        "avro_decode_vs_fastavro": round(fa_dec / dec, 3),
    }


# ------------------------------------------------------------------ registry half
# TODO(registry): filled in by the registry's engineer. Each returns its own keys.


def register_figures() -> dict[str, Any]:
    """`register_per_s`: distinct schemas registered over HTTP, each durable in
    `_schemas` before it is answered."""
    return {"register_per_s": None}


def lookup_figures() -> dict[str, Any]:
    """`lookup_per_s`: GET /schemas/ids/{id} over HTTP with keep-alive."""
    return {"lookup_per_s": None}


def rebuild_figures() -> dict[str, Any]:
    """`rebuild_10k_s`: seconds to rebuild a registry from a `_schemas` of 10,000 schemas."""
    return {"rebuild_10k_s": None}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    figures: dict[str, Any] = {}
    figures.update(converter_figures(args.records, args.rounds))
    figures.update(register_figures())
    figures.update(lookup_figures())
    figures.update(rebuild_figures())
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
