"""The exactly-once keys (KIP-618's names and defaults) and their validation: each
refusal on its own key, with a message that says what to do, the same through
`config/validate` and through a create (the herder's one door)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from connect.api import ConfigError
from connect.herder.api import BadRequestError
from connect.worker.config import WORKER_CONFIG
from connect.worker.connector_config import SOURCE_CONNECTOR_CONFIG
from connect.worker.exactly_once_config import sink_isolation_level, transactional_id

ENABLED = {"exactly.once.source.support": "enabled"}


def _source(tmp_path: Any, **extra: str) -> dict[str, str]:
    return {
        "name": "eos",
        "connector.class": "FileStreamSource",
        "file": str(tmp_path / "in.txt"),
        "topic": "t",
        **extra,
    }


def _errors(infos: dict[str, Any]) -> dict[str, list[str]]:
    return {
        c["value"]["name"]: c["value"]["errors"] for c in infos["configs"] if c["value"]["errors"]
    }


def test_the_keys_have_kafkas_names_and_defaults() -> None:
    assert WORKER_CONFIG.parse({})["exactly.once.source.support"] == "disabled"
    parsed = SOURCE_CONNECTOR_CONFIG.parse({"name": "n", "connector.class": "x"})
    assert parsed["exactly.once.support"] == "requested"
    assert parsed["transaction.boundary"] == "poll"
    assert parsed["transaction.boundary.interval.ms"] is None
    assert parsed["offsets.storage.topic"] is None
    with pytest.raises(ConfigError, match=re.escape("exactly.once.source.support")):
        WORKER_CONFIG.parse({"exactly.once.source.support": "on"})


def test_transactional_ids_are_kafkas() -> None:
    assert transactional_id({"group.id": "g"}, "w:1", "c", 3) == "g-c-3"
    assert transactional_id({}, "w:1", "c", 3) == "w:1-c-3"  # standalone: the worker id


def test_sinks_read_committed_on_an_exactly_once_worker_or_when_asked() -> None:
    override = "consumer.override.isolation.level"
    assert sink_isolation_level({}, {}) == "read_uncommitted"  # Kafka's default
    assert sink_isolation_level(ENABLED, {}) == "read_committed"
    assert sink_isolation_level({}, {override: "read_committed"}) == "read_committed"
    assert sink_isolation_level({"consumer.isolation.level": "read_committed"}, {}) == (
        "read_committed"
    )
    assert sink_isolation_level(ENABLED, {override: "read_uncommitted"}) == "read_uncommitted"


@pytest.mark.parametrize(
    ("worker", "extra", "key", "says"),
    [
        # stdin cannot be read again: the file source answers UNSUPPORTED
        (ENABLED, {"exactly.once.support": "required", "file": ""}, "exactly.once.support",
         "exactly.once.support=requested"),
        # the worker has it off
        ({}, {"exactly.once.support": "required"}, "exactly.once.support",
         "exactly.once.source.support is 'disabled'"),
        ({"exactly.once.source.support": "preparing"}, {"exactly.once.support": "required"},
         "exactly.once.support", "set it to 'enabled'"),
        # the file source's tasks do not draw their own boundaries
        (ENABLED, {"transaction.boundary": "connector"}, "transaction.boundary",
         "transaction.boundary=poll or interval"),
        # an interval without the interval boundary
        (ENABLED, {"transaction.boundary.interval.ms": "1000"}, "transaction.boundary.interval.ms",
         "set transaction.boundary=interval"),
        (ENABLED, {"transaction.boundary": "interval", "transaction.boundary.interval.ms": "-1"},
         "transaction.boundary.interval.ms", "at least 0"),
        (ENABLED, {"transaction.boundary": "sometimes"}, "transaction.boundary", "sometimes"),
    ],
)  # fmt: skip
def test_validate_and_create_refuse_on_the_key(
    tmp_path: Any, start_herder: Any, worker: dict, extra: dict, key: str, says: str
) -> None:
    herder = start_herder(worker)
    config = _source(tmp_path, **extra)
    errors = _errors(herder.validate_connector_config(config))
    assert list(errors) == [key]
    assert any(says in e for e in errors[key]), errors
    with pytest.raises(BadRequestError, match=re.escape(key)):
        herder.put_connector_config("eos", config, allow_replace=False)


@pytest.mark.parametrize(
    "extra",
    [
        {"exactly.once.support": "required"},
        {"transaction.boundary": "interval", "transaction.boundary.interval.ms": "0"},
        {"transaction.boundary": "interval"},  # the worker's offset.flush.interval.ms
        {"offsets.storage.topic": "eos-offsets"},
    ],
)
def test_what_the_connector_and_worker_can_do_is_accepted(
    tmp_path: Any, start_herder: Any, extra: dict
) -> None:
    herder = start_herder(ENABLED)
    assert _errors(herder.validate_connector_config(_source(tmp_path, **extra))) == {}


def test_a_disabled_worker_ignores_a_connector_boundary_as_kafka_does(
    tmp_path: Any, start_herder: Any
) -> None:
    # Checked only where the worker would use it (exactly-once on).
    herder = start_herder()
    config = _source(tmp_path, **{"transaction.boundary": "connector"})
    assert _errors(herder.validate_connector_config(config)) == {}
