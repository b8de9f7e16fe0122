"""The registry's hottest request, answered without the web framework.

Every Confluent deserializer that meets an unknown schema id asks
`GET /schemas/ids/{id}`; a registry answers thousands a second. Routing, middleware
and response objects cost more than the lookup, so this ASGI layer answers the plain
form of that request itself from a per-id cache of encoded bodies, and passes every
other request (other paths, query strings, unknown ids, errors) to the application.
It sits inside the authentication layer, so it never answers an unauthenticated
request. A body is reused only while the id still maps to the very record it was
encoded from (ids are immutable; a hard delete or re-import replaces the record)."""

from __future__ import annotations

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

from connect.registry.core import RegistryError, SchemaRecord, SchemaRegistry
from connect.registry.rest.errors import CONTENT_TYPE
from connect.registry.rest.schemas import schema_by_id

__all__ = ["IdLookups"]

_PREFIX = "/schemas/ids/"


class IdLookups:
    def __init__(self, app: ASGIApp, registry: SchemaRegistry) -> None:
        self.app = app
        self.registry = registry
        self._bodies: dict[int, tuple[SchemaRecord, bytes]] = {}
        self._content_type = CONTENT_TYPE.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET" and not scope["query_string"]:
            path: str = scope["path"]
            if path.startswith(_PREFIX):
                tail = path[len(_PREFIX) :]
                if tail.isdigit() and tail.isascii():
                    body = self._body(int(tail))
                    if body is not None:
                        await send(
                            {
                                "type": "http.response.start",
                                "status": 200,
                                "headers": [
                                    (b"content-type", self._content_type),
                                    (b"content-length", str(len(body)).encode()),
                                ],
                            }
                        )
                        await send({"type": "http.response.body", "body": body})
                        return
        await self.app(scope, receive, send)

    def _body(self, schema_id: int) -> bytes | None:
        try:
            record = self.registry.schema(schema_id)
        except RegistryError:
            return None  # the application answers with Confluent's error body
        cached = self._bodies.get(schema_id)
        if cached is not None and cached[0] is record:
            return cached[1]
        body = orjson.dumps(schema_by_id(record))
        self._bodies[schema_id] = (record, body)
        return body
