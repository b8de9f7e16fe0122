"""Kafka Connect's REST API over a Herder: the ASGI app (FastAPI), the server that runs
it in a background thread (uvicorn), optional HTTP basic auth, and the listener from
the worker config."""

from __future__ import annotations

import importlib
from typing import Any

# Loaded on first use (PEP 562): the web framework is slow to import
# (docs/performance.md), and a worker needs only `listener_from_config` before it
# starts its tasks.
_EXPORTS = {
    "DEFAULT_LISTENER": "connect.rest.listeners",
    "ERROR_STATUS": "connect.rest.errors",
    "BasicAuth": "connect.rest.auth",
    "ListenError": "connect.rest.listeners",
    "MalformedBodyError": "connect.rest.errors",
    "RestError": "connect.rest.errors",
    "RestServer": "connect.rest.server",
    "TopicTracking": "connect.rest.params",
    "create_app": "connect.rest.app",
    "listener_from_config": "connect.rest.listeners",
}

__all__ = [
    "DEFAULT_LISTENER",
    "ERROR_STATUS",
    "BasicAuth",
    "ListenError",
    "MalformedBodyError",
    "RestError",
    "RestServer",
    "TopicTracking",
    "create_app",
    "listener_from_config",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'connect.rest' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
