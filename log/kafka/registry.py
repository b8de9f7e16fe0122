"""The topic registry: what Tributary asked for each topic, in a compacted topic.

Kafka knows a topic's partition count and (through DescribeConfigs) its configs,
but a cluster without the admin API — librdkafka's mock, or a real one where we may
not create topics — makes topics on first use with the broker's defaults (4
partitions on the mock). A runtime that asked for a one-partition, compacted
`connect-configs` must still get one totally ordered partition. So every
`create_topic` records the request here, and KafkaLog shows a registered topic with
the registered partition count (never more than the broker has); partitions past it
are never written or read by Tributary. Topics not in the registry (made by other
Kafka clients) show the broker's count and default configs.

Layout: topic `__tributary_topics`, partition 0 only (whatever count the broker
gave it); key = topic name (UTF-8); value = JSON `{"partitions": n, "config": {…}}`,
or a tombstone when the topic is deleted. Every process replays it from where it
last stopped, so a topic registered by another worker is seen on the next miss.

A miss is remembered for `MISS_TTL_S`: a topic made by another Kafka client is never
registered, and every append to it looked it up twice (its partition count, its
config), each miss a round trip to the broker for the registry's end offset (seen in
bench/mysql_cdc_bench.py's worker, on topics the bench creates with Kafka's admin
client). So a topic another worker registers just after our miss is seen up to that
long later: the same race as a lookup a moment before its registration.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from log.records import Record

__all__ = ["REGISTRY_TOPIC", "Registered", "TopicRegistry"]

REGISTRY_TOPIC = "__tributary_topics"
#: How long a miss stands before the registry is read again for that name.
MISS_TTL_S = 1.0

#: (offset, max_records) → records of partition 0 of the registry topic, from offset.
ReadFn = Callable[[int], list[Record]]
#: (keys, values) → None, appended to partition 0 and delivered.
AppendFn = Callable[[list[bytes | None], list[bytes | None]], None]
EndFn = Callable[[], tuple[int, int]]


@dataclass(frozen=True, slots=True)
class Registered:
    partitions: int
    config: dict[str, object]


class TopicRegistry:
    """Replays and writes the registry topic (see the module docstring)."""

    def __init__(self, read: ReadFn, append: AppendFn, watermarks: EndFn) -> None:
        self._read = read
        self._append = append
        self._watermarks = watermarks
        self._lock = threading.Lock()
        self._table: dict[str, Registered] = {}
        self._position = 0
        self._misses: dict[str, float] = {}  # name → when it was last missed (monotonic)

    def catch_up(self) -> None:
        with self._lock:
            low, high = self._watermarks()
            position = max(self._position, low)
            while position < high:
                records = self._read(position)
                if not records:
                    break
                for rec in records:
                    if rec.key is None:
                        continue
                    name = rec.key.decode()
                    if rec.value is None:
                        self._table.pop(name, None)
                    else:
                        entry = json.loads(rec.value)
                        self._table[name] = Registered(
                            int(entry["partitions"]), dict(entry.get("config", {}))
                        )
                position = records[-1].offset + 1
            self._position = position

    def get(self, name: str, *, refresh: bool = False) -> Registered | None:
        """The registered entry; a miss (or `refresh`) reads what others wrote first."""
        entry = self._table.get(name)
        if entry is not None and not refresh:
            return entry
        missed = self._misses.get(name)
        if not refresh and missed is not None and time.monotonic() - missed < MISS_TTL_S:
            return None
        self.catch_up()
        entry = self._table.get(name)
        if entry is None:
            self._misses[name] = time.monotonic()
        else:
            self._misses.pop(name, None)
        return entry

    def put(self, name: str, partitions: int, config: Mapping[str, object]) -> None:
        value = json.dumps({"partitions": partitions, "config": dict(config)}, sort_keys=True)
        self._append([name.encode()], [value.encode()])
        self.catch_up()

    def remove(self, name: str) -> None:
        self._append([name.encode()], [None])
        self.catch_up()
