"""Which log this process's embedded registry lives on: the worker says so at start
(a cheap import), and the first converter configured with
`schema.registry.url=embedded` starts the registry there (connect.registry.embedded).
When the worker stops (or names another log), that registry is stopped and forgotten,
so nothing outlives the log it reads."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["local_log", "remember_uninstall", "set_local_log"]

_local: dict[str, Any] = {"log": None, "topic": "_schemas", "uninstall": None}


def set_local_log(log: Any, *, topic: str = "_schemas") -> None:
    """Name the log (None: none) the embedded registry of this process uses."""
    uninstall = _local["uninstall"]
    if uninstall is not None and (log is not _local["log"] or topic != _local["topic"]):
        _local["uninstall"] = None
        uninstall()
    _local["log"], _local["topic"] = log, topic


def local_log() -> tuple[Any, str]:
    """(the log or None, the registry's topic)."""
    return _local["log"], _local["topic"]


def remember_uninstall(uninstall: Callable[[], None]) -> None:
    """How to stop the registry started over the current log."""
    _local["uninstall"] = uninstall
