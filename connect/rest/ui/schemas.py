"""`/ops/schemas…`: the embedded schema registry's subjects, versions and schemas, read
through the worker's REST API (the console's Schemas page).

Why through the worker and not the registry's own listener: the registry serves on
another port (`schema.registry.listeners`, default 8081) with its own users file, so a
page from this worker could reach it only cross-origin, with CORS the registry does
not offer and a second login. The worker holds the registry object when it runs the
embedded one (`schema.registry.enable=true`), so these read-only endpoints ask it
directly, behind the worker's own authentication. Writes stay on the registry's API.

- `GET /ops/schemas`: `{"enabled": false}` without an embedded registry; else every
  subject (soft-deleted ones flagged) with its versions, the latest version's id and
  type, and its compatibility level.
- `GET /ops/schemas/{subject}/versions/{version}`: Confluent's Schema object of that
  version (`latest` works, as in the registry's API).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import JSONResponse

from connect.api import NotFoundError
from connect.herder.api import BadRequestError

__all__ = ["router"]

router = APIRouter(tags=["console"])


def _registry(request: Request) -> Any:
    return getattr(request.app.state, "registry", None)


@router.get("/ops/schemas", summary="The embedded schema registry's subjects and versions")
def subjects(request: Request) -> JSONResponse:
    registry = _registry(request)
    if registry is None:
        return JSONResponse({"enabled": False, "subjects": []})
    from connect.registry.core import NotFoundError as RegistryNotFound

    out = []
    for subject in registry.subjects(deleted=True):
        try:
            versions = registry.versions(subject, deleted=True)
        except RegistryNotFound:
            continue  # hard-deleted while listing
        try:
            live = registry.versions(subject)
        except RegistryNotFound:
            live = []  # soft-deleted: every version is
        latest = registry.version(subject, live[-1]) if live else None
        out.append(
            {
                "subject": subject,
                "versions": versions,
                "deleted": not live,
                "latest": None
                if latest is None
                else {"version": latest.version, "id": latest.id, "type": latest.schema_type},
                "compatibility": registry.settings.level(subject),
            }
        )
    return JSONResponse({"enabled": True, "subjects": out})


@router.get(
    "/ops/schemas/{subject}/versions/{version}",
    summary="One version of a subject in the embedded registry (Confluent's Schema object)",
)
def schema_version(request: Request, subject: str, version: str) -> JSONResponse:
    registry = _registry(request)
    if registry is None:
        raise NotFoundError("This worker runs no embedded schema registry")
    from connect.registry.core import NotFoundError as RegistryNotFound
    from connect.registry.core import RegistryError, parse_version
    from connect.registry.rest.responses import schema_object

    try:
        record = registry.version(subject, parse_version(version), deleted=True)
    except RegistryNotFound as exc:
        raise NotFoundError(str(exc)) from None
    except RegistryError as exc:  # a malformed version number
        raise BadRequestError(str(exc)) from None
    return JSONResponse(schema_object(record))
