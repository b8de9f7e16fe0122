"""Serving the console: the page at `/ui` and its static assets at `/ui/assets/…`.

The page is one HTML file whose `<base href>` is filled in per request, because the
REST app treats `/ui/` and `/ui` as one path (connect.rest.app strips trailing
slashes) while a browser resolves relative URLs differently from each: with the base
set, `assets/…` and the API root (`../`) resolve the same from both, and behind a
proxy that mounts the worker under a prefix (ASGI `root_path`).

The assets (~100 KB) are read once, when the app is built, and served from memory by an
`async` endpoint with an ETag. Why not Starlette's StaticFiles: it stats and reads each
file in the threadpool, and on a worker whose 600 task threads contend for the
interpreter lock every such hop is slow, a large part of the console's first render
(bench/ops_bench.py measures it; figures: docs/performance.md). Serving only the names
read at start-up also means no request path ever reaches the file system.

Every response carries a Content-Security-Policy that allows scripts, styles, images
and requests from this origin only: the console fetches nothing from the internet,
and a connector name or a trace that happens to hold markup can never run as script
(the page also only ever inserts text, never HTML).
"""

from __future__ import annotations

import hashlib
import html
import mimetypes
from functools import lru_cache
from pathlib import Path

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from connect.api import NotFoundError

__all__ = ["ASSETS_DIR", "SECURITY_HEADERS", "asset", "page"]

ASSETS_DIR = Path(__file__).with_name("assets")
_PAGE = Path(__file__).with_name("page.html")
_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}

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


@lru_cache(maxsize=1)
def _assets() -> dict[str, tuple[bytes, str, str]]:
    """Every file under assets/: relative path → (content, media type, ETag)."""
    out = {}
    for path in sorted(ASSETS_DIR.rglob("*")):
        if not path.is_file():
            continue
        data = path.read_bytes()
        kind = _TYPES.get(path.suffix) or mimetypes.guess_type(path.name)[0]
        etag = '"' + hashlib.sha256(data).hexdigest()[:20] + '"'
        out[path.relative_to(ASSETS_DIR).as_posix()] = (
            data,
            kind or "application/octet-stream",
            etag,
        )
    return out


async def page(request: Request) -> Response:
    """The console's HTML, with its base URL (see the module docstring)."""
    base = request.scope.get("root_path", "").rstrip("/") + "/ui/"
    body = _template().replace("{{base}}", html.escape(base, quote=True))
    return HTMLResponse(body, headers=SECURITY_HEADERS)


async def asset(request: Request, path: str) -> Response:
    """One of the console's scripts, styles or icons (404 for any other name)."""
    found = _assets().get(path)
    if found is None:
        raise NotFoundError(f"No console asset {path}")
    data, kind, etag = found
    headers = {**SECURITY_HEADERS, "ETag": etag}
    if etag in request.headers.get("if-none-match", ""):
        return Response(status_code=304, headers=headers)
    return Response(data, media_type=kind, headers=headers)
