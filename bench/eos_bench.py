"""Benchmark of exactly-once sources against the same work at-least-once; prints one
JSON object.

1. The file pipeline (bench/pipeline_bench.py's run: a standalone worker process,
   FileStreamSource → log → FileStreamSink, StringConverter) at-least-once and with
   `exactly.once.source.support=enabled`, in alternating rounds (ALO first in one,
   EOS first in the next, so neither always meets the machine's load first), the
   best of `--rounds` of each (the machine is shared): `eos_file_pipeline_ratio` =
   EOS / ALO lines per s; beside it the least CPU seconds per million lines of each
   (the worker and its task processes: `file_pipeline_*_cpu_s_per_m`, steadier
   than the rates on a loaded machine) and the 1-minute load average before and
   after (`load_1m`).
2. The commit of one exactly-once source task's transaction (its records, its
   offsets inside the transaction, the commit: connect.worker.source_transactions)
   with `transaction.boundary=poll` at 5,000 records/s in polls of 100:
   `eos_commit_p50_ms`, `eos_commit_p99_ms`, and the mean CPU a commit costs the
   process (`eos_commit_cpu_ms`: its thread's and the log's fsync threads', which
   the wall-clock figures hide behind the disk's waits).
3. A topic written in transactions of 500 records, read whole at read_committed and
   at read_uncommitted (the log's reads, as a consumer makes them), alternating
   rounds, the best of each: `read_committed_ratio` = committed / uncommitted
   records per second.
4. PostgresCdcSource streaming a backlog of changes (bench/cdc_bench.py's
   `cdc_changes_per_s`: transactions of 600 inserts, 300 updates and 100 deletes
   made while its slot existed) into a FileLog through a standalone herder,
   at-least-once and exactly once, alternating rounds on a private PostgreSQL
   server, each round on a fresh database of the same data, the best of each:
   `eos_cdc_streaming_ratio` = EOS / ALO changes per second (`--cdc-transactions
   0` skips it). Beside it the least CPU seconds per million changes of each mode
   (`cdc_streaming_*_cpu_s_per_m`: this process, where the herder runs, and the
   task process, reaped at the herder's stop; not PostgreSQL's), and the exactly-
   once run's transactions (`cdc_eos_transactions`: the commit markers, offsets of
   the topic past its records) and records per transaction (with
   `transaction.boundary=poll`, the source's poll size: what a commit's cost is
   shared by).

    python bench/eos_bench.py [--lines N] [--rounds R] [--cdc-transactions T] [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.cdc_bench import cdc_changes_per_s, count_records  # noqa: E402
from bench.pipeline_bench import STRING, run_pipeline  # noqa: E402
from connect.worker.source_transactions import SourceTransactions  # noqa: E402
from log import FileLog  # noqa: E402

EOS = {"exactly.once.source.support": "enabled"}
RATE = 5_000  # records per second, the issue's
POLL = 100  # records per poll


def file_pipeline(base: Path, lines: int, rounds: int) -> dict[bool, tuple[float, float]]:
    """Exactly once? -> (best lines per second, least CPU seconds per million lines)."""
    rates: dict[bool, list[float]] = {False: [], True: []}
    cpu: dict[bool, list[float]] = {False: [], True: []}
    for turn in range(rounds):
        for exactly_once in _order(turn):
            before = _children_cpu_s()
            name, extra = ("eos", EOS) if exactly_once else ("alo", None)
            rates[exactly_once].append(run_pipeline(base / name, STRING, lines, extra)[0])
            cpu[exactly_once].append((_children_cpu_s() - before) * 1e6 / lines)
    return {e: (max(rates[e]), min(cpu[e])) for e in (False, True)}


def _children_cpu_s() -> float:
    """User + system CPU of the finished children (the worker, with its task
    processes, which it waited for)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _order(turn: int) -> tuple[bool, bool]:
    """Which runs first in a round (exactly once?): alternating, so that a load
    coming and going on the shared machine does not always fall on the same one."""
    return (False, True) if turn % 2 == 0 else (True, False)


def cdc_streaming(transactions: int, rounds: int) -> dict[str, float]:
    """The CDC stream's figures (module docstring, 4), each run on a fresh database of
    a private server (tests/pg.py's)."""
    from tests.pg import PostgresServer

    server = PostgresServer()
    server.start()
    rates: dict[bool, list[float]] = {False: [], True: []}
    cpu: dict[bool, list[float]] = {False: [], True: []}
    markers: list[int] = []
    records = 0
    try:
        for turn in range(rounds):
            for exactly_once in _order(turn):
                database = server.create_database()
                worker = EOS if exactly_once else None
                before = _self_and_children_cpu_s()
                run = cdc_changes_per_s(
                    server.url(database), transactions=transactions, worker=worker, slot=database
                )
                spent = _self_and_children_cpu_s() - before
                rates[exactly_once].append(run["cdc_changes_per_s"])
                cpu[exactly_once].append(spent * 1e6 / run["cdc_changes"])
                if exactly_once:
                    records = run["cdc_records"]
                    markers.append(run["cdc_log_end_offset"] - records)
    finally:
        server.stop()
    alo, eos = max(rates[False]), max(rates[True])
    return {
        "cdc_streaming_alo_cps": round(alo),
        "cdc_streaming_eos_cps": round(eos),
        "eos_cdc_streaming_ratio": round(eos / alo, 3),
        "cdc_streaming_alo_cpu_s_per_m": round(min(cpu[False]), 2),
        "cdc_streaming_eos_cpu_s_per_m": round(min(cpu[True]), 2),
        "cdc_eos_transactions": min(markers),
        "cdc_eos_records_per_transaction": round(records / max(1, min(markers))),
        "cdc_changes": transactions * 1000,
    }


def _self_and_children_cpu_s() -> float:
    """User + system CPU of this process (the herder, the bench's waits) and of its
    finished children (the task process, which the herder's stop waited for)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime + _children_cpu_s()


def commit_latencies(base: Path, seconds: float) -> tuple[list[float], float]:
    """Each transaction's commit time (ms), the poll boundary at RATE records/s, and
    the mean process CPU (ms) of a commit."""
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
        cpu_s = 0.0
        due = time.monotonic()
        n = 0
        deadline = due + seconds
        while time.monotonic() < deadline:
            txn.append("bench-eos", 0, [value] * POLL)
            n += POLL
            started, cpu_started = time.perf_counter(), time.process_time()
            txn.commit({b'["bench",{"file":"bench"}]': (partition, {"n": n})}, epoch=0,
                       connector="bench")  # fmt: skip
            out.append((time.perf_counter() - started) * 1000)
            cpu_s += time.process_time() - cpu_started
            due += POLL / RATE
            time.sleep(max(0.0, due - time.monotonic()))
        txn.close()
    return out, cpu_s * 1000 / max(1, len(out))


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
        best = {True: 0.0, False: 0.0}  # read_committed?
        for turn in range(4):
            for committed in _order(turn):
                level = "read_committed" if committed else "read_uncommitted"
                started = time.perf_counter()
                got = _read_all(log, level)
                best[committed] = max(best[committed], got / (time.perf_counter() - started))
    return best[True], best[False]


def _read_all(log: FileLog, level: str) -> int:
    return count_records(log, "bench-read", 0, level)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--commit-seconds", type=float, default=10.0)
    parser.add_argument("--read-records", type=int, default=500_000)
    parser.add_argument("--cdc-transactions", type=int, default=200)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    base = args.dir or Path(tempfile.mkdtemp(prefix="tributary-eos-bench-"))
    load_before = os.getloadavg()[0]
    try:
        pipeline = file_pipeline(base, args.lines, args.rounds)
        (alo, alo_cpu), (eos, eos_cpu) = pipeline[False], pipeline[True]
        commits, commit_cpu_ms = commit_latencies(base, args.commit_seconds)
        committed, uncommitted = read_rates(base, args.read_records)
        cdc = cdc_streaming(args.cdc_transactions, args.rounds) if args.cdc_transactions else None
    finally:
        if args.dir is None:
            shutil.rmtree(base, ignore_errors=True)
    print(
        json.dumps(
            {
                "file_pipeline_alo_lps": round(alo),
                "file_pipeline_eos_lps": round(eos),
                "eos_file_pipeline_ratio": round(eos / alo, 3),
                "file_pipeline_alo_cpu_s_per_m": round(alo_cpu, 2),
                "file_pipeline_eos_cpu_s_per_m": round(eos_cpu, 2),
                "eos_commit_p50_ms": round(_percentile(commits, 0.5), 2),
                "eos_commit_p99_ms": round(_percentile(commits, 0.99), 2),
                "eos_commits": len(commits),
                "eos_commit_cpu_ms": round(commit_cpu_ms, 3),
                "read_committed_rps": round(committed),
                "read_uncommitted_rps": round(uncommitted),
                "read_committed_ratio": round(committed / uncommitted, 3),
                **(cdc or {}),
                "lines": args.lines,
                "load_1m": [round(load_before, 1), round(os.getloadavg()[0], 1)],
                "rate_records_per_s": RATE,
            }
        )
    )


if __name__ == "__main__":
    main()
