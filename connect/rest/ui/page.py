"""Serving the console: the page at `/ui` and its static assets at `/ui/assets/…`.

The page is one HTML file whose `<base href>` is filled in per request, because the
REST app treats `/ui/` and `/ui` as one path (connect.rest.app strips trailing
slashes) while a browser resolves relative URLs differently from each: with the base
set, `assets/…` and the API root (`../`) resolve the same from both, and behind a
proxy that mounts the worker under a prefix (ASGI `root_path`).

Every response carries a Content-Security-Policy that allows scripts, styles, images
and requests from this origin only: the console fetches nothing from the internet,
and a connector name or a trace that happens to hold markup can never run as script
(the page also only ever inserts text, never HTML).
"""

from __future__ import annotations

import html
import os
from functools import lru_cache
from pathlib import Path

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

__all__ = ["ASSETS_DIR", "SECURITY_HEADERS", "ConsoleAssets", "page"]

ASSETS_DIR = Path(__file__).with_name("assets")
_PAGE = Path(__file__).with_name("page.html")

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; object-src 'none'; base-uri 'self'; frame-ancestors 'none'; "
        "form-action 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    # Revalidate every time (a 304 when unchanged): an upgraded worker never serves a
    # page with the previous version's scripts.
    "Cache-Control": "no-cache",
}


@lru_cache(maxsize=1)
def _template() -> str:
    return _PAGE.read_text(encoding="utf-8")


def page(request: Request) -> Response:
    """The console's HTML, with its base URL (see the module docstring)."""
    base = request.scope.get("root_path", "").rstrip("/") + "/ui/"
    body = _template().replace("{{base}}", html.escape(base, quote=True))
    return HTMLResponse(body, headers=SECURITY_HEADERS)


class ConsoleAssets(StaticFiles):
    """The console's scripts, styles and icons, with the page's security headers."""

    def __init__(self) -> None:
        super().__init__(directory=ASSETS_DIR)

    def file_response(
        self,
        full_path: str | os.PathLike[str],
        stat_result: os.stat_result,
        scope: Scope,
        status_code: int = 200,
    ) -> Response:
        response = super().file_response(full_path, stat_result, scope, status_code)
        response.headers.update(SECURITY_HEADERS)
        if str(full_path).endswith(".js"):  # module scripts need a JavaScript type
            response.headers["Content-Type"] = "text/javascript; charset=utf-8"
        return response
