"""The main job on the embedded log (`make run`): produce, read back, describe.

Until the connectors land this is an end-to-end tour of the log: 200,000 keyed
events are produced to a 3-partition topic in `data/log`, read back by a consumer
group that commits its offsets, checked (every event exactly once, per-key order
kept), and the topic is described. Rerunning starts from a fresh topic.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from pathlib import Path

from log import Consumer, FileLog, Producer, UnknownTopicOrPartitionError

TOPIC = "demo-events"
EVENTS = 200_000


def main(log_dir: str = "data/log") -> int:
    with FileLog(Path(log_dir)) as log:
        with contextlib.suppress(UnknownTopicOrPartitionError):
            log.delete_topic(TOPIC)
        log.create_topic(TOPIC, 3, config={"segment.bytes": 4 * 1024 * 1024})
        log.delete_group("demo")

        started = time.perf_counter()
        with Producer(log) as producer:
            for i in range(EVENTS):
                user = f"user-{i % 1000}".encode()
                event = json.dumps({"seq": i, "user": user.decode(), "amount": i % 97}).encode()
                producer.send(TOPIC, event, user)
        produced_s = time.perf_counter() - started

        started = time.perf_counter()
        seen: dict[bytes, int] = {}
        count = 0
        in_order = True
        with Consumer(log, group_id="demo", auto_offset_reset="earliest") as consumer:
            consumer.subscribe([TOPIC])
            while count < EVENTS:
                records = consumer.poll(1.0)
                if not records:
                    break
                for rec in records:
                    seq = json.loads(rec.value)["seq"]  # type: ignore[arg-type]
                    assert rec.key is not None
                    in_order &= seen.get(rec.key, -1) < seq
                    seen[rec.key] = seq
                count += len(records)
            consumer.commit()
        consumed_s = time.perf_counter() - started

        desc = log.describe_topic(TOPIC)
        print(f"Tributary demo on the embedded log at {log.directory}")
        print(f"  produced {EVENTS:,} events in {produced_s:.2f}s ({EVENTS / produced_s:,.0f}/s)")
        print(
            f"  consumed {count:,} events in {consumed_s:.2f}s "
            f"({count / consumed_s:,.0f}/s), per-key order kept: {in_order}"
        )
        print(
            f"  topic {desc.name}: {len(desc.partitions)} partitions, "
            f"{desc.size_bytes / 1e6:.1f} MB"
        )
        for p in desc.partitions:
            print(
                f"    partition {p.partition}: offsets {p.earliest_offset}..{p.latest_offset}, "
                f"{p.segments} segment(s)"
            )
        committed = log.committed_offsets("demo")
        print(
            "  group 'demo' committed: "
            + ", ".join(f"{tp}={o.offset}" for tp, o in sorted(committed.items()))
        )
        ok = count == EVENTS and in_order and sum(p.records for p in desc.partitions) == EVENTS
        print("  result: OK" if ok else "  result: MISMATCH")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
