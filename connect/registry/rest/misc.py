"""The small endpoints clients probe: `/` (liveness), `/contexts` (only the default
context, "."), `/v1/metadata/*`, and the `/associations` lookups that confluent-kafka
2.14+ makes before every serializer's first message: this registry keeps no
associations, so every lookup answers `[]`, which the client reads as "none"."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from connect.registry.rest.params import page
from connect.registry.rest.responses import json_response

__all__ = ["ROUTES", "VERSION"]

VERSION = "0.1.0"


async def root(request: Request) -> Response:
    return json_response({})


async def contexts(request: Request) -> Response:
    return json_response(page(request, ["."]))


async def no_associations(request: Request) -> Response:
    return json_response([])


async def metadata_id(request: Request) -> Response:
    return json_response(
        {"scope": {"path": [], "clusters": {"schema-registry-cluster": "tributary"}}}
    )


async def metadata_version(request: Request) -> Response:
    return json_response({"version": VERSION, "commitId": "tributary"})


ROUTES = (
    ("/", root, ["GET", "POST"]),
    ("/contexts", contexts, ["GET"]),
    ("/associations", no_associations, ["GET"]),
    ("/associations/subjects/{subject}", no_associations, ["GET"]),
    ("/associations/resources/{namespace}/{name}", no_associations, ["GET"]),
    ("/v1/metadata/id", metadata_id, ["GET"]),
    ("/v1/metadata/version", metadata_version, ["GET"]),
)
