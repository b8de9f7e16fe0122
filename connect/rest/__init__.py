"""Kafka Connect's REST API over a Herder: the ASGI app (FastAPI), the server that runs
it in a background thread (uvicorn), optional HTTP basic auth, and the listener from
the worker config."""

from connect.rest.app import create_app
from connect.rest.auth import BasicAuth
from connect.rest.errors import ERROR_STATUS, MalformedBodyError, RestError
from connect.rest.params import TopicTracking
from connect.rest.server import DEFAULT_LISTENER, RestServer, listener_from_config

__all__ = [
    "DEFAULT_LISTENER",
    "ERROR_STATUS",
    "BasicAuth",
    "MalformedBodyError",
    "RestError",
    "RestServer",
    "TopicTracking",
    "create_app",
    "listener_from_config",
]
