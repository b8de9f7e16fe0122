"""The registry's HTTP server: the Connect REST server's machinery (bind in the
caller's thread so port 0 gets its real port at once, uvicorn in a daemon thread,
graceful stop) serving the registry app instead of Connect's."""

from __future__ import annotations

from connect.registry.core import SchemaRegistry
from connect.registry.rest.app import create_app
from connect.rest.auth import BasicAuth
from connect.rest.server import RestServer

__all__ = ["DEFAULT_LISTENER", "RegistryServer"]

DEFAULT_LISTENER = "http://127.0.0.1:8081"


class RegistryServer(RestServer):
    """Serves `registry` on host:port (8081 by default, as Confluent's registry)."""

    def __init__(
        self,
        registry: SchemaRegistry,
        *,
        host: str = "127.0.0.1",
        port: int = 8081,
        auth: BasicAuth | None = None,
    ) -> None:
        # RestServer's start/stop need only app, host and port: build those, not its
        # Connect app (no herder here).
        self.registry = registry
        self.host = host
        self.port = port
        self.app = create_app(registry, auth=auth)
        # A line per request is a fifth of a lookup's cost; clients look ids up by the
        # thousand (every deserializer's cache miss), so the registry logs no requests.
        self.access_log = False
        self._server = None
        self._thread = None
