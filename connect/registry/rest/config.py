"""`/config[/{s}]` (compatibility level) and `/mode[/{s}]`: GET, PUT, DELETE."""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from connect.registry.core import InvalidCompatibilityLevelError, SubjectConfig
from connect.registry.core.settings import Settings
from connect.registry.rest.params import flag, json_object, subject
from connect.registry.rest.responses import json_response

__all__ = ["ROUTES"]


def _settings(request: Request) -> Settings:
    return request.app.state.registry.settings


def _scope(request: Request) -> str | None:
    return subject(request) if "subject" in request.path_params else None


def _config_body(config: SubjectConfig, key: str = "compatibilityLevel") -> dict[str, Any]:
    out: dict[str, Any] = {key: config.level}
    if config.normalize is not None:
        out["normalize"] = config.normalize
    return out


async def get_config(request: Request) -> Response:
    config = _settings(request).get_config(
        _scope(request), default_to_global=flag(request, "defaultToGlobal")
    )
    return json_response(_config_body(config))


async def put_config(request: Request) -> Response:
    """Body `{"compatibility": LEVEL, "normalize"?: bool}`; echoes what was set."""
    body = await json_object(request)
    level = body.get("compatibility", body.get("compatibilityLevel"))
    if level is None:
        raise InvalidCompatibilityLevelError(level)
    normalize = body.get("normalize")
    config = await run_in_threadpool(
        _settings(request).set_config,
        _scope(request),
        level,
        normalize=normalize if isinstance(normalize, bool) else None,
    )
    return json_response(_config_body(config, "compatibility"))


async def delete_config(request: Request) -> Response:
    config = await run_in_threadpool(_settings(request).delete_config, _scope(request))
    return json_response(_config_body(config))


async def get_mode(request: Request) -> Response:
    mode = _settings(request).get_mode(
        _scope(request), default_to_global=flag(request, "defaultToGlobal")
    )
    return json_response({"mode": mode})


async def put_mode(request: Request) -> Response:
    body = await json_object(request)
    mode = await run_in_threadpool(
        _settings(request).set_mode, _scope(request), body.get("mode"), force=flag(request, "force")
    )
    return json_response({"mode": mode})


async def delete_mode(request: Request) -> Response:
    mode = await run_in_threadpool(_settings(request).delete_mode, _scope(request))
    return json_response({"mode": mode})


ROUTES = (
    ("/config", get_config, ["GET"]),
    ("/config", put_config, ["PUT"]),
    ("/config", delete_config, ["DELETE"]),
    ("/config/{subject}", get_config, ["GET"]),
    ("/config/{subject}", put_config, ["PUT"]),
    ("/config/{subject}", delete_config, ["DELETE"]),
    ("/mode", get_mode, ["GET"]),
    ("/mode", put_mode, ["PUT"]),
    ("/mode", delete_mode, ["DELETE"]),
    ("/mode/{subject}", get_mode, ["GET"]),
    ("/mode/{subject}", put_mode, ["PUT"]),
    ("/mode/{subject}", delete_mode, ["DELETE"]),
)
