"""Confluent Schema Registry's REST API over the registry core: the ASGI app, the one
table of error codes, and the server (uvicorn in a thread, as the Connect REST API).

The names load on first use: a task process whose converter reaches the embedded
registry needs `errors` only, not the ASGI framework and server behind the app (whose
import is a noticeable part of a task's start-up: docs/performance.md)."""

from __future__ import annotations

from importlib import import_module
from typing import Any

__all__ = ["DEFAULT_LISTENER", "ERROR_CODES", "RegistryServer", "create_app"]

_HOMES = {
    "create_app": "connect.registry.rest.app",
    "ERROR_CODES": "connect.registry.rest.errors",
    "DEFAULT_LISTENER": "connect.registry.rest.server",
    "RegistryServer": "connect.registry.rest.server",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(home), name)
