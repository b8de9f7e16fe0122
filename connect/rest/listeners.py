"""Where the REST API listens, from the worker config, and the listening socket itself.
Kept apart from the server so a worker can work out its id (host:port) and take its
port without importing the web framework, and start its tasks while that import
runs."""

from __future__ import annotations

import errno
import logging
import socket
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from connect.api import ConfigError, ConnectError

__all__ = ["DEFAULT_LISTENER", "ListenError", "bind_listener", "listener_from_config"]

_log = logging.getLogger("connect.rest")
DEFAULT_LISTENER = "http://127.0.0.1:8083"


class ListenError(ConnectError):
    """The address a server should listen on cannot be taken: in use, not an address
    of this machine, or not allowed. The message names the address first, the way an
    operator looks for it (`127.0.0.1:8083 is in use`)."""

    def __init__(self, host: str, port: int, reason: str) -> None:
        self.host = host
        self.port = port
        self.reason = reason
        shown = f"[{host}]" if ":" in host else host
        super().__init__(f"{shown or '0.0.0.0'}:{port} {reason}")


def bind_listener(host: str, port: int) -> socket.socket:
    """A socket bound to host:port and listening (port 0: a free port, read it back
    with getsockname). Raises ListenError naming the address; the caller owns the
    socket (a server serves on it, or it is closed)."""
    try:
        infos = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except OSError as exc:  # socket.gaierror: a host name that does not resolve
        raise ListenError(host, port, f"cannot be listened on: {exc.strerror or exc}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        reason = {
            errno.EADDRINUSE: "is in use: another process listens there",
            errno.EADDRNOTAVAIL: "is not an address of this machine",
            errno.EACCES: "needs privileges to listen on (a port below 1024?)",
        }.get(exc.errno or 0, f"cannot be listened on: {exc.strerror or exc}")
        raise ListenError(host, port, reason) from None
    sock.set_inheritable(False)
    return sock


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
