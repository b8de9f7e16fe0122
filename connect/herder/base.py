"""What every herder shares: the stores of the log, the worker, and every action whose
effect is a write to a store or a read of one.

A herder's desired state (connector configs, task configs, target states) lives in the
config topic; observed state (RUNNING, PAUSED, FAILED, …) in the status topic; source
offsets in the offsets topic. `LogHerder` answers the Herder protocol's reads from those
stores and writes configs, offsets and statuses to them; how a written change reaches
the running connectors and tasks is the subclass's: the standalone herder applies it at
once in the caller's thread, the distributed herder lets each worker of the cluster
apply its own share when it reads the change back from the log.
"""

from __future__ import annotations

import base64
import logging
import os
import re
import threading
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from connect.api import (
    AlreadyExistsError,
    ConfigError,
    IllegalWorkerStateError,
    NotFoundError,
    SinkConnector,
)
from connect.config_providers import ConfigProviders
from connect.herder.api import (
    BadRequestError,
    ConnectorInfo,
    ConnectorStateInfo,
    TaskInfo,
    TaskState,
)
from connect.herder.fencing import fence_for_offsets, fence_on_request
from connect.herder.last_known import LastKnown
from connect.herder.loggers import LoggerLevels
from connect.herder.offset_requests import (
    require_in_range,
    sink_offsets,
    source_offsets,
    source_stores,
    stored_offsets,
)
from connect.herder.plugin_info import connector_plugins, plugin_config
from connect.herder.secrets import (
    HIDDEN,
    config_secrets,
    install_log_masking,
    mask_config,
    mask_text,
    masks_left,
    password_keys,
    remember_secrets,
    restore_secrets,
)
from connect.herder.validation import (
    invalid_config_message,
    unknown_connector_keys,
    validate_connector_config,
)
from connect.plugins import Plugins
from connect.storage import (
    ClusterConfig,
    ConfigStore,
    LogTable,
    OffsetStore,
    State,
    StatusStore,
    TargetState,
    partition_key,
)
from connect.worker.worker import Worker
from log import Log, fsync_dir, read_text, write_atomic

__all__ = ["CLUSTER_ID_FILE", "VERSION", "LogHerder", "log_cluster_id", "with_placeholders"]

_log = logging.getLogger("connect.herder")
VERSION = "0.1.0"


_PLACEHOLDER = re.compile(r"\$\{[^}]*\}")


def with_placeholders(
    raw: Mapping[str, str], task_configs: list[dict[str, str]]
) -> list[dict[str, str]]:
    """Task configs as the connector generated them from its resolved config, with each
    key whose raw connector value holds a config-provider placeholder set back to that
    raw value (Kafka's KAFKA-5117), so no resolved secret reaches the config topic or
    the REST API; the worker resolves task configs again when it starts a task."""
    masked = {k: v for k, v in raw.items() if isinstance(v, str) and _PLACEHOLDER.search(v)}
    if not masked:
        return task_configs
    return [{k: masked.get(k, v) for k, v in config.items()} for config in task_configs]


#: The embedded log's cluster id, in its directory: hidden, so it is never a topic.
CLUSTER_ID_FILE = ".cluster.id"


def log_cluster_id(log: Any) -> str:
    """The id `GET /` reports as `kafka_cluster_id`: on Kafka, the cluster's own (from
    its metadata); on the embedded log, one made when the first worker asked and kept
    in the log's directory, so every worker sharing the directory, across restarts,
    reports the same one, as Kafka's brokers report the id their storage was
    formatted with.

    Two workers starting at once agree: each links its candidate into place, and the
    link that comes second fails and reads the first one's."""
    cluster = getattr(log, "cluster", None)
    if getattr(cluster, "cluster_id", None):
        return str(cluster.cluster_id)
    directory = getattr(log, "directory", None)
    if directory is None:
        return "unknown"
    path = Path(directory) / CLUSTER_ID_FILE
    known = read_text(path)
    if known and known.strip():
        return known.strip()
    candidate = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
    tmp = path.with_name(f"{CLUSTER_ID_FILE}.{uuid.uuid4().hex}.tmp")
    try:
        write_atomic(tmp, candidate.encode())
        try:
            os.link(tmp, path)
            fsync_dir(path.parent)
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
        return (read_text(path) or candidate).strip()
    except OSError as exc:  # a read-only log directory: no id to keep, and no 500
        _log.warning("no cluster id kept in %s: %s", directory, exc.strerror or exc)
        return "unknown"


def _stopped_message(name: str) -> str:
    return (
        f"Connectors must be in the STOPPED state before their offsets can be modified. "
        f"This can be done for the specified connector by issuing a 'PUT' request to the "
        f"'/connectors/{name}/stop' endpoint"
    )


class LogHerder:
    """The Herder protocol over the log's stores (see the module docstring); subclasses
    say how written changes reach the worker (`_connector_written`)."""

    def __init__(
        self,
        worker_config: Mapping[str, Any],
        *,
        log: Log,
        worker_id: str,
        plugins: Plugins | None = None,
    ) -> None:
        self.config = dict(worker_config)
        self.log = log
        self.plugins = plugins or Plugins()
        self._worker_id = worker_id
        self._lock = threading.RLock()
        self.configs = ConfigStore(LogTable(log, self.config["config.storage.topic"]))
        self.offsets = OffsetStore(
            LogTable(
                log,
                self.config["offset.storage.topic"],
                partitions=self.config["offset.storage.partitions"],
                # Exactly-once tasks write offsets in transactions: an aborted one
                # must not count (connect.worker.source_transactions). Whatever this
                # worker's own setting: the topic may hold transactions of other
                # workers, or of this one before a restart with another setting
                # (read_committed costs nothing where no transaction ever was).
                isolation_level="read_committed",
            )
        )
        self.status = StatusStore(
            LogTable(
                log,
                self.config["status.storage.topic"],
                partitions=self.config["status.storage.partitions"],
            )
        )
        #: The reads' view: the stores read to the log's end, or while the log cannot
        #: be reached the last known state (connect.herder.last_known).
        self.known = LastKnown(self.configs, self.status)
        self.worker = Worker(
            self.config,
            log=log,
            plugins=self.plugins,
            offsets=self.offsets,
            providers=ConfigProviders.from_worker_config(self.config),
            worker_id=worker_id,
            on_status=self._on_status,
        )
        self.worker.on_reconfigure = self._request_reconfiguration
        self.worker.on_topic = lambda connector, topic, task: self.status.put_topic(
            connector, topic, task
        )
        self.loggers = LoggerLevels()
        install_log_masking()  # a task's failure may quote its URL, password and all
        # Every config read from the log (replayed at start, or written by another
        # worker) has its secrets remembered before its connector can run and log.
        self.configs.add_listener(self._remember_secrets_of)
        self._ready = False
        self._reconfigure_requests: set[str] = set()
        self._cluster_id: str | None = None

    def start(self) -> None:
        """Replay the stores and start running what this herder runs."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop everything it runs, with final offset commits."""
        raise NotImplementedError

    def _connector_written(self, name: str) -> None:
        """Called under the lock after a connector's config was written."""
        raise NotImplementedError

    def _on_status(self, connector: str, task: int | None, state: State, trace: str | None) -> None:
        """The worker reports a state change of one of its connectors or tasks."""
        raise NotImplementedError

    def _request_reconfiguration(self, name: str) -> None:
        """A running connector asks for its task configs to be generated again."""
        raise NotImplementedError

    def _nothing_to_restart(self, name: str) -> bool:
        """Whether a restart of `name` (which must exist) has nothing to restart: the
        connector is STOPPED. Kafka accepts that restart (204, or 202 with its plan: the
        connector RESTARTING unless onlyFailed, no tasks) and the connector stays
        STOPPED; so do the herders here, answering the same plan and restarting nothing
        (a script that restarts every connector must not fail on a stopped one)."""
        self._require(name)
        return self.configs.snapshot().targets.get(name) is TargetState.STOPPED

    def _plugin_version(self, config: Mapping[str, str]) -> str | None:
        """The connector plugin's version, shown in its and its tasks' states as Kafka 4
        shows it; None when the class does not load (its state then says why)."""
        try:
            return str(getattr(self.worker.connector_class(config), "VERSION", "0.1.0"))
        except (ConfigError, NotFoundError):
            return None

    def _restart_plan(
        self, name: str, include_tasks: bool, only_failed: bool
    ) -> tuple[ConnectorStateInfo, bool, list[int]]:
        """What a restart restarts (Kafka's rules): the status as it will read, with
        those shown RESTARTING; whether the connector restarts; which tasks."""
        current = self.connector_status(name)
        restart_connector = not only_failed or current.state == State.FAILED
        tasks = [
            t.id
            for t in current.tasks
            if include_tasks and (not only_failed or t.state == State.FAILED)
        ]
        planned = ConnectorStateInfo(
            current.name,
            State.RESTARTING.value if restart_connector else current.state,
            current.worker_id,
            current.type,
            current.trace,
            [
                TaskState(
                    t.id,
                    State.RESTARTING.value if t.id in tasks else t.state,
                    t.worker_id,
                    t.trace,
                    t.version,
                )
                for t in current.tasks
            ],
            current.version,
        )
        return planned, restart_connector, tasks

    def _forget(self, name: str) -> None:
        """Delete the connector's config, target state, statuses and active topics."""
        self.configs.remove_connector(name)
        self.status.remove_connector(name)
        self.status.reset_topics(name)

    def _require(self, name: str, snapshot: ClusterConfig | None = None) -> dict[str, str]:
        """The connector's config, from `snapshot` (a read's: `self.known.configs()`)
        or else read to the log's end (a write's: it must not act on a stale view)."""
        if snapshot is None:
            snapshot = self.configs.snapshot()
        config = snapshot.connectors.get(name)
        if config is None:
            raise NotFoundError(f"Connector {name} not found")
        return config

    def _secret_keys(self, config: Mapping[str, str]) -> set[str]:
        """The config's PASSWORD keys (connect.herder.secrets), its secrets remembered
        so that no log line of this process shows them."""
        keys = password_keys(self.plugins, config)
        remember_secrets(config_secrets(config, keys))
        return keys

    def _remember_secrets_of(self, name: str) -> None:
        # Called while the store applies a record: read its state, never refresh it.
        config = self.configs.connector_config(name)
        if config is not None:
            self._secret_keys(config)

    def _masked_trace(self, config: Mapping[str, str], trace: str | None) -> str | None:
        """A status trace as the REST API shows it: a failure may quote the connector's
        URL or password (a driver's refusal often does)."""
        if not trace:
            return trace
        return mask_text(trace, config_secrets(config, self._secret_keys(config)))

    def masked_trace(self, name: str, trace: str | None) -> str | None:
        """`trace`, of connector `name` or one of its tasks, as every exit shows it (for
        views that read the status store themselves, as the console's do)."""
        config = self.known.configs().connectors.get(name)
        if config is None:
            return None if trace is None else mask_text(trace)
        return self._masked_trace(config, trace)

    # ------------------------------------------------------------- worker info

    def worker_id(self) -> str:
        return self._worker_id

    def server_info(self) -> dict[str, Any]:
        if self._cluster_id is None:
            self._cluster_id = log_cluster_id(self.log)
        return {"version": VERSION, "commit": "tributary", "kafka_cluster_id": self._cluster_id}

    def health(self) -> dict[str, Any]:
        if not self._ready:
            return {"status": "starting", "message": "Worker is still starting up."}
        return {
            "status": "healthy",
            "message": "Worker has completed startup and is ready to handle requests.",
        }

    # -------------------------------------------------------------- connectors

    def connectors(self) -> list[str]:
        return sorted(self.known.configs().connectors)

    def connector_info(self, name: str) -> ConnectorInfo:
        snapshot = self.known.configs()
        config = self._require(name, snapshot)
        tasks = snapshot.tasks.get(name, [])
        return ConnectorInfo(
            name,
            mask_config(config, self._secret_keys(config)),
            list(range(len(tasks))),
            self.worker.connector_type(config),
        )

    def connector_config(self, name: str) -> dict[str, str]:
        config = self._require(name, self.known.configs())
        return mask_config(config, self._secret_keys(config))

    def put_connector_config(
        self,
        name: str,
        config: dict[str, str],
        *,
        allow_replace: bool,
        initial_state: str | None = None,
    ) -> tuple[bool, ConnectorInfo]:
        config = {str(k): str(v) for k, v in config.items() if v is not None}
        if config.get("name", name) != name:
            raise BadRequestError(
                "Connector name configuration (" + config["name"] + ") "
                f"doesn't match connector name in the URL ({name})"
            )
        config["name"] = name
        stored = self.configs.snapshot().connectors.get(name)
        if stored:  # a config read back with its secrets masked keeps them
            config = restore_secrets(config, stored, self._secret_keys({**stored, **config}))
        keys = self._secret_keys(config)
        infos = self.validate_connector_config(config)
        unrestored = [
            f"{key}: the value holds {HIDDEN}, the mask shown in place of a secret, and "
            f"connector {name} has no stored secret there to keep; send the secret itself"
            for key in masks_left(config, keys)
        ]
        if infos["error_count"] or unrestored:
            raise BadRequestError(invalid_config_message(infos, unrestored))
        for line in unknown_connector_keys(infos, config):
            _log.warning("%s", line)
        with self._lock:
            exists = name in self.configs.snapshot().connectors
            if exists and not allow_replace:
                raise AlreadyExistsError(f"Connector {name} already exists")
            target = None
            if not exists:
                target = {
                    None: TargetState.STARTED,
                    "RUNNING": TargetState.STARTED,
                    "PAUSED": TargetState.PAUSED,
                    "STOPPED": TargetState.STOPPED,
                }.get(initial_state)
                if target is None:
                    raise BadRequestError(f"Invalid initial state {initial_state}")
            self.configs.put_connector_config(name, config, target=target)
            self._connector_written(name)
        return not exists, self.connector_info(name)

    def patch_connector_config(self, name: str, patch: dict[str, str | None]) -> ConnectorInfo:
        with self._lock:
            merged: dict[str, str | None] = {**self._require(name), **patch}
            config = {k: v for k, v in merged.items() if v is not None}
            return self.put_connector_config(name, config, allow_replace=True)[1]

    def _assigned_worker(self, name: str, task: int | None) -> str:
        """The worker a connector (task None) or task is assigned to, for a status not
        written yet: this one, where one worker runs everything."""
        return self._worker_id

    def connector_status(self, name: str) -> ConnectorStateInfo:
        """The connector's and its tasks' states. Why a configured connector or task
        with no status yet is UNASSIGNED and not 404 (Kafka's answer): it exists from
        the moment its config is in the log (any worker reads it from there at once),
        while its owner writes the first state only once it has started it; a client
        that creates a connector and asks for its status must not be told it is not
        there. While the log cannot be reached, the last known states
        (connect.herder.last_known), as Kafka's in-memory view answers."""
        snapshot = self.known.configs()
        config = self._require(name, snapshot)
        self.known.refresh_status()
        status = self.status.connector(name)
        task_count = len(snapshot.tasks.get(name, []))
        held = {s.task or 0: s for s in self.status.tasks(name)}
        version = self._plugin_version(config)
        tasks = []
        for index in range(task_count):
            s = held.get(index)
            if s is None:
                worker = self._assigned_worker(name, index)
                tasks.append(TaskState(index, State.UNASSIGNED.value, worker, None, version))
            else:
                trace = self._masked_trace(config, s.trace)
                tasks.append(TaskState(index, s.state.value, s.worker_id, trace, version))
        if status is None:
            state, worker, trace = State.UNASSIGNED.value, self._assigned_worker(name, None), None
        else:
            state, worker = status.state.value, status.worker_id
            trace = self._masked_trace(config, status.trace)
        return ConnectorStateInfo(
            name, state, worker, self.worker.connector_type(config), trace, tasks, version
        )

    def task_configs(self, name: str) -> list[TaskInfo]:
        snapshot = self.known.configs()
        config = self._require(name, snapshot)
        keys = self._secret_keys(config)
        tasks = snapshot.tasks.get(name, [])
        return [TaskInfo(name, i, mask_config(c, keys)) for i, c in enumerate(tasks)]

    def task_status(self, name: str, task: int) -> TaskState:
        snapshot = self.known.configs()
        config = self._require(name, snapshot)
        if not 0 <= task < len(snapshot.tasks.get(name, [])):
            # Not a task of the connector now (it was stopped, or has fewer tasks since):
            # its last status is history, which connector_status does not show either.
            raise NotFoundError(f"No status found for task {name}-{task}")
        self.known.refresh_status()
        version = self._plugin_version(config)
        for s in self.status.tasks(name):
            if s.task == task:
                trace = self._masked_trace(config, s.trace)
                return TaskState(task, s.state.value, s.worker_id, trace, version)
        # Configured, not started yet (see connector_status).
        worker = self._assigned_worker(name, task)
        return TaskState(task, State.UNASSIGNED.value, worker, None, version)

    # ---------------------------------------------------------- topics, offsets

    def connector_topics(self, name: str) -> list[str]:
        self._require(name, self.known.configs())
        return self.status.topics(name)

    def reset_connector_topics(self, name: str) -> None:
        self._require(name)
        self.status.reset_topics(name)

    def _kind(self, name: str) -> type:
        return self.worker.connector_class(self._require(name))

    def connector_offsets(self, name: str) -> list[dict[str, Any]]:
        if issubclass(self._kind(name), SinkConnector):
            committed = self.log.committed_offsets(f"connect-{name}")
            return [
                {
                    "partition": {"kafka_topic": tp.topic, "kafka_partition": tp.partition},
                    "offset": {"kafka_offset": o.offset},
                }
                for tp, o in sorted(committed.items())
            ]
        stores = self._source_stores(name, self._require(name), create=False)
        return [{"partition": p, "offset": o} for p, o in stored_offsets(stores, name).values()]

    def _source_stores(self, name: str, props: Mapping[str, str], *, create: bool) -> list:
        return source_stores(self.log, self.config, props, self.offsets, create=create)

    def fence_zombies(self, name: str) -> None:
        """`PUT /connectors/{name}/fence`: fence the producers of the connector's
        previous task generation now, if its current one waits for that
        (connect.herder.fencing). Kafka's is an endpoint between workers; here any
        worker runs the round itself (every worker shares the log)."""
        with self._lock:
            fence_on_request(self, name, self._require(name))

    def _require_stopped(self, name: str) -> None:
        if self.configs.snapshot().targets.get(name) is not TargetState.STOPPED:
            raise IllegalWorkerStateError(_stopped_message(name))

    def alter_connector_offsets(self, name: str, offsets: list[dict[str, Any]]) -> str:
        with self._lock:
            config = self._require(name)
            self._require_stopped(name)
            if not offsets:
                raise BadRequestError("Offsets to alter must not be empty")
            cls = self._kind(name)
            if issubclass(cls, SinkConnector):
                changes = sink_offsets(offsets)
                require_in_range(self.log, name, changes)
                acknowledged = cls().alter_offsets(config, changes)
                group = f"connect-{name}"
                keep = {tp: o for tp, o in changes.items() if o is not None}
                if keep:
                    self.log.commit_offsets(group, keep)
                dropped = [tp for tp, o in changes.items() if o is None]
                if dropped:
                    self.log.delete_committed_offsets(group, dropped)
            else:
                items = source_offsets(offsets)
                fence_for_offsets(self, name, config)
                acknowledged = cls().alter_offsets(
                    config, {partition_key(name, p): o for p, o in items}
                )
                for store in self._source_stores(name, config, create=True):
                    store.put(name, {partition_key(name, p): (p, o) for p, o in items})
        if acknowledged:
            return "The offsets for this connector have been altered successfully"
        return (
            "The Connect framework-managed offsets for this connector have been altered "
            "successfully. However, if this connector manages offsets externally, they "
            "will need to be manually altered in the system that the connector uses."
        )

    def reset_connector_offsets(self, name: str) -> str:
        with self._lock:
            config = self._require(name)
            self._require_stopped(name)
            cls = self._kind(name)
            if issubclass(cls, SinkConnector):
                group = f"connect-{name}"
                committed = self.log.committed_offsets(group)
                cls().alter_offsets(config, dict.fromkeys(committed))
                if committed:  # else no group to delete: Kafka's broker answers
                    self.log.delete_group(group)  # GROUP_ID_NOT_FOUND, Connect 200
            else:
                fence_for_offsets(self, name, config)
                stores = self._source_stores(name, config, create=True)
                current = stored_offsets(stores, name)
                cls().alter_offsets(config, dict.fromkeys(current))
                for store in stores:
                    store.put(name, {k: (p, None) for k, (p, _) in current.items()})
        return "The offsets for this connector have been reset successfully"

    # ------------------------------------------------------ plugins, validation

    def validate_connector_config(self, config: dict[str, str]) -> dict[str, Any]:
        return validate_connector_config(
            self.plugins,
            config,
            exactly_once_source_support=str(
                self.config.get("exactly.once.source.support") or "disabled"
            ),
        )

    def connector_plugins(self, *, connectors_only: bool = True) -> list[dict[str, str]]:
        return connector_plugins(self.plugins, connectors_only=connectors_only, version=VERSION)

    def plugin_config(self, plugin: str) -> list[dict[str, Any]]:
        return plugin_config(self.plugins, plugin)

    # ------------------------------------------------------------------- loggers

    def logger_levels(self) -> dict[str, dict[str, Any]]:
        return self.loggers.all()

    def set_logger_level(self, namespace: str, level: str, *, scope: str = "worker") -> list[str]:
        return self.loggers.set(namespace, level)
