"""Benchmark of exactly-once sources against the same work at-least-once; prints one
JSON object.

1. The file pipeline (bench/pipeline_bench.py's run: a standalone worker process,
   FileStreamSource → log → FileStreamSink, StringConverter) at-least-once and with
   `exactly.once.source.support=enabled`, interleaved, the best of `--rounds` of
   each (the machine is shared): `eos_file_pipeline_ratio` = EOS / ALO lines per s.
2. The commit of one exactly-once source task's transaction (its records, its
   offsets inside the transaction, the commit: connect.worker.source_transactions)
   with `transaction.boundary=poll` at 5,000 records/s in polls of 100:
   `eos_commit_p50_ms`, `eos_commit_p99_ms`.
3. A topic written in transactions of 500 records, read whole at read_committed and
   at read_uncommitted (the log's reads, as a consumer makes them):
   `read_committed_ratio` = committed / uncommitted records per second.

Not measured here yet: the CDC snapshot and streaming figures (bench/cdc_bench.py
with the worker key set), the issue's `eos_cdc_streaming_ratio`.

    python bench/eos_bench.py [--lines N] [--rounds R] [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.pipeline_bench import STRING, run_pipeline  # noqa: E402
from connect.worker.source_transactions import SourceTransactions  # noqa: E402
from log import FileLog  # noqa: E402

EOS = {"exactly.once.source.support": "enabled"}
RATE = 5_000  # records per second, the issue's
POLL = 100  # records per poll


def file_pipeline(base: Path, lines: int, rounds: int) -> tuple[float, float]:
    """(best at-least-once, best exactly-once) lines per second."""
    alo: list[float] = []
    eos: list[float] = []
    for _ in range(rounds):
        alo.append(run_pipeline(base / "alo", STRING, lines)[0])
        eos.append(run_pipeline(base / "eos", STRING, lines, EOS)[0])
    return max(alo), max(eos)


def commit_latencies(base: Path, seconds: float) -> list[float]:
    """Each transaction's commit time (ms): the poll boundary at RATE records/s."""
    directory = base / "commits"
    shutil.rmtree(directory, ignore_errors=True)
    with FileLog(directory) as log:
        log.create_topic("bench-eos", 1)
        txn = SourceTransactions(
            log,
            task_name="bench-0",
            transactional_id="bench-eos-0",
            transaction_timeout_ms=60_000,
            boundary="poll",
            interval_ms=0,
            offsets_topic="connect-offsets",
            offsets_partitions=25,
        )
        txn.start()
        value = b"x" * 100
        partition = {"file": "bench"}
        out: list[float] = []
        due = time.monotonic()
        n = 0
        deadline = due + seconds
        while time.monotonic() < deadline:
            txn.append("bench-eos", 0, [value] * POLL)
            n += POLL
            started = time.perf_counter()
            txn.commit({b'["bench",{"file":"bench"}]': (partition, {"n": n})}, epoch=0,
                       connector="bench")  # fmt: skip
            out.append((time.perf_counter() - started) * 1000)
            due += POLL / RATE
            time.sleep(max(0.0, due - time.monotonic()))
        txn.close()
    return out


def read_rates(base: Path, records: int) -> tuple[float, float]:
    """(read_committed, read_uncommitted) records per second over one topic."""
    directory = base / "reads"
    shutil.rmtree(directory, ignore_errors=True)
    with FileLog(directory) as log:
        log.create_topic("bench-read", 1)
        producer = log.transactional_producer("bench-reader")
        producer.init_transactions()
        value = b"y" * 100
        for _ in range(records // 500):
            producer.begin_transaction()
            producer.append("bench-read", 0, [value] * 500)
            producer.commit_transaction()
        producer.close()
        rates = []
        for level in ("read_committed", "read_uncommitted"):
            best = 0.0
            for _ in range(3):
                started = time.perf_counter()
                got = _read_all(log, level)
                best = max(best, got / (time.perf_counter() - started))
            rates.append(best)
    return rates[0], rates[1]


def _read_all(log: FileLog, level: str) -> int:
    position, got = 0, 0
    while True:
        batch = log.read("bench-read", 0, position, max_bytes=1 << 20, isolation_level=level)
        got += len(batch)
        after = getattr(batch, "next_offset", None)
        if after is None:
            after = batch[-1].offset + 1 if batch else position
        if after <= position:
            return got
        position = after


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--commit-seconds", type=float, default=10.0)
    parser.add_argument("--read-records", type=int, default=500_000)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    base = args.dir or Path(tempfile.mkdtemp(prefix="tributary-eos-bench-"))
    try:
        alo, eos = file_pipeline(base, args.lines, args.rounds)
        commits = commit_latencies(base, args.commit_seconds)
        committed, uncommitted = read_rates(base, args.read_records)
    finally:
        if args.dir is None:
            shutil.rmtree(base, ignore_errors=True)
    print(
        json.dumps(
            {
                "file_pipeline_alo_lps": round(alo),
                "file_pipeline_eos_lps": round(eos),
                "eos_file_pipeline_ratio": round(eos / alo, 3),
                "eos_commit_p50_ms": round(_percentile(commits, 0.5), 2),
                "eos_commit_p99_ms": round(_percentile(commits, 0.99), 2),
                "eos_commits": len(commits),
                "read_committed_rps": round(committed),
                "read_uncommitted_rps": round(uncommitted),
                "read_committed_ratio": round(committed / uncommitted, 3),
                "lines": args.lines,
                "rate_records_per_s": RATE,
            }
        )
    )


if __name__ == "__main__":
    main()
