"""`connect log delete` refuses an internal topic without --force: one line saying
what the topic holds, exit 1, and the topic still there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_log_cli import Cli


@pytest.fixture
def cli(subprocess_env: dict[str, str], tmp_path: Path) -> Cli:
    return Cli(subprocess_env, tmp_path / "log", tmp_path)


@pytest.mark.parametrize(
    ("topic", "holds"),
    [
        ("connect-configs", "connector configs"),
        ("connect-offsets", "source connectors' offsets"),
        ("connect-status", "statuses"),
        ("connect-group", "membership"),
        ("_schemas", "schemas"),
        ("__consumer_offsets", "committed offsets"),
        ("__anything", "the log's own state"),
    ],
)
def test_an_internal_topic_is_refused_without_force(cli: Cli, topic: str, holds: str) -> None:
    cli.ok("create", topic)
    line = cli.fails("delete", topic)
    assert f"{topic} is an internal topic" in line and holds in line and "--force" in line
    assert topic in cli.topics("--all")
    assert cli.ok("delete", topic, "--force").stdout.strip() == f"deleted topic {topic}"
    assert topic not in cli.topics("--all")


def test_the_names_a_worker_config_gives_are_internal_too(cli: Cli, tmp_path: Path) -> None:
    config = tmp_path / "worker.json"
    config.write_text(
        json.dumps(
            {
                "log.dir": str(cli.log_dir),
                "offset.storage.topic": "my-offsets",
                "config.storage.topic": "my-configs",
            }
        )
    )
    for topic in ("my-offsets", "my-configs", "connect-status", "plain"):
        cli.ok("create", topic)
    for topic in ("my-offsets", "my-configs", "connect-status"):
        line = cli.fails("delete", topic, "--worker-config", str(config), log_dir=None)
        assert f"{topic} is an internal topic" in line
    # Without the worker config, my-offsets is an ordinary name.
    assert cli.ok("delete", "my-offsets").stdout.strip() == "deleted topic my-offsets"
    assert cli.ok("delete", "plain").stdout.strip() == "deleted topic plain"
