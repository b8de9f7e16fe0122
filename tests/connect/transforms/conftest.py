"""Factories for transform tests: configured transforms and records with defaults."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from connect.api import Headers, SinkRecord, SourceRecord, Transformation


def configured(cls: type[Transformation], **config: Any) -> Transformation:
    """An instance of `cls` configured with `config` (underscores in names → dots)."""
    transform = cls()
    transform.configure({k.replace("__", "."): v for k, v in config.items()})
    return transform


@pytest.fixture
def sink() -> Callable[..., SinkRecord]:
    def make(**fields: Any) -> SinkRecord:
        defaults: dict[str, Any] = {
            "topic": "test",
            "kafka_partition": 0,
            "kafka_offset": 42,
            "timestamp": 1_700_000_000_000,
            "headers": Headers(),
        }
        defaults.update(fields)
        return SinkRecord(**defaults)

    return make


@pytest.fixture
def source() -> Callable[..., SourceRecord]:
    def make(**fields: Any) -> SourceRecord:
        defaults: dict[str, Any] = {
            "topic": "test",
            "kafka_partition": 0,
            "timestamp": 1_700_000_000_000,
            "source_partition": {"file": "a"},
            "source_offset": {"position": 1},
        }
        defaults.update(fields)
        return SourceRecord(**defaults)

    return make
