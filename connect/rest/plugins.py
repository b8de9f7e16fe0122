"""`/connector-plugins`: Kafka Connect's ConnectorPluginsResource."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from starlette.responses import JSONResponse

from connect.herder.api import BadRequestError
from connect.rest import models
from connect.rest.models import responses
from connect.rest.params import HerderDep, JsonBody, config_map, flag

__all__ = ["router"]

router = APIRouter(prefix="/connector-plugins", tags=["connector-plugins"])


@router.get(
    "",
    summary="Installed plugins: connectors, or with connectorsOnly=false every kind",
    responses=responses(200, list[models.PluginInfo]),
)
def list_plugins(
    herder: HerderDep,
    connectors_only: Annotated[
        str | None, Query(alias="connectorsOnly", description="true (default) or false")
    ] = None,
) -> JSONResponse:
    return JSONResponse(herder.connector_plugins(connectors_only=flag(connectors_only, True)))


@router.get(
    "/{plugin}/config",
    summary="The config keys a plugin declares",
    responses=responses(200, list[models.ConfigKeyInfo], 404),
)
def plugin_config(herder: HerderDep, plugin: str) -> JSONResponse:
    return JSONResponse(herder.plugin_config(plugin))


def _normalized(plugin: str) -> str:
    return plugin.removesuffix("Connector")


@router.put(
    "/{plugin}/config/validate",
    summary="Validate a connector config; error_count > 0 means invalid (still 200)",
    responses=responses(200, models.ConfigInfos, 400, 500),
    openapi_extra=models.body("config"),
)
def validate_config(herder: HerderDep, plugin: str, body: JsonBody) -> JSONResponse:
    config = {k: v for k, v in config_map(body).items() if v is not None}
    included = config.get("connector.class")
    # Kafka's rule: the body's class must end with the plugin named in the path, either
    # of them with or without the "Connector" suffix.
    if included is not None and not _normalized(included).endswith(_normalized(plugin)):
        raise BadRequestError(
            f"Included connector type {included} does not match request type {plugin}"
        )
    return JSONResponse(herder.validate_connector_config(config))
