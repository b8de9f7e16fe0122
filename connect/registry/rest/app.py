"""The ASGI application: Confluent Schema Registry's REST API over a `SchemaRegistry`.

A plain Starlette app, not FastAPI: lookups are the hot path, every parameter is read
the way Confluent reads it (in `params`), and FastAPI's extra middleware layers and
model validation cost a measurable share of a lookup (docs/performance.md) without
doing anything here. Errors of any kind become Confluent's error body through one
handler (`errors`); an unknown path is 404 and a known path with another method 405.

An error no handler takes (a bug, a failing `_schemas` log) is answered inside the
app by the Connect REST API's `AnswerErrors` middleware with the registry's handler:
Starlette's own `Exception` handler answers from its outermost layer and re-raises,
so uvicorn would log "Exception in ASGI application" and drop the keep-alive
connection of a client that did nothing wrong."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.routing import Route
from starlette.types import ASGIApp

from connect.registry.core import RegistryError, SchemaRegistry
from connect.registry.rest import compatibility, config, misc, schemas, subjects
from connect.registry.rest.errors import BadRequestError, handle_error
from connect.registry.rest.fast import IdLookups
from connect.registry.rest.params import KeepEncodedSlash
from connect.rest.auth import BasicAuth, BasicAuthMiddleware
from connect.rest.errors import AnswerErrors

__all__ = ["create_app"]


def create_app(registry: SchemaRegistry, *, auth: BasicAuth | None = None) -> ASGIApp:
    """The REST API over `registry`; with `auth`, every request needs basic auth."""
    routes = [
        Route(path, endpoint, methods=methods)
        for module in (subjects, schemas, compatibility, config, misc)
        for path, endpoint, methods in module.ROUTES
    ]
    app = Starlette(
        routes=routes,
        exception_handlers=dict.fromkeys(
            (RegistryError, BadRequestError, HTTPException, Exception), handle_error
        ),
    )
    app.router.redirect_slashes = False
    app.state.registry = registry
    app.add_middleware(AnswerErrors, handler=handle_error)  # added first: the innermost
    app.add_middleware(KeepEncodedSlash)
    # Outermost first: authentication, then the id-lookup fast path (see `fast`).
    served: ASGIApp = IdLookups(app, registry)
    if auth is not None:
        served = BasicAuthMiddleware(served, auth=auth)
    return served
