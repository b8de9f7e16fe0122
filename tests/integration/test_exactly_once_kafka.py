"""Exactly-once sources on a real Apache Kafka broker (tests/kafka_broker.py): a
standalone worker whose log is the broker runs a FileStreamSource with
`exactly.once.source.support=enabled` through Kafka's transactional producer, is
SIGKILLed at seeded moments and started again, and a read_committed reader of the
topic sees every line once, in order (librdkafka's mock cluster writes no
transaction markers, so only the real broker can show it)."""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import pytest

from log.kafka import KafkaLog
from tests.integration.conftest import connector_file
from tests.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TOPIC = "eos-lines"


class _Committed:
    """The one-partition topic at read_committed, read on from where it was."""

    def __init__(self, bootstrap: str) -> None:
        self.log = KafkaLog(bootstrap, timeout_s=10)
        self.values: list[bytes | None] = []
        self._position = 0

    def read(self) -> list[bytes | None]:
        if TOPIC not in self.log.list_topics():
            return self.values
        while True:
            records = self.log.read(TOPIC, 0, self._position, isolation_level="read_committed")
            self.values.extend(r.value for r in records)
            after = getattr(records, "next_offset", None)
            if after is None:
                after = records[-1].offset + 1 if records else self._position
            if after <= self._position:
                return self.values
            self._position = after


def test_every_line_once_through_kafka_transactions_across_sigkills(
    tmp_path: Path, start_worker: Any, kafka_broker: Any
) -> None:
    kafka_broker.empty()
    rng = random.Random(618)
    n = 60_000
    src = tmp_path / "in.txt"
    expected = b"".join(b"line %07d\n" % i for i in range(n))
    src.write_bytes(expected)
    config = connector_file(
        tmp_path,
        "eos-source",
        {"connector.class": "FileStreamSource", "file": str(src), "topic": TOPIC,
         "batch.size": "500"},
    )  # fmt: skip
    worker_config = {
        "bootstrap.servers": kafka_broker.bootstrap,
        "offset.storage.partitions": "1",
        "status.storage.partitions": "1",
        "exactly.once.source.support": "enabled",
    }
    committed = _Committed(kafka_broker.bootstrap)
    try:
        kills = 0
        for _ in range(3):
            worker = start_worker([config], worker_config)
            target = min(n - 1, len(committed.read()) + rng.randrange(1, n // 5))
            wait_until(lambda t=target: len(committed.read()) >= t, 120, f"{target} lines")
            time.sleep(rng.uniform(0, 0.3))
            worker.kill()
            kills += 1
            if len(committed.read()) >= n:
                break
        last = start_worker([config], worker_config)
        try:
            wait_until(lambda: len(committed.read()) >= n, 120, "every line committed")
        except AssertionError as exc:  # what the worker was doing, for the report
            status = last.status("eos-source")
            raise AssertionError(f"{exc}; status {status}; log:\n{last.stderr[-6000:]}") from None
        assert kills >= 2
        assert committed.read() == expected.splitlines()
    finally:
        committed.log.close()
