"""`schema.registry.url=embedded`: the AvroConverter talks to the registry core over
this worker's own log, with no HTTP in between.

Every registry instance over one log agrees on every id and version (the `_schemas`
topic's order decides), so a worker and each of its task processes can run their own
instance: the first converter that asks starts one (replaying `_schemas`) and every
converter of the process shares it. Registry errors keep Confluent's HTTP status and
error code, exactly as a remote registry would answer them."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from connect.converters.avro.client import (
    RegisteredSchema,
    RegistryClientError,
    SchemaNotFoundError,
    set_embedded_factory,
)
from connect.registry.core import RegistryError, SchemaRegistry
from connect.registry.core.registry import SchemaRequest
from connect.registry.rest.errors import code_for
from log import Log

__all__ = ["EmbeddedRegistryClient", "install_embedded_registry"]


@contextmanager
def _confluent_errors() -> Iterator[None]:
    try:
        yield
    except RegistryError as exc:
        status, code = code_for(exc)
        cls = SchemaNotFoundError if status == 404 else RegistryClientError
        raise cls(status, code, str(exc)) from exc


class EmbeddedRegistryClient:
    """The converter's registry client (connect.converters.avro.client's protocol)
    over a SchemaRegistry in this process."""

    def __init__(self, registry: SchemaRegistry) -> None:
        self.registry = registry

    def register(self, subject: str, schema: str) -> int:
        with _confluent_errors():
            return self.registry.register(subject, SchemaRequest(schema)).id

    def lookup(self, subject: str, schema: str) -> int:
        with _confluent_errors():
            return self.registry.lookup(subject, SchemaRequest(schema)).id

    def get_schema(self, schema_id: int) -> str:
        with _confluent_errors():
            return self.registry.schema(schema_id).schema

    def latest(self, subject: str) -> RegisteredSchema:
        with _confluent_errors():
            record = self.registry.version(subject, "latest")
        return RegisteredSchema(record.id, record.version, record.schema)

    def close(self) -> None:
        """The registry is shared by the process; it stays up."""


def install_embedded_registry(log: Log, *, topic: str = "_schemas") -> Callable[[], None]:
    """Let `schema.registry.url=embedded` reach a registry over `log` in this process
    (started on first use). Returns the function that stops it and uninstalls it."""
    lock = threading.Lock()
    started: list[SchemaRegistry] = []

    def factory(_configs: Mapping[str, Any]) -> EmbeddedRegistryClient:
        with lock:
            if not started:
                registry = SchemaRegistry(log, topic=topic)
                registry.start()
                started.append(registry)
            return EmbeddedRegistryClient(started[0])

    def uninstall() -> None:
        set_embedded_factory(None)
        with lock:
            for registry in started:
                registry.close()
            started.clear()

    set_embedded_factory(factory)
    return uninstall
