"""Fixtures: registries over real FileLogs in tmp_path, and live REST servers on
port 0 with HTTP clients. Nothing is mocked."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from connect.registry.core import SchemaRegistry
from connect.registry.rest import RegistryServer
from log import FileLog

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


def record_schema(name: str = "User", *fields: str | tuple[str, str, Any]) -> str:
    """A record schema's text: fields are names (type int) or (name, type, default)."""
    out = []
    for f in fields or ("id",):
        if isinstance(f, str):
            out.append({"name": f, "type": "int"})
        else:
            out.append({"name": f[0], "type": f[1], "default": f[2]})
    return json.dumps({"type": "record", "name": name, "fields": out})


class Live:
    """A registry served over HTTP on port 0, with a keep-alive client."""

    def __init__(self, registry: SchemaRegistry, server: RegistryServer) -> None:
        self.registry = registry
        self.server = server
        self.url = server.url
        self.client = httpx.Client(base_url=server.url, headers={"Content-Type": CONTENT_TYPE})

    def close(self) -> None:
        self.client.close()
        self.server.stop()


@pytest.fixture
def make_registry(tmp_path: Path) -> Iterator[Callable[..., SchemaRegistry]]:
    """Start registries over `tmp_path/log` (or a given FileLog); all closed at teardown."""
    logs: list[FileLog] = []
    registries: list[SchemaRegistry] = []

    def factory(log: FileLog | None = None, **kwargs: Any) -> SchemaRegistry:
        if log is None:
            log = FileLog(tmp_path / "log", background=False)
            logs.append(log)
        registry = SchemaRegistry(log, **kwargs)
        registry.start()
        registries.append(registry)
        return registry

    yield factory
    for registry in registries:
        registry.close()
    for log in logs:
        log.close()


@pytest.fixture
def make_live(make_registry: Callable[..., SchemaRegistry]) -> Iterator[Callable[..., Live]]:
    servers: list[Live] = []

    def factory(registry: SchemaRegistry | None = None, **kwargs: Any) -> Live:
        registry = registry or make_registry()
        server = RegistryServer(registry, port=0, **kwargs)
        server.start()
        live = Live(registry, server)
        servers.append(live)
        return live

    yield factory
    for live in servers:
        live.close()


@pytest.fixture
def live(make_live: Callable[..., Live]) -> Live:
    return make_live()


@pytest.fixture
def client(live: Live) -> httpx.Client:
    return live.client
