"""The ASGI application: Kafka Connect's REST API over a Herder.

Paths, methods, bodies, statuses and error bodies follow Kafka Connect (see
`connect/rest/errors.py` for the error table). Beyond Kafka's surface there are
`/openapi.json`, the OpenAPI description, the operator's endpoints of
`connect/rest/ops.py` (`/metrics` for Prometheus, `/ops/...` for the CLI), and the web
console at `/ui` with the `/ops/...` endpoints it reads (`connect/rest/ui`). A trailing
slash is ignored, as Jersey ignores it (`GET /connector-plugins/` works); unknown paths
answer 404 and known paths with another method 405, both with the JSON error body.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

from connect.herder.api import Herder
from connect.rest import admin, connectors, ops, plugins, ui
from connect.rest.auth import BasicAuth, BasicAuthMiddleware
from connect.rest.errors import HANDLED, AnswerErrors, handle_error
from connect.rest.params import TopicTracking

__all__ = ["create_app"]

_VERSION = "0.1.0"


class _IgnoreTrailingSlash:
    """`/connectors/` is `/connectors`, without a redirect (clients rarely follow a
    307 on POST)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and len(path) > 1 and path.endswith("/"):
            scope = dict(scope)
            scope["path"] = path.rstrip("/") or "/"
            raw = scope.get("raw_path")
            if raw:
                scope["raw_path"] = raw.rstrip(b"/") or b"/"
        await self.app(scope, receive, send)


def create_app(
    herder: Herder,
    *,
    auth: BasicAuth | None = None,
    topic_tracking: TopicTracking | None = None,
    registry: Any = None,
) -> FastAPI:
    """The REST API over `herder`; with `auth`, every request but the console's static
    files needs basic auth. `registry` (a connect.registry.core.SchemaRegistry), when
    the worker runs the embedded one, is what the console's Schemas page reads."""
    app = FastAPI(
        title="Tributary Connect REST API",
        description="Kafka Connect's REST API: connectors, tasks, offsets, plugins, loggers.",
        version=_VERSION,
        docs_url=None,
        redoc_url=None,
        redirect_slashes=False,
    )
    app.state.herder = herder
    app.state.topic_tracking = topic_tracking or TopicTracking()
    app.state.registry = registry
    app.include_router(admin.router)
    app.include_router(connectors.router)
    app.include_router(plugins.router)
    app.include_router(ops.router)
    ui.mount(app)
    for kind in HANDLED:
        app.add_exception_handler(kind, handle_error)
    app.add_middleware(AnswerErrors)  # added first: the innermost, see its docstring
    app.add_middleware(_IgnoreTrailingSlash)
    if auth is not None:
        app.add_middleware(BasicAuthMiddleware, auth=auth, public=ui.PUBLIC_PATHS)
    return app
