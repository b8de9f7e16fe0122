"""The registry as a service of a process: from the worker config to a started
registry and its HTTP server over an open log, and back. Both `connect standalone`
(with `schema.registry.enable=true`) and `connect registry` run it this way."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from connect.api import ConfigError
from connect.registry.core import SchemaRegistry
from connect.registry.rest.server import DEFAULT_LISTENER, RegistryServer
from connect.rest.auth import BasicAuth
from connect.rest.listeners import listener_from_config
from log import Log

__all__ = ["RegistryService", "registry_listener"]

_log = logging.getLogger("connect.registry")
_LISTENERS = "schema.registry.listeners"
_USERS_FILE = "schema.registry.basic.auth.users.file"


def registry_listener(config: Mapping[str, Any]) -> tuple[str, int]:
    """(host, port) from `schema.registry.listeners` (default 127.0.0.1:8081)."""
    listeners = config.get(_LISTENERS) or [DEFAULT_LISTENER]
    try:
        return listener_from_config({"listeners": listeners})
    except ConfigError as exc:
        raise ConfigError(_LISTENERS, exc.value, exc.reason) from None


class RegistryService:
    """A registry over `log` and its server, configured by the worker config."""

    def __init__(self, config: Mapping[str, Any], log: Log) -> None:
        self.host, self.port = registry_listener(config)
        users = config.get(_USERS_FILE)
        self.auth: BasicAuth | None = None
        if users:
            try:
                self.auth = BasicAuth.from_file(users)
            except ConfigError as exc:
                raise ConfigError(_USERS_FILE, users, exc.reason) from None
            self.auth.realm = "SchemaRegistry"
        self.registry = SchemaRegistry(
            log,
            topic=config.get("schema.registry.topic") or "_schemas",
            default_level=config.get("schema.registry.compatibility.level") or "BACKWARD",
        )
        self.server: RegistryServer | None = None

    @property
    def url(self) -> str:
        return self.server.url if self.server is not None else f"http://{self.host}:{self.port}"

    def start(self) -> None:
        """Replay `_schemas`, then listen (a taken port fails here)."""
        self.registry.start()
        self.server = RegistryServer(self.registry, host=self.host, port=self.port, auth=self.auth)
        self.server.start()
        _log.info("schema registry listening on %s", self.server.url)

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None
        self.registry.close()
