"""`/`, `/health` and `/admin/loggers`: Kafka Connect's RootResource and
LoggingResource."""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, Query
from starlette.responses import JSONResponse, Response

from connect.api import NotFoundError
from connect.herder.api import BadRequestError
from connect.rest import models
from connect.rest.models import responses
from connect.rest.params import HerderDep, JsonBody, object_body

__all__ = ["router"]

router = APIRouter()
_log = logging.getLogger("connect.rest")

#: /health: Kafka answers 503 while the worker starts and 500 when a probe fails.
_HEALTH_STATUS = {"healthy": 200, "starting": 503, "unhealthy": 500}


@router.get(
    "/",
    tags=["worker"],
    summary="Version of this worker",
    responses=responses(200, models.ServerInfo),
)
def server_info(herder: HerderDep) -> JSONResponse:
    return JSONResponse(herder.server_info())


@router.get(
    "/health",
    tags=["worker"],
    summary="Whether the worker is up: 200 healthy, 503 starting, 500 unhealthy",
    responses={
        200: {"model": models.WorkerStatus},
        503: {"model": models.WorkerStatus},
        500: {"model": models.WorkerStatus},
    },
)
def health(herder: HerderDep) -> JSONResponse:
    status = herder.health()
    return JSONResponse(status, _HEALTH_STATUS.get(status.get("status", ""), 500))


@router.get(
    "/admin/loggers",
    tags=["admin"],
    summary="Levels of root and of every logger set explicitly",
    responses=responses(200, dict[str, models.LoggerLevel]),
)
def list_loggers(herder: HerderDep) -> JSONResponse:
    return JSONResponse(herder.logger_levels())


@router.get(
    "/admin/loggers/{logger}",
    tags=["admin"],
    summary="One logger's level",
    responses=responses(200, models.LoggerLevel, 404),
)
def get_logger(herder: HerderDep, logger: str) -> JSONResponse:
    level = herder.logger_levels().get(logger)
    if level is None:
        raise NotFoundError(f"Logger {logger} not found.")
    return JSONResponse(level)


@router.put(
    "/admin/loggers/{logger}",
    tags=["admin"],
    summary="Set the level of a logger and the loggers below it (until restart)",
    responses={**responses(200, list[str], 400, 404, 500), 204: {"description": "scope=cluster"}},
    openapi_extra=models.body("level"),
)
def set_logger(
    herder: HerderDep,
    logger: str,
    body: JsonBody,
    scope: Annotated[str | None, Query(description="worker (default) or cluster")] = None,
) -> Response:
    level = object_body(body, "The logger request").get("level")
    if level is None:
        raise BadRequestError("Desired 'level' parameter was not specified in request.")
    chosen = (scope or "worker").lower()
    if chosen not in ("worker", "cluster"):
        _log.warning("Ignoring unknown logging level scope %r; using worker scope", scope)
        chosen = "worker"
    affected = herder.set_logger_level(logger, str(level), scope=chosen)
    if chosen == "cluster":
        return Response(status_code=204)
    return JSONResponse(affected)
