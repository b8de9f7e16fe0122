"""Endpoint parameters: the herder, and request bodies and query flags read the way
Kafka Connect's JAX-RS stack reads them.

- A body that is not JSON, or not of the endpoint's shape, is a MalformedBodyError
  (400; Kafka answers Jackson's errors with 500, connect.rest.errors says why not).
- Config maps are `{str: str}`; JSON scalars become the strings Jackson would make of
  them (`1` → "1", `true` → "true"), `null` stays None (PATCH removes the key; PUT and
  POST drop it), and nested objects or arrays are refused.
- Boolean query flags follow `Boolean.valueOf`: "true" in any case is true, anything
  else false.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import Depends, Request

from connect.herder.api import Herder
from connect.rest.errors import MalformedBodyError

__all__ = [
    "HerderDep",
    "JsonBody",
    "TopicTracking",
    "TrackingDep",
    "config_map",
    "flag",
    "object_body",
]


async def _herder(request: Request) -> Herder:
    return request.app.state.herder


#: The herder the app serves (every endpoint is a thin wrapper over one of its calls).
HerderDep = Annotated[Herder, Depends(_herder)]


class TopicTracking:
    """Whether `/connectors/{name}/topics` and its reset are allowed (Kafka's
    `topic.tracking.enable` and `topic.tracking.allow.reset`)."""

    def __init__(self, *, enabled: bool = True, allow_reset: bool = True) -> None:
        self.enabled = enabled
        self.allow_reset = allow_reset


async def _topic_tracking(request: Request) -> TopicTracking:
    return request.app.state.topic_tracking


TrackingDep = Annotated[TopicTracking, Depends(_topic_tracking)]


async def _json_body(request: Request) -> Any:
    raw = await request.body()
    if not raw.strip():
        raise MalformedBodyError("No content to map due to end-of-input: the request has no body")
    try:
        return json.loads(raw)
    except UnicodeDecodeError as exc:
        raise MalformedBodyError(f"Request body is not UTF-8: {exc.reason}") from None
    except ValueError as exc:
        raise MalformedBodyError(f"Request body is not valid JSON: {exc}") from None


#: The parsed JSON body of a request (read on the event loop; endpoints stay blocking).
JsonBody = Annotated[Any, Depends(_json_body)]


def object_body(body: Any, what: str) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise MalformedBodyError(f"{what} must be a JSON object, not {_json_type(body)}")
    return body


def _scalar_text(key: str, value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    raise MalformedBodyError(
        f"Config value of {key!r} must be a string, number, boolean or null, "
        f"not {_json_type(value)}"
    )


def config_map(value: Any, what: str = "Connector config") -> dict[str, str | None]:
    """A `{str: str | None}` config map from a JSON value (see the module docstring)."""
    return {str(k): _scalar_text(str(k), v) for k, v in object_body(value, what).items()}


def flag(value: str | None, default: bool) -> bool:
    return default if value is None else value.lower() == "true"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), "a number"
    )
