"""The ASGI application: Confluent Schema Registry's REST API over a `SchemaRegistry`.

Routes are plain Starlette routes on a FastAPI app (no per-request model validation:
lookups are the hot path, and every parameter is read the way Confluent reads it, in
`params`). Errors of any kind become Confluent's error body through one handler
(`errors`); an unknown path is 404 and a known path with another method 405."""

from __future__ import annotations

from fastapi import FastAPI
from starlette.exceptions import HTTPException

from connect.registry.core import RegistryError, SchemaRegistry
from connect.registry.rest import compatibility, config, misc, schemas, subjects
from connect.registry.rest.errors import BadRequestError, handle_error
from connect.registry.rest.params import KeepEncodedSlash
from connect.rest.auth import BasicAuth, BasicAuthMiddleware

__all__ = ["create_app"]


def create_app(registry: SchemaRegistry, *, auth: BasicAuth | None = None) -> FastAPI:
    """The REST API over `registry`; with `auth`, every request needs basic auth."""
    app = FastAPI(
        title="Tributary Schema Registry",
        version=misc.VERSION,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        redirect_slashes=False,
    )
    app.state.registry = registry
    for module in (subjects, schemas, compatibility, config, misc):
        for path, endpoint, methods in module.ROUTES:
            app.add_route(path, endpoint, methods=methods, include_in_schema=False)
    for kind in (RegistryError, BadRequestError, HTTPException, Exception):
        app.add_exception_handler(kind, handle_error)
    app.add_middleware(KeepEncodedSlash)
    if auth is not None:
        app.add_middleware(BasicAuthMiddleware, auth=auth)
    return app
