"""The Herder: every cluster action, in one protocol. The REST API and the CLI are thin
wrappers over it; the standalone herder (one process) and the distributed herder
(several workers over one log) implement it.

Results are small dataclasses whose `to_json()` gives Kafka Connect's REST entity
shapes exactly (field names as Kafka sends them), so the REST layer only maps them
and the error categories (connect.api.errors) to HTTP.

Errors: NotFoundError → 404, AlreadyExistsError → 409, ConfigError /
BadRequestError / IllegalWorkerStateError → 400, RebalanceInProgressError → 409.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from connect.api import ConnectError

__all__ = [
    "BadRequestError",
    "ConnectorInfo",
    "ConnectorStateInfo",
    "Herder",
    "RebalanceInProgressError",
    "TaskInfo",
    "TaskState",
]


class BadRequestError(ConnectError):
    """A request that is malformed or not allowed as asked (HTTP 400)."""


class RebalanceInProgressError(ConnectError):
    """The cluster is rebalancing; retry shortly (HTTP 409)."""


@dataclass(frozen=True, slots=True)
class ConnectorInfo:
    name: str
    config: dict[str, str]
    tasks: list[int]
    type: str  # "source" | "sink" | "unknown"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "config": dict(self.config),
            "tasks": [{"connector": self.name, "task": t} for t in self.tasks],
            "type": self.type,
        }


@dataclass(frozen=True, slots=True)
class TaskState:
    """`version` is the plugin's version, as Kafka 4 shows it in every state (KIP-891);
    left out when unknown (the class does not load), as Kafka leaves it out."""

    id: int
    state: str
    worker_id: str
    trace: str | None = None
    version: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "state": self.state, "worker_id": self.worker_id}
        if self.version:
            out["version"] = self.version
        if self.trace:
            out["trace"] = self.trace
        return out


@dataclass(frozen=True, slots=True)
class ConnectorStateInfo:
    name: str
    state: str
    worker_id: str
    type: str
    trace: str | None = None
    tasks: list[TaskState] = field(default_factory=list)
    version: str | None = None  # as TaskState's

    def to_json(self) -> dict[str, Any]:
        connector: dict[str, Any] = {"state": self.state, "worker_id": self.worker_id}
        if self.version:
            connector["version"] = self.version
        if self.trace:
            connector["trace"] = self.trace
        return {
            "name": self.name,
            "connector": connector,
            "tasks": [t.to_json() for t in self.tasks],
            "type": self.type,
        }


@dataclass(frozen=True, slots=True)
class TaskInfo:
    connector: str
    task: int
    config: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        return {"id": {"connector": self.connector, "task": self.task}, "config": self.config}


class Herder(Protocol):
    """Every action on the cluster's connectors (see the module docstring)."""

    # -- worker ------------------------------------------------------------------
    def worker_id(self) -> str: ...

    def server_info(self) -> dict[str, Any]: ...

    def health(self) -> dict[str, Any]: ...

    # -- connectors ----------------------------------------------------------------
    def connectors(self) -> list[str]: ...

    def connector_info(self, name: str) -> ConnectorInfo: ...

    def connector_config(self, name: str) -> dict[str, str]: ...

    def put_connector_config(
        self,
        name: str,
        config: dict[str, str],
        *,
        allow_replace: bool,
        initial_state: str | None = None,
    ) -> tuple[bool, ConnectorInfo]:
        """Create (True) or replace (False); AlreadyExistsError without allow_replace."""
        ...

    def patch_connector_config(self, name: str, patch: dict[str, str | None]) -> ConnectorInfo: ...

    def delete_connector(self, name: str) -> None: ...

    def connector_status(self, name: str) -> ConnectorStateInfo: ...

    def task_configs(self, name: str) -> list[TaskInfo]: ...

    def task_status(self, name: str, task: int) -> TaskState: ...

    def restart_connector(
        self, name: str, *, include_tasks: bool = False, only_failed: bool = False
    ) -> ConnectorStateInfo | None:
        """None for the plain restart (REST 204), else the planned states (202)."""
        ...

    def restart_task(self, name: str, task: int) -> None: ...

    def pause_connector(self, name: str) -> None: ...

    def resume_connector(self, name: str) -> None: ...

    def stop_connector(self, name: str) -> None: ...

    def fence_zombies(self, name: str) -> None:
        """Fence the transactional producers of an exactly-once source's previous task
        generation (Kafka's PUT /connectors/{name}/fence)."""
        ...

    # -- topics and offsets ------------------------------------------------------
    def connector_topics(self, name: str) -> list[str]: ...

    def reset_connector_topics(self, name: str) -> None: ...

    def connector_offsets(self, name: str) -> list[dict[str, Any]]:
        """[{"partition": {...}, "offset": {...}}], Kafka's ConnectorOffsets entries."""
        ...

    def alter_connector_offsets(self, name: str, offsets: list[dict[str, Any]]) -> str: ...

    def reset_connector_offsets(self, name: str) -> str: ...

    # -- plugins and validation --------------------------------------------------
    def validate_connector_config(self, config: dict[str, str]) -> dict[str, Any]:
        """Kafka's ConfigInfos: {name, error_count, groups, configs: [...]}."""
        ...

    def connector_plugins(self, *, connectors_only: bool = True) -> list[dict[str, str]]: ...

    def plugin_config(self, plugin: str) -> list[dict[str, Any]]: ...

    # -- loggers ---------------------------------------------------------------
    def logger_levels(self) -> dict[str, dict[str, Any]]: ...

    def set_logger_level(
        self, namespace: str, level: str, *, scope: str = "worker"
    ) -> list[str]: ...
