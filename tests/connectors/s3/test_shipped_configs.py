"""The shipped S3 configs run as shipped against a local endpoint (only the endpoint,
bucket and credentials of the test's server swapped in, and shorter intervals), with
the shipped worker config's StringConverter: file lines → S3Sink →
S3Source restore → `restored-connect-test`, line for line."""

from __future__ import annotations

from pathlib import Path

import pytest

from connect.standalone import load_connector_config
from tests.conftest import ROOT
from tests.connectors.s3.conftest import STRING, read_values, wait_keys
from tests.s3 import Bucket
from tests.waiting import wait_until

pytestmark = pytest.mark.slow


def test_the_sink_and_restore_configs_run_as_shipped(
    start_herder, s3_bucket: Bucket, tmp_path: Path
) -> None:
    herder = start_herder()
    lines = [f"line {i} ünïcødé" for i in range(25)]
    (tmp_path / "test.txt").write_text("".join(f"{line}\n" for line in lines))
    herder.put_connector_config("file-source", {
        "connector.class": "FileStreamSource", "file": str(tmp_path / "test.txt"),
        "topic": "connect-test", "value.converter": STRING}, allow_replace=True)
    for file in ("connect-s3-sink.json", "connect-s3-source.json"):
        name, config = load_connector_config(ROOT / "configs" / file)
        assert config["store.url"] == "http://127.0.0.1:8333"
        config = {**config, **s3_bucket.props}
        config["s3.poll.interval.ms"] = "200"
        config["rotate.schedule.interval.ms"] = "500" if "sink" in file else "-1"
        herder.put_connector_config(name, config, allow_replace=True)
    keys = wait_keys(s3_bucket, 1)
    assert keys[0] == "topics/connect-test/partition=0/connect-test+0+0000000000.json"
    restored = wait_until(
        lambda: (v := read_values(herder.log, "restored-connect-test")) and len(v) >= 25 and v,
        30, "restored lines")
    assert [v.decode() for v in restored] == lines
