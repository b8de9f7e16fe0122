"""S3Sink's guarantees with real `connect standalone` processes and a real S3 endpoint:

- exactly once: the worker and its task processes SIGKILLed at several points of a
  run, restarted each time; the bucket then holds exactly the objects, byte for byte,
  of an uninterrupted run — every record in exactly one object;
- an S3 outage mid-upload: the endpoint killed while multipart uploads are in flight
  and brought back; the sink retries, no partial object is ever visible, and nothing is
  lost or written twice.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from log import FileLog
from tests.integration.conftest import JSON, WorkerProcess, connector_file
from tests.s3 import Bucket, S3Server, new_bucket
from tests.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PARTITIONS = 2


def _fill(log_dir: Path, topic: str, per_partition: int, size: int) -> None:
    with FileLog(log_dir) as log:
        log.create_topic(topic, PARTITIONS)
        pad = "x" * size
        for p in range(PARTITIONS):
            values = [orjson.dumps({"p": p, "i": i, "pad": pad}) for i in range(per_partition)]
            for start in range(0, per_partition, 10_000):
                log.append(topic, p, values[start : start + 10_000])
        log.flush()


def _sink(tmp_path: Path, name: str, bucket: Bucket, topic: str, **props: str) -> Path:
    return connector_file(tmp_path, name, {
        "connector.class": "io.confluent.connect.s3.S3SinkConnector",
        "topics": topic,
        "format.class": "io.confluent.connect.s3.format.json.JsonFormat",
        "value.converter": JSON,
        "value.converter.schemas.enable": "false",
        "s3.retry.backoff.ms": "100",
        **bucket.props,
        **props,
    })


def _records_in(objects: dict[str, bytes]) -> list[tuple[int, int]]:
    out = []
    for body in objects.values():
        out.extend((r["p"], r["i"]) for r in map(orjson.loads, body.splitlines()))
    return out


def _check_objects(objects: dict[str, bytes], flush_size: int) -> None:
    """Each object holds flush.size consecutive records starting at its name's offset."""
    for key, body in objects.items():
        records = [orjson.loads(line) for line in body.splitlines()]
        start = int(key.rsplit("+", 1)[1].split(".")[0])
        partition = int(key.rsplit("+", 2)[1])
        assert [(r["p"], r["i"]) for r in records] == [
            (partition, start + n) for n in range(flush_size)], key


def test_sigkill_at_several_points_leaves_the_objects_of_an_uninterrupted_run(
    tmp_path: Path, start_worker: Callable[..., WorkerProcess], s3_server: S3Server
) -> None:
    per_partition, flush = 30_000, 1_000
    total_objects = PARTITIONS * per_partition // flush
    _fill(tmp_path / "log", "events", per_partition, 150)
    reference, crashed = new_bucket(s3_server), new_bucket(s3_server)
    try:
        # An uninterrupted run.
        ref = _sink(tmp_path, "s3-reference", reference, "events", **{"flush.size": str(flush)})
        worker = start_worker([ref], {"value.converter": JSON})
        wait_until(lambda: len(reference.keys()) == total_objects, 120, "the reference run")
        assert worker.stop() == 0
        expected = reference.objects()
        _check_objects(expected, flush)
        # The same data, with the worker killed at three points of the run.
        crash = _sink(tmp_path, "s3-crash", crashed, "events", **{"flush.size": str(flush)})
        kills = 0
        for at_least in (1, total_objects // 3, 2 * total_objects // 3):
            worker = start_worker([crash], {"value.converter": JSON})
            wait_until(lambda n=at_least: len(crashed.keys()) >= n, 120, f"{at_least} objects")
            if len(crashed.keys()) < total_objects:
                kills += 1
            worker.kill()
        assert kills >= 2, "the run finished before it could be interrupted"
        worker = start_worker([crash], {"value.converter": JSON})
        wait_until(lambda: len(crashed.keys()) == total_objects, 120, "the interrupted run")
        assert worker.stop() == 0
        got = crashed.objects()
        assert got == expected  # same keys, same bytes
        records = _records_in(got)
        assert len(records) == len(set(records)) == PARTITIONS * per_partition
    finally:
        reference.remove()
        crashed.remove()


def test_an_s3_outage_mid_upload_is_retried_without_partial_objects(
    tmp_path: Path,
    start_worker: Callable[..., WorkerProcess],
    make_s3_server: Callable[[], S3Server],
) -> None:
    server = make_s3_server()
    bucket = new_bucket(server)
    per_partition, flush = 16_000, 8_000  # ~8 MB objects: two 5 MiB parts each
    _fill(tmp_path / "log", "blobs", per_partition, 1000)
    config = _sink(tmp_path, "s3", bucket, "blobs", **{
        "flush.size": str(flush), "s3.part.size": str(5 * 1024 * 1024),
        "s3.part.retries": "2"})
    worker = start_worker([config], {"value.converter": JSON})
    # Stop the endpoint as soon as a multipart upload is under way.
    wait_until(lambda: bucket.client.list_multipart_uploads(Bucket=bucket.name).get("Uploads"),
               60, "an upload in flight", interval_s=0.01)
    server.stop()
    wait_until(lambda: "S3 endpoint unavailable" in worker.stderr, 30, "the sink noticing")
    status = worker.status("s3")
    assert status is not None and status["tasks"][0]["state"] == "RUNNING"
    server.start()
    wait_until(lambda: len(bucket.keys()) == PARTITIONS * per_partition // flush, 120,
               "every object after the outage")
    objects = bucket.objects()
    _check_objects(objects, flush)
    records = _records_in(objects)
    assert len(records) == len(set(records)) == PARTITIONS * per_partition
    assert worker.stop() == 0
