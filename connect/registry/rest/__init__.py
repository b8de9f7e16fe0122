"""Confluent Schema Registry's REST API over the registry core: the ASGI app, the one
table of error codes, and the server (uvicorn in a thread, as the Connect REST API)."""

from connect.registry.rest.app import create_app
from connect.registry.rest.errors import ERROR_CODES
from connect.registry.rest.server import DEFAULT_LISTENER, RegistryServer

__all__ = ["DEFAULT_LISTENER", "ERROR_CODES", "RegistryServer", "create_app"]
