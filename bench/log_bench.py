"""Benchmark of the embedded log; prints one JSON object.

Each figure is measured beside a raw baseline that writes the same payload bytes
(the values, joined per batch) to a plain file with the same fsync policy (one
fsync per batch), so the ratios show what the log's own work costs.

    python bench/log_bench.py [--records N] [--dir DIR]

Keys: append_100b_rps, append_100b_vs_raw, raw_100b_rps, append_1kb_mbps,
raw_1kb_mbps, append_1kb_vs_raw, read_rps, pubsub_rps, peak_rss_mb (and the
settings used).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from log import Consumer, FileLog, Producer, TopicPartition

BATCH = 1000


def _values(size: int, batches: int = 8) -> list[list[bytes]]:
    """A few distinct batches of random values, reused round-robin (memory stays flat)."""
    return [[os.urandom(size) for _ in range(BATCH)] for _ in range(batches)]


def raw_append(directory: Path, pool: list[list[bytes]], batches: int) -> float:
    """Seconds to write `batches` batches of joined values with one fsync each."""
    path = directory / "raw.bin"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        started = time.perf_counter()
        for i in range(batches):
            os.write(fd, b"".join(pool[i % len(pool)]))
            os.fsync(fd)
        return time.perf_counter() - started
    finally:
        os.close(fd)
        path.unlink()


def log_append(log: FileLog, topic: str, pool: list[list[bytes]], batches: int) -> float:
    log.create_topic(topic, 1, config={"flush.messages": 1})
    started = time.perf_counter()
    for i in range(batches):
        log.append(topic, 0, pool[i % len(pool)])
    return time.perf_counter() - started


def read_all(log: FileLog, topic: str) -> tuple[int, float]:
    offset, count = 0, 0
    end = log.latest_offset(topic, 0)
    started = time.perf_counter()
    while offset < end:
        # Each call materialises Record(topic, partition, offset, timestamp, key,
        # value, headers) tuples; the rate counts records delivered that way.
        records = log.read(topic, 0, offset, max_bytes=1 << 20)
        count += len(records)
        offset = records[-1].offset + 1
    return count, time.perf_counter() - started


def pubsub(log: FileLog, topic: str, records: int, size: int) -> float:
    log.create_topic(topic, 1)
    values = [os.urandom(size) for _ in range(BATCH)]
    consumer = Consumer(
        log, group_id="bench", auto_offset_reset="earliest", enable_auto_commit=False
    )
    consumer.assign([TopicPartition(topic, 0)])

    def produce() -> None:
        with Producer(log, linger_ms=5) as producer:
            send = producer.send
            for i in range(records):
                send(topic, values[i % BATCH])

    started = time.perf_counter()
    thread = threading.Thread(target=produce)
    thread.start()
    got = 0
    while got < records:
        got += len(consumer.poll(5.0))
    elapsed = time.perf_counter() - started
    thread.join()
    consumer.commit()
    consumer.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--dir", help="where to put the log (default: a temp dir)")
    args = parser.parse_args()
    root = Path(args.dir or tempfile.mkdtemp(prefix="tributary-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    batches = args.records // BATCH
    out: dict[str, object] = {"records": batches * BATCH, "batch_records": BATCH}
    try:
        with FileLog(root / "log", background=False) as log:
            pool = _values(100)
            raw_s = min(raw_append(root, pool, batches) for _ in range(2))
            log_s = log_append(log, "bench-100b", pool, batches)
            n = batches * BATCH
            out["raw_100b_rps"] = round(n / raw_s)
            out["append_100b_rps"] = round(n / log_s)
            out["append_100b_vs_raw"] = round(raw_s / log_s, 3)

            count, read_s = read_all(log, "bench-100b")
            assert count == n, (count, n)
            out["read_rps"] = round(count / read_s)

            pool = _values(1024, batches=4)
            kb_batches = max(1, batches // 4)
            mb = kb_batches * BATCH * 1024 / 1e6
            raw_s = min(raw_append(root, pool, kb_batches) for _ in range(2))
            log_s = log_append(log, "bench-1kb", pool, kb_batches)
            out["raw_1kb_mbps"] = round(mb / raw_s, 1)
            out["append_1kb_mbps"] = round(mb / log_s, 1)
            out["append_1kb_vs_raw"] = round(raw_s / log_s, 3)
            log.delete_topic("bench-1kb")

            pubsub_s = pubsub(log, "bench-pubsub", n, 100)
            out["pubsub_rps"] = round(n / pubsub_s)
    finally:
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
