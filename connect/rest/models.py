"""Kafka Connect's REST entities as pydantic models, for the OpenAPI description only.

Responses are built by the herder's `to_json()` and sent as they are; these models
document them (field names exactly as Kafka sends them) and are never used to
validate or re-serialize a response.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["REQUEST_BODIES", "responses"]

State = Literal["UNASSIGNED", "RUNNING", "PAUSED", "FAILED", "RESTARTING", "STOPPED"]


class ErrorMessage(BaseModel):
    error_code: int = Field(description="Always equal to the HTTP status.")
    message: str


class ServerInfo(BaseModel):
    version: str
    commit: str
    kafka_cluster_id: str


class WorkerStatus(BaseModel):
    status: Literal["healthy", "starting", "unhealthy"]
    message: str


class ConnectorTaskId(BaseModel):
    connector: str
    task: int


_MASKED = (
    "PASSWORD-typed keys, and the password inside any value (a URL's user:pass@, "
    "?password=, ;password=), shown as [hidden]; sent back as they are in a PUT of the "
    "same connector, the stored secrets are kept."
)


class ConnectorInfo(BaseModel):
    name: str
    config: dict[str, str] = Field(description=_MASKED)
    tasks: list[ConnectorTaskId]
    type: Literal["source", "sink", "unknown"]


class ConnectorState(BaseModel):
    state: State
    worker_id: str
    version: str | None = Field(None, description="The plugin's version; absent when unknown.")
    trace: str | None = Field(None, description="Present only when non-empty.")


class TaskState(ConnectorState):
    id: int


class ConnectorStateInfo(BaseModel):
    name: str
    connector: ConnectorState
    tasks: list[TaskState]
    type: Literal["source", "sink", "unknown"]


class ConnectorExpansion(BaseModel):
    status: ConnectorStateInfo | None = None
    info: ConnectorInfo | None = None


class TaskInfo(BaseModel):
    id: ConnectorTaskId
    config: dict[str, str] = Field(description=_MASKED)


class ActiveTopics(BaseModel):
    topics: list[str]


class ConnectorOffset(BaseModel):
    partition: dict[str, Any]
    offset: dict[str, Any] | None


class ConnectorOffsets(BaseModel):
    offsets: list[ConnectorOffset]


class Message(BaseModel):
    message: str


class PluginInfo(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    class_: str = Field(alias="class")
    type: Literal["source", "sink", "converter", "header_converter", "transformation", "predicate"]
    version: str


class ConfigKeyInfo(BaseModel):
    name: str
    type: str
    required: bool
    default_value: str | None
    importance: str
    documentation: str
    group: str | None
    order_in_group: int
    width: str
    display_name: str
    dependents: list[str]


class ConfigValueInfo(BaseModel):
    name: str
    value: str | None
    recommended_values: list[str]
    errors: list[str]
    visible: bool


class ConfigInfo(BaseModel):
    definition: ConfigKeyInfo
    value: ConfigValueInfo


class ConfigInfos(BaseModel):
    name: str
    error_count: int
    groups: list[str]
    configs: list[ConfigInfo]


class LoggerLevel(BaseModel):
    level: str
    last_modified: int | None = Field(description="Epoch ms of the last change, or null.")


def responses(status: int, model: Any = None, *errors: int) -> dict[int | str, Any]:
    """FastAPI `responses=` for one success status (with its model, if any) and the
    error statuses the endpoint answers with."""
    out: dict[int | str, Any] = {status: {"model": model} if model is not None else {}}
    if model is None:
        out[status]["description"] = "No content"
    for error in errors:
        out[error] = {"model": ErrorMessage}
    return out


_CONFIG_MAP = {
    "type": "object",
    "additionalProperties": {"type": ["string", "number", "boolean", "null"]},
}

#: JSON schemas of request bodies (the endpoints read bodies themselves, as Kafka does).
REQUEST_BODIES: dict[str, dict[str, Any]] = {
    "create": {
        "type": "object",
        "required": ["name", "config"],
        "properties": {
            "name": {"type": "string"},
            "config": _CONFIG_MAP,
            "initial_state": {"type": "string", "enum": ["RUNNING", "PAUSED", "STOPPED"]},
        },
    },
    "config": _CONFIG_MAP,
    "offsets": {
        "type": "object",
        "required": ["offsets"],
        "properties": {
            "offsets": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "partition": {"type": "object"},
                        "offset": {"type": ["object", "null"]},
                    },
                },
            }
        },
    },
    "level": {
        "type": "object",
        "required": ["level"],
        "properties": {
            "level": {
                "type": "string",
                "enum": ["OFF", "FATAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE"],
            }
        },
    },
}


def body(name: str) -> dict[str, Any]:
    """`openapi_extra` describing one of REQUEST_BODIES."""
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": REQUEST_BODIES[name]}},
        }
    }
