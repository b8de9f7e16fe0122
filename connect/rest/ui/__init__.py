"""The web console: a static page at `/ui`, served by the worker's REST server, that
shows what the worker is doing and acts on it through the REST API.

What it shows and where it reads it (everything is the worker's own REST API):

| console | endpoint |
| --- | --- |
| connectors: state, type, tasks, worker, records/s, errors | `GET /ops/connectors` |
| a connector's config (secrets masked by the herder) | `GET /connectors/{name}` |
| throughput history (the charts) | `history` of `GET /ops/connectors` |
| sink lag per partition | `GET /ops/lag?connector=` |
| offsets | `GET /connectors/{name}/offsets` |
| workers | `GET /ops/workers` |
| topics | `GET /ops/topics` |
| schema registry subjects, versions, schemas | `GET /ops/schemas…` |
| create, edit, pause, resume, stop, restart, delete | Kafka's `/connectors…` |
| reset or alter offsets, rewind a sink to a time | `/connectors/{name}/offsets`, `/ops/…` |

The connector list renders from that one `GET /ops/connectors` (200 connectors in
well under a second, see bench/ops_bench.py).

The page and its assets (plain ES modules, CSS and an SVG icon under `assets/`,
shipped as package data; no build step, nothing fetched from the internet) hold no
data, so they are served without authentication (`PUBLIC_PATHS`): with basic auth
on, the page shows a login form and sends the user's credentials in the
`Authorization` header of every API call, which stays protected. Why not the
browser's own basic-auth prompt: it offers no way to log out, and a page behind it
cannot tell a wrong password from a dropped connection.
"""

from __future__ import annotations

from fastapi import FastAPI

from connect.rest.ui import schemas, summary, topics
from connect.rest.ui.page import asset, page

__all__ = ["PUBLIC_PATHS", "mount"]

#: Paths served without credentials: the static console (see the module docstring).
PUBLIC_PATHS = ("/ui",)


def mount(app: FastAPI) -> None:
    """Add the console's page, assets and `/ops` endpoints to the REST app."""
    app.include_router(summary.router)
    app.include_router(topics.router)
    app.include_router(schemas.router)
    app.add_api_route("/ui", page, methods=["GET"], include_in_schema=False)
    app.add_api_route("/ui/assets/{path:path}", asset, methods=["GET"], include_in_schema=False)
