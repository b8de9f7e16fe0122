"""Where the REST API listens, from the worker config. Kept apart from the server so
a worker can work out its id (host:port) without importing the web framework, and
start its tasks while that import runs."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from connect.api import ConfigError

__all__ = ["DEFAULT_LISTENER", "listener_from_config"]

_log = logging.getLogger("connect.rest")
DEFAULT_LISTENER = "http://127.0.0.1:8083"


def listener_from_config(config: Mapping[str, Any]) -> tuple[str, int]:
    """(host, port) to listen on, from the worker config.

    `listeners` (Kafka's, e.g. "http://127.0.0.1:8083"; only http, the first is
    served), else the deprecated `rest.host.name` / `rest.port`, else 127.0.0.1:8083.
    An empty host ("http://:8083") listens on every interface, as in Kafka; nothing
    listens beyond loopback unless configured."""
    listeners = config.get("listeners")
    if isinstance(listeners, str):
        listeners = [item.strip() for item in listeners.split(",") if item.strip()]
    listeners = list(listeners or [])
    host, port = config.get("rest.host.name"), config.get("rest.port")
    if (host or port not in (None, "")) and listeners in ([], [DEFAULT_LISTENER]):
        return host or "127.0.0.1", _port("rest.port", port if port not in (None, "") else 8083)
    if not listeners:
        listeners = [DEFAULT_LISTENER]
    if len(listeners) > 1:
        _log.warning("only the first of listeners %s is served", listeners)
    return _parse_listener(listeners[0])


def _parse_listener(listener: str) -> tuple[str, int]:
    parts = urlsplit(listener)
    if parts.scheme.lower() != "http":
        raise ConfigError(
            "listeners",
            listener,
            "only http:// listeners are supported (put a TLS-terminating proxy in front)",
        )
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is None:
        raise ConfigError("listeners", listener, "a listener needs a port, e.g. :8083")
    return parts.hostname or "0.0.0.0", port


def _port(key: str, value: Any) -> int:
    try:
        port = int(value)
    except (TypeError, ValueError):
        raise ConfigError(key, value, "must be a port number") from None
    if not 0 <= port <= 65535:
        raise ConfigError(key, value, "must be a port number (0-65535)")
    return port
