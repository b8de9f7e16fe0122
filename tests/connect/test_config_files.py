"""Config files as users have them (connect.config_files): JSON or `.properties`,
found by name or content, one line naming the file for anything unreadable, and
Kafka's worker keys noted, never refused, never sending a standalone worker to a
Kafka cluster nobody asked for."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from connect.api import ConfigError
from connect.config_files import ConfigFileError, kafka_worker_notes, read_config_file
from connect.config_providers import FileConfigProvider
from connect.standalone import load_connector_config, load_worker_config, open_log
from log import FileLog


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("w.properties", "a=1\nb : two", {"a": "1", "b": "two"}),
        ("w.json", '{"a": 1}', {"a": 1}),
        ("worker.conf", '  {"a": "1"}', {"a": "1"}),  # no known suffix: content decides
        ("worker", "# Kafka's style\na=1", {"a": "1"}),
        ("w.PROPERTIES", "{a=1", {"{a": "1"}),  # the suffix wins over the content
    ],
)
def test_the_format_is_found_by_name_then_content(
    tmp_path: Path, name: str, text: str, expected: dict[str, object]
) -> None:
    path = tmp_path / name
    path.write_text(text)
    assert read_config_file(path, "worker config") == expected


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing.properties", None, "cannot be read: No such file or directory"),
        ("bad.json", '{"a": 1,}', "line 1: is not valid JSON: Expecting property name"),
        ("list.json", "[1, 2]", ": must be a JSON object of key: value"),
        ("bad.properties", "a=1\nb=\\u12x4", "line 2: malformed \\uxxxx escape: \\u12x4"),
        ("noext", '{"a": ', "line 1: is not valid JSON"),
    ],
)
def test_an_unreadable_file_is_one_line_naming_it(
    tmp_path: Path, name: str, content: str | None, message: str
) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigFileError) as caught:
        read_config_file(path, "worker config")
    text = str(caught.value)
    assert text.startswith(f"worker config {path}")
    assert message in text
    assert "\n" not in text
    assert caught.value.path == str(path)


def test_a_directory_is_named_as_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match="is a directory, not a file"):
        read_config_file(tmp_path, "connector config")


def test_a_properties_connector_file_is_a_flat_config(tmp_path: Path) -> None:
    path = tmp_path / "c.properties"
    path.write_text("name=src\nconnector.class=FileStreamSource\ntasks.max=1\nfile=a b.txt\n")
    assert load_connector_config(path) == (
        "src",
        {"name": "src", "connector.class": "FileStreamSource", "tasks.max": "1", "file": "a b.txt"},
    )


def test_kafka_worker_keys_are_noted_not_warned_about(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "w.properties"
    path.write_text(
        f"log.dir={tmp_path / 'log'}\nplugin.path=/usr/share/java\n"
        "internal.key.converter=org.apache.kafka.connect.json.JsonConverter\n"
        "offset.storage.replication.factor=1\nofset.flush.interval.ms=5\n"
    )
    with caplog.at_level(logging.INFO, logger="connect"):
        load_worker_config(path)
    lines = [r.getMessage() for r in caplog.records]
    assert f"worker config {path}: plugin.path: accepted, plugins are Python packages" in "".join(
        lines
    )
    noted = {line.split(": ")[1] for line in lines if ": accepted, " in line}
    assert noted == {"plugin.path", "internal.key.converter", "offset.storage.replication.factor"}
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1  # only the misspelt key is unknown
    assert "'ofset.flush.interval.ms'" in warnings[0]


def test_kafka_stock_standalone_keys_keep_the_log_on_this_machine(tmp_path: Path) -> None:
    """Kafka's connect-standalone.properties names a broker and its offsets file: a
    standalone worker runs on the embedded log beside that file, and opens no Kafka."""
    state = tmp_path / "connect.offsets"
    path = tmp_path / "w.properties"
    path.write_text(f"bootstrap.servers=localhost:9092\noffset.storage.file.filename={state}\n")
    config = load_worker_config(path)
    assert config["log.dir"] == f"{state}.tributary"
    assert not config["bootstrap.servers"]
    log = open_log(config)
    try:
        assert isinstance(log, FileLog)
    finally:
        log.close()
    # log.dir, when given, is where the log is; the note says so and why the broker is not used.
    updates, notes = kafka_worker_notes(
        {"bootstrap.servers": "k:9092", "offset.storage.file.filename": "f", "log.dir": "d"},
        standalone=True,
    )
    assert updates == {"bootstrap.servers": []}
    assert notes == [
        "offset.storage.file.filename: a standalone worker keeps its records and source offsets "
        "in the embedded log at d; bootstrap.servers k:9092 is not used (to run on Kafka, "
        "remove offset.storage.file.filename)"
    ]


def test_bootstrap_servers_alone_still_asks_for_kafka() -> None:
    assert kafka_worker_notes({"bootstrap.servers": "k:9092"}, standalone=True) == ({}, [])
    updates, notes = kafka_worker_notes(
        {"bootstrap.servers": "k:9092", "offset.storage.file.filename": "f"}, standalone=False
    )
    assert updates == {}  # a distributed worker has no state file: Kafka it is
    assert notes == [
        "offset.storage.file.filename: accepted, a distributed worker keeps source offsets in "
        "its offset.storage.topic"
    ]


def test_a_file_provider_reads_secrets_by_the_java_rules(tmp_path: Path) -> None:
    secrets = tmp_path / "creds.properties"
    secrets.write_bytes(b"password = p\\=q\\\\r\\\n    st\nuser: caf\xe9\n")  # ISO-8859-1
    provider = FileConfigProvider()
    provider.configure({})
    assert provider.get(str(secrets), "password") == "p=q\\rst"
    assert provider.get(str(secrets), "user") == "café"


@pytest.mark.parametrize("given", ["soon", "500"])
def test_a_bad_kafka_request_timeout_is_one_line_naming_the_key(given: str) -> None:
    """`kafka.request.timeout.ms` sets the log's request timeout; a value that is not
    a whole number of milliseconds, or under 1 s, is refused before any broker is asked."""
    with pytest.raises(ConfigError) as failed:
        open_log({"bootstrap.servers": "127.0.0.1:1", "kafka.request.timeout.ms": given})
    assert "kafka.request.timeout.ms" in str(failed.value)
    assert "\n" not in str(failed.value)
