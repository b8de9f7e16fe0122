"""`/connectors`: Kafka Connect's ConnectorsResource, each endpoint one herder call.

Endpoints are plain `def`s: FastAPI runs them in its threadpool, so a herder call may
block (the standalone herder reconciles under a lock, in the caller's thread).
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Query, Request
from starlette.responses import JSONResponse, Response

from connect.api import NotFoundError
from connect.herder.api import BadRequestError
from connect.rest import models
from connect.rest.errors import MalformedBodyError, RestError
from connect.rest.models import responses
from connect.rest.params import (
    HerderDep,
    JsonBody,
    TrackingDep,
    config_map,
    flag,
    object_body,
)

__all__ = ["router"]

router = APIRouter(prefix="/connectors", tags=["connectors"])

Flag = Annotated[str | None, Query(description="true or false")]


def _location(request: Request, name: str) -> dict[str, str]:
    # JAX-RS resolves Kafka's relative "/connectors/{name}" against the base URI.
    return {"Location": f"{request.base_url}connectors/{quote(name, safe='')}"}


def _task_id(task: str) -> int:
    # Jersey answers a path parameter that does not convert to Integer with 404.
    try:
        return int(task)
    except ValueError:
        raise RestError(404, "HTTP 404 Not Found") from None


# ------------------------------------------------------------------ collection


@router.get(
    "",
    summary="List connector names, or with ?expand=status/info a map of their details",
    responses={200: {"model": list[str] | dict[str, models.ConnectorExpansion]}},
)
def list_connectors(
    herder: HerderDep,
    expand: Annotated[list[str] | None, Query(description="status and/or info")] = None,
) -> JSONResponse:
    if expand is None:
        return JSONResponse(herder.connectors())
    out: dict[str, dict[str, Any]] = {}
    for name in herder.connectors():
        try:
            details: dict[str, Any] = {}
            for expansion in expand:
                if expansion == "status":
                    details["status"] = herder.connector_status(name).to_json()
                elif expansion == "info":
                    details["info"] = herder.connector_info(name).to_json()
            out[name] = details
        except NotFoundError:
            continue  # deleted while listing (or no status yet): left out, as in Kafka
    return JSONResponse(out)


@router.post(
    "",
    status_code=201,
    summary="Create a connector",
    responses=responses(201, models.ConnectorInfo, 400, 409, 500),
    openapi_extra=models.body("create"),
)
def create_connector(herder: HerderDep, body: JsonBody, request: Request) -> JSONResponse:
    payload = object_body(body, "The create request")
    raw_name = payload.get("name")
    if isinstance(raw_name, (bool, dict, list)):
        raise MalformedBodyError("Connector name must be a string")
    name = "" if raw_name is None else str(raw_name).strip()
    if payload.get("config") is None:
        raise BadRequestError("The create request has no connector config")
    config = config_map(payload["config"])
    initial_state = payload.get("initial_state")
    if initial_state is not None and not isinstance(initial_state, str):
        raise MalformedBodyError("initial_state must be RUNNING, PAUSED or STOPPED")
    _, info = herder.put_connector_config(
        name,
        _without_nulls(config),
        allow_replace=False,
        initial_state=initial_state.upper() if initial_state else None,
    )
    return JSONResponse(info.to_json(), 201, headers=_location(request, name))


def _without_nulls(config: dict[str, str | None]) -> dict[str, str]:
    return {k: v for k, v in config.items() if v is not None}


# ------------------------------------------------------------------ one connector


@router.get(
    "/{name}",
    summary="A connector's config and tasks",
    responses=responses(200, models.ConnectorInfo, 404),
)
def get_connector(herder: HerderDep, name: str) -> JSONResponse:
    return JSONResponse(herder.connector_info(name).to_json())


@router.delete(
    "/{name}", status_code=204, summary="Delete a connector", responses=responses(204, None, 404)
)
def delete_connector(herder: HerderDep, name: str) -> Response:
    herder.delete_connector(name)
    return Response(status_code=204)


@router.get(
    "/{name}/config",
    summary="A connector's config, with config-provider placeholders unresolved",
    responses=responses(200, dict[str, str], 404),
)
def get_config(herder: HerderDep, name: str) -> JSONResponse:
    return JSONResponse(herder.connector_config(name))


@router.put(
    "/{name}/config",
    summary="Create (201) or replace (200) a connector's config",
    responses={
        **responses(200, models.ConnectorInfo, 400, 500),
        201: {"model": models.ConnectorInfo},
    },
    openapi_extra=models.body("config"),
)
def put_config(herder: HerderDep, name: str, body: JsonBody, request: Request) -> JSONResponse:
    config = _without_nulls(config_map(body))
    created, info = herder.put_connector_config(name, config, allow_replace=True)
    if created:
        return JSONResponse(info.to_json(), 201, headers=_location(request, name))
    return JSONResponse(info.to_json())


@router.patch(
    "/{name}/config",
    summary="Merge keys into a connector's config; a null value removes the key",
    responses=responses(200, models.ConnectorInfo, 400, 404, 500),
    openapi_extra=models.body("config"),
)
def patch_config(herder: HerderDep, name: str, body: JsonBody) -> JSONResponse:
    return JSONResponse(herder.patch_connector_config(name, config_map(body)).to_json())


@router.get(
    "/{name}/status",
    summary="The state of a connector and its tasks",
    responses=responses(200, models.ConnectorStateInfo, 404),
)
def get_status(herder: HerderDep, name: str) -> JSONResponse:
    return JSONResponse(herder.connector_status(name).to_json())


@router.post(
    "/{name}/restart",
    summary="Restart a connector (204), or with includeTasks/onlyFailed also its tasks (202)",
    responses={**responses(204, None, 400, 404), 202: {"model": models.ConnectorStateInfo}},
)
def restart_connector(
    herder: HerderDep,
    name: str,
    include_tasks: Annotated[Flag, Query(alias="includeTasks")] = None,
    only_failed: Annotated[Flag, Query(alias="onlyFailed")] = None,
) -> Response:
    planned = herder.restart_connector(
        name, include_tasks=flag(include_tasks, False), only_failed=flag(only_failed, False)
    )
    if planned is None:
        return Response(status_code=204)
    return JSONResponse(planned.to_json(), 202)


@router.put(
    "/{name}/pause",
    status_code=202,
    summary="Pause a connector and its tasks",
    responses=responses(202, None, 404),
)
def pause_connector(herder: HerderDep, name: str) -> Response:
    herder.pause_connector(name)
    return Response(status_code=202)


@router.put(
    "/{name}/resume",
    status_code=202,
    summary="Resume a paused or stopped connector",
    responses=responses(202, None, 404),
)
def resume_connector(herder: HerderDep, name: str) -> Response:
    herder.resume_connector(name)
    return Response(status_code=202)


@router.put(
    "/{name}/stop",
    status_code=204,
    summary="Stop a connector and shut its tasks down (offsets may then be changed)",
    responses=responses(204, None, 404),
)
def stop_connector(herder: HerderDep, name: str) -> Response:
    herder.stop_connector(name)
    return Response(status_code=204)


@router.put(
    "/{name}/fence",
    status_code=204,
    summary="Fence the transactional producers of an exactly-once source's previous tasks",
    responses=responses(204, None, 400, 404),
)
def fence_zombies(herder: HerderDep, name: str) -> Response:
    herder.fence_zombies(name)
    return Response(status_code=204)


# ------------------------------------------------------------------ tasks


@router.get(
    "/{name}/tasks",
    summary="A connector's task configs",
    responses=responses(200, list[models.TaskInfo], 404),
)
def get_tasks(herder: HerderDep, name: str) -> JSONResponse:
    return JSONResponse([t.to_json() for t in herder.task_configs(name)])


@router.get(
    "/{name}/tasks-config",
    summary="Deprecated: task configs keyed by '<connector>-<task>'",
    deprecated=True,
    responses=responses(200, dict[str, dict[str, str]], 404),
)
def get_tasks_config(herder: HerderDep, name: str) -> JSONResponse:
    return JSONResponse({f"{t.connector}-{t.task}": t.config for t in herder.task_configs(name)})


@router.get(
    "/{name}/tasks/{task}/status",
    summary="The state of one task",
    responses=responses(200, models.TaskState, 404),
)
def get_task_status(herder: HerderDep, name: str, task: str) -> JSONResponse:
    return JSONResponse(herder.task_status(name, _task_id(task)).to_json())


@router.post(
    "/{name}/tasks/{task}/restart",
    status_code=204,
    summary="Restart one task",
    responses=responses(204, None, 404, 409),
)
def restart_task(herder: HerderDep, name: str, task: str) -> Response:
    herder.restart_task(name, _task_id(task))
    return Response(status_code=204)


# ------------------------------------------------------------------ topics, offsets


@router.get(
    "/{name}/topics",
    summary="Topics the connector has used since creation or the last reset",
    responses=responses(200, dict[str, models.ActiveTopics], 403, 404),
)
def get_topics(herder: HerderDep, name: str, tracking: TrackingDep) -> JSONResponse:
    if not tracking.enabled:
        raise RestError(403, "Topic tracking is disabled.")
    return JSONResponse({name: {"topics": herder.connector_topics(name)}})


@router.put(
    "/{name}/topics/reset",
    status_code=202,
    summary="Forget the topics the connector has used",
    responses=responses(202, None, 403, 404),
)
def reset_topics(herder: HerderDep, name: str, tracking: TrackingDep) -> Response:
    if not tracking.enabled:
        raise RestError(403, "Topic tracking is disabled.")
    if not tracking.allow_reset:
        raise RestError(403, "Topic tracking reset is disabled.")
    herder.reset_connector_topics(name)
    return Response(status_code=202)


@router.get(
    "/{name}/offsets",
    summary="The connector's committed offsets",
    responses=responses(200, models.ConnectorOffsets, 404),
)
def get_offsets(herder: HerderDep, name: str) -> JSONResponse:
    return JSONResponse({"offsets": herder.connector_offsets(name)})


@router.patch(
    "/{name}/offsets",
    summary="Alter offsets of a STOPPED connector; a null offset resets its partition",
    responses=responses(200, models.Message, 400, 404, 500),
    openapi_extra=models.body("offsets"),
)
def alter_offsets(herder: HerderDep, name: str, body: JsonBody) -> JSONResponse:
    offsets = object_body(body, "The offsets request").get("offsets")
    if offsets is not None and not isinstance(offsets, list):
        raise MalformedBodyError("'offsets' must be an array")
    if not offsets:
        raise BadRequestError(
            "Partitions / offsets need to be provided for an alter offsets request"
        )
    entries = [object_body(entry, "Each entry of 'offsets'") for entry in offsets]
    return JSONResponse({"message": herder.alter_connector_offsets(name, entries)})


@router.delete(
    "/{name}/offsets",
    summary="Reset all offsets of a STOPPED connector",
    responses=responses(200, models.Message, 400, 404),
)
def reset_offsets(herder: HerderDep, name: str) -> JSONResponse:
    return JSONResponse({"message": herder.reset_connector_offsets(name)})
