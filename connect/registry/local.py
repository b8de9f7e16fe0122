"""Which log this process's embedded registry lives on: the worker says so at start
(a cheap import), and the first converter configured with
`schema.registry.url=embedded` starts the registry there (connect.registry.embedded)."""

from __future__ import annotations

from typing import Any

__all__ = ["local_log", "set_local_log"]

_local: dict[str, Any] = {"log": None, "topic": "_schemas"}


def set_local_log(log: Any, *, topic: str = "_schemas") -> None:
    _local["log"], _local["topic"] = log, topic


def local_log() -> tuple[Any, str]:
    """(the log or None, the registry's topic)."""
    return _local["log"], _local["topic"]
