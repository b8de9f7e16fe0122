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
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
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

ROOT = Path(__file__).resolve().parent.parent
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
# The registry runs as users run it: `connect registry WORKER.json`, its own process,
# so client and server share the machine's cores as the targets assume.


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _schema_text(i: int) -> str:
    return json.dumps(
        {
            "type": "record",
            "name": f"R{i}",
            "namespace": "bench",
            "fields": [
                {"name": "id", "type": "long"},
                {"name": "name", "type": "string"},
                {"name": f"f{i}", "type": ["null", "string"], "default": None},
            ],
        }
    )


class _RegistryProcess:
    """`connect registry` over a fresh log directory, on a free port."""

    def __init__(self, directory: Path) -> None:
        self.port = _free_port()
        config = directory / "worker.json"
        config.write_text(
            json.dumps(
                {
                    "log.dir": str(directory / "log"),
                    "schema.registry.listeners": f"http://127.0.0.1:{self.port}",
                }
            )
        )
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "connect.cli.main", "registry", str(config)],
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                self.request("GET", "/subjects")
                break
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("the registry did not start") from None
                time.sleep(0.02)

    def connection(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)

    def request(self, method: str, path: str, body: Any = None) -> Any:
        conn = self.connection()
        try:
            return _call(conn, method, path, body)
        finally:
            conn.close()

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


_HEADERS = {"Content-Type": "application/vnd.schemaregistry.v1+json"}


def _call(conn: http.client.HTTPConnection, method: str, path: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    conn.request(method, path, body=data, headers=_HEADERS)
    response = conn.getresponse()
    raw = response.read()
    if response.status != 200:
        raise RuntimeError(f"{method} {path}: {response.status} {raw[:200]!r}")
    return json.loads(raw)


def registry_figures(schemas: int, lookups: int) -> dict[str, Any]:
    """`register_per_s`: distinct schemas registered over HTTP, one client with
    keep-alive, each durable in `_schemas` before it is answered.
    `lookup_per_s`: GET /schemas/ids/{id} over HTTP with keep-alive, round robin
    over the registered ids."""
    directory = Path(tempfile.mkdtemp(prefix="tributary-registry-bench-"))
    server = _RegistryProcess(directory)
    try:
        conn = server.connection()
        bodies = [{"schema": _schema_text(i)} for i in range(schemas)]
        started = time.perf_counter()
        ids = [
            _call(conn, "POST", f"/subjects/bench-{i}-value/versions", body)["id"]
            for i, body in enumerate(bodies)
        ]
        register_s = time.perf_counter() - started
        if len(set(ids)) != schemas:
            raise RuntimeError("distinct schemas must get distinct ids")
        paths = [f"/schemas/ids/{ids[i % schemas]}" for i in range(lookups)]
        started = time.perf_counter()
        for path in paths:
            _call(conn, "GET", path)
        lookup_s = time.perf_counter() - started
        conn.close()
    finally:
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)
    return {
        "register_per_s": round(schemas / register_s),
        "lookup_per_s": round(lookups / lookup_s),
        "registered_schemas": schemas,
        "lookups": lookups,
    }


def rebuild_figures(count: int = 10_000) -> dict[str, Any]:
    """`rebuild_10k_s`: seconds to rebuild a registry from a `_schemas` topic of
    10,000 schemas (written in Confluent's record format, as a registry writes them
    or as an import from a Confluent cluster leaves them), from opening the log to
    answering."""
    from connect.registry.core import SchemaRegistry
    from connect.registry.core.records import SchemaRecord, encode_schema, schema_key
    from log import FileLog

    directory = Path(tempfile.mkdtemp(prefix="tributary-registry-rebuild-"))
    try:
        with FileLog(directory / "log", background=False) as log:
            log.create_topic("_schemas", 1, config={"cleanup.policy": "compact"})
            records = [
                SchemaRecord(f"bench-{i}-value", 1, i + 1, _schema_text(i)) for i in range(count)
            ]
            for start in range(0, count, 1000):
                chunk = records[start : start + 1000]
                log.append(
                    "_schemas",
                    0,
                    [encode_schema(r) for r in chunk],
                    keys=[schema_key(r.subject, r.version) for r in chunk],
                )
            log.flush()
        started = time.perf_counter()
        log = FileLog(directory / "log", background=False)
        registry = SchemaRegistry(log)
        registry.start()
        elapsed = time.perf_counter() - started
        if len(registry.subjects()) != count:
            raise RuntimeError("the rebuilt registry lost subjects")
        registry.close()
        log.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return {"rebuild_10k_s": round(elapsed, 3)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--schemas", type=int, default=2_000)
    parser.add_argument("--lookups", type=int, default=20_000)
    args = parser.parse_args(argv)
    figures: dict[str, Any] = {}
    figures.update(converter_figures(args.records, args.rounds))
    figures.update(registry_figures(args.schemas, args.lookups))
    figures.update(rebuild_figures())
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
