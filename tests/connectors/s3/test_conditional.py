"""Conditional writes against the real endpoint (SeaweedFS honours If-None-Match on
PutObject and CompleteMultipartUpload): a replay recognises its own objects and
replaces none, a writer with other settings (a zombie) is refused and fails, the
non-deterministic layouts and `s3.conditional.writes=false` replace, and a store that
does not implement the header (a proxy answering 501 in front of SeaweedFS: the one
fault SeaweedFS cannot show) is written to without it."""

from __future__ import annotations

import http.client
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest

from connect.herder.standalone import StandaloneHerder
from tests.connectors.s3.conftest import (
    BYTES,
    committed,
    produce,
    read_values,
    schemaless,
    sink_config,
    source_config,
    task_state,
    wait_keys,
)
from tests.s3 import Bucket
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

MiB = 1024 * 1024


def _head(bucket: Bucket, key: str) -> tuple[str, Any]:
    head = bucket.client.head_object(Bucket=bucket.name, Key=key)
    return head["ETag"], head["LastModified"]


def _next_second() -> None:
    """S3 times objects to the second: let one pass, so a replaced object would show."""
    start = time.time()
    wait_until(lambda: int(time.time()) > int(start) + 1, 5, "the next second")


def test_a_replay_finds_its_own_objects_and_replaces_none(
    herder: StandaloneHerder, s3_bucket: Bucket
) -> None:
    log = herder.log
    produce(log, "big", [bytes([65 + i]) * MiB for i in range(6)])  # one 6 MiB object
    produce(log, "small", schemaless([{"i": i} for i in range(3)]))
    big = sink_config(
        s3_bucket,
        "big",
        **{
            "format.class": "ByteArrayFormat",
            "value.converter": BYTES,
            "flush.size": "6",
            "s3.part.size": str(5 * MiB),
        },
    )
    small = sink_config(s3_bucket, "small")
    herder.put_connector_config("big-a", big, allow_replace=True)
    herder.put_connector_config("small-a", small, allow_replace=True)
    keys = wait_keys(s3_bucket, 2)
    assert keys == [
        "topics/big/partition=0/big+0+0000000000.bin",
        "topics/small/partition=0/small+0+0000000000.json",
    ]
    before = {k: _head(s3_bucket, k) for k in keys}
    assert before[keys[0]][0].strip('"').endswith("-2")  # multipart: two parts
    _next_second()
    # The same connectors again under new names: consumed from offset 0, as after a
    # crash before the offset commit. Each completion is refused and recognised.
    herder.put_connector_config("big-b", big, allow_replace=True)
    herder.put_connector_config("small-b", small, allow_replace=True)
    wait_until(lambda: committed(log, "big-b", "big") == 6, 60, "big-b committed")
    wait_until(lambda: committed(log, "small-b", "small") == 3, 30, "small-b committed")
    assert task_state(herder, "big-b")[0] == task_state(herder, "small-b")[0] == "RUNNING"
    assert {k: _head(s3_bucket, k) for k in keys} == before  # nothing replaced
    assert s3_bucket.keys() == keys
    uploads = s3_bucket.client.list_multipart_uploads(Bucket=s3_bucket.name)
    assert not uploads.get("Uploads")  # the refused upload's parts were dropped


def _zombie(herder: StandaloneHerder, bucket: Bucket, **props: str) -> tuple[str, str]:
    """Connector "a" writes records 0-2 as one object; "b", with flush.size 2 and
    `props`, then completes an object of records 0-1 under the same name."""
    produce(herder.log, "orders", schemaless([{"i": i} for i in range(3)]))
    herder.put_connector_config("a", sink_config(bucket, "orders"), allow_replace=True)
    key = wait_keys(bucket, 1)[0]
    assert key == "topics/orders/partition=0/orders+0+0000000000.json"
    herder.put_connector_config(
        "b", sink_config(bucket, "orders", **{"flush.size": "2", **props}), allow_replace=True
    )
    return key, "b"


def test_a_writer_with_other_settings_cannot_replace_a_completed_object(
    herder: StandaloneHerder, s3_bucket: Bucket
) -> None:
    key, name = _zombie(herder, s3_bucket)
    _, trace = wait_until(
        lambda: (s := task_state(herder, name))[0] == "FAILED" and s, 30, "zombie FAILED"
    )
    assert "conditional write refused to replace it" in trace
    assert key in trace and "s3.conditional.writes" in trace
    assert s3_bucket.get(key) == b'{"i":0}\n{"i":1}\n{"i":2}\n'  # the first one stays


def test_an_empty_object_left_by_a_torn_upload_is_replaced(
    herder: StandaloneHerder, s3_bucket: Bucket
) -> None:
    """SeaweedFS shows an empty object when a writer dies after a PutObject's headers,
    before its body (a SIGKILL at that moment; test_s3_exactly_once met it): no writer
    completed it, so the replay replaces it instead of failing as if a zombie had."""
    key = "topics/orders/partition=0/orders+0+0000000000.json"
    s3_bucket.put(key, b"")
    produce(herder.log, "orders", schemaless([{"i": i} for i in range(3)]))
    herder.put_connector_config("s3", sink_config(s3_bucket, "orders"), allow_replace=True)
    wait_until(lambda: s3_bucket.get(key) != b"", 30, "the empty object replaced")
    assert s3_bucket.get(key) == b'{"i":0}\n{"i":1}\n{"i":2}\n'
    wait_until(lambda: committed(herder.log, "s3", "orders") == 3, 30, "offset 3 committed")
    assert task_state(herder, "s3")[0] == "RUNNING"


def test_a_restore_waits_for_the_torn_object_to_be_replaced(
    herder: StandaloneHerder, s3_bucket: Bucket
) -> None:
    """A restore listing the bucket while the empty object is there does not take it
    for the (empty) first object of the partition: the records come back once each."""
    key = "topics/orders/partition=0/orders+0+0000000000.json"
    s3_bucket.put(key, b"")
    log = herder.log
    log.create_topic("orders", 1)
    log.create_topic("restored-orders", 1)
    herder.put_connector_config(
        "restore",
        source_config(
            s3_bucket,
            **{
                "transforms": "r",
                "transforms.r.type": "org.apache.kafka.connect.transforms.RegexRouter",
                "transforms.r.regex": "(.*)",
                "transforms.r.replacement": "restored-$1",
            },
        ),
        allow_replace=True,
    )
    wait_until(lambda: task_state(herder, "restore")[0] == "RUNNING", 30, "restore RUNNING")
    listed = time.monotonic()
    wait_until(lambda: time.monotonic() > listed + 1.0, 5, "a few listings (every 0.2 s)")
    values = schemaless([{"i": i} for i in range(6)])
    produce(log, "orders", values)
    herder.put_connector_config("s3", sink_config(s3_bucket, "orders"), allow_replace=True)
    wait_until(lambda: len(read_values(log, "restored-orders")) >= 6, 30, "restored records")
    assert read_values(log, "restored-orders") == values


@pytest.mark.parametrize(
    "props",
    [
        {"s3.conditional.writes": "false"},
        {"rotate.schedule.interval.ms": "3600000", "timezone": "UTC"},
    ],
    ids=["disabled", "scheduled-rotation"],
)
def test_unconditional_layouts_replace_the_object(
    herder: StandaloneHerder, s3_bucket: Bucket, props: dict[str, str]
) -> None:
    """Scheduled rotation may cut a replay differently: its object must replace the
    one a crash left, so such layouts write unconditionally (as does `false`)."""
    key, name = _zombie(herder, s3_bucket, **props)
    wait_until(lambda: s3_bucket.get(key) == b'{"i":0}\n{"i":1}\n', 30, "object replaced")
    assert task_state(herder, name)[0] == "RUNNING"


class _NoConditionalWrites(BaseHTTPRequestHandler):
    """Forwards every request to SeaweedFS, except that a request carrying
    If-None-Match is answered 501 NotImplemented, as by a store without the feature."""

    protocol_version = "HTTP/1.1"
    target = ("127.0.0.1", 0)
    refused: list[str] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _any(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if "If-None-Match" in self.headers:
            type(self).refused.append(f"{self.command} {self.path}")
            reply = (
                b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>NotImplemented"
                b"</Code><Message>A header you provided implies functionality that is "
                b"not implemented</Message></Error>"
            )
            self.send_response(501)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)
            return
        conn = http.client.HTTPConnection(*self.target, timeout=30)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() != "expect"}
            conn.request(self.command, self.path, body=body, headers=headers)
            response = conn.getresponse()
            data = response.read()
            self.send_response(response.status)
            for name, value in response.getheaders():
                if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        finally:
            conn.close()

    do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _any


@pytest.fixture
def store_without_conditional_writes(s3_bucket: Bucket) -> Iterator[str]:
    target = urlsplit(s3_bucket.url)
    handler = type(
        "Handler",
        (_NoConditionalWrites,),
        {"target": (target.hostname, target.port), "refused": []},
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        assert handler.refused, "the sink never tried a conditional write"


def test_a_store_without_conditional_writes_is_written_to_without_them(
    herder: StandaloneHerder, s3_bucket: Bucket, store_without_conditional_writes: str
) -> None:
    url = store_without_conditional_writes
    produce(herder.log, "orders", schemaless([{"i": i} for i in range(4)]))
    herder.put_connector_config(
        "s3",
        sink_config(s3_bucket, "orders", **{"store.url": url, "flush.size": "2"}),
        allow_replace=True,
    )
    keys = wait_keys(s3_bucket, 2)
    assert [s3_bucket.get(k) for k in keys] == [b'{"i":0}\n{"i":1}\n', b'{"i":2}\n{"i":3}\n']
    wait_until(lambda: committed(herder.log, "s3", "orders") == 4, 30, "offset 4 committed")
    assert task_state(herder, "s3")[0] == "RUNNING"
