"""The Worker: runs connectors and tasks on this process, as a herder tells it.

It owns no decisions about *what* runs (that is the herder's); it knows *how*: it
resolves plugin classes, resolves config-provider placeholders (only here, at start,
so stored configs keep them), builds converters (worker defaults, overridden per
connector with the usual prefixes), transform chains and error handlers, creates
source topics per `topic.creation.*`, and reports every state change to `on_status`.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from connect.api import (
    ConfigError,
    Connector,
    ConnectorContext,
    Converter,
    HeaderConverter,
    SinkConnector,
    SinkTask,
    SourceConnector,
    SourceTask,
    Task,
)
from connect.config_providers import ConfigProviders
from connect.errors import DeadLetterQueueReporter, ErrorPolicy, RetryWithTolerance, Stage
from connect.plugins import PluginKind, Plugins
from connect.registry.local import local_log, set_local_log
from connect.storage import OffsetStore, State
from connect.worker.connector_config import SINK_CONNECTOR_CONFIG, SOURCE_CONNECTOR_CONFIG
from connect.worker.exactly_once_config import sink_isolation_level
from connect.worker.lease import Lease
from connect.worker.process_task import ProcessTask
from connect.worker.sink_task import WorkerSinkTask
from connect.worker.source_appends import source_delivery_timeout_ms
from connect.worker.source_task import WorkerSourceTask
from connect.worker.source_transactions import task_transactions
from connect.worker.task_base import WorkerTask
from log import FileLog, Log, TopicConfig, TopicExistsError

__all__ = ["StatusCallback", "Worker"]

_log = logging.getLogger("connect.worker")

#: (connector, task or None, state, trace) → None
StatusCallback = Callable[[str, int | None, State, str | None], None]
_TOPIC_KEYS = set(TopicConfig.keys())


class _ConnectorContext(ConnectorContext):
    def __init__(self, worker: Worker, name: str) -> None:
        self._worker = worker
        self._name = name

    def request_task_reconfiguration(self) -> None:
        if self._worker.on_reconfigure is not None:
            self._worker.on_reconfigure(self._name)

    def raise_error(self, error: BaseException) -> None:
        self._worker.fail_connector(self._name, error)


@dataclass(frozen=True, slots=True)
class _TaskParts:
    """What a sink and a source task are both built from: the plugin and its configs
    (step 1 of `Worker._build_task`) and the stages its records go through (step 2)."""

    name: str
    index: int
    plugin: Task
    cprops: Mapping[str, str]
    tprops: Mapping[str, str]
    parsed: Mapping[str, Any]
    paused: bool
    key_converter: Converter
    value_converter: Converter
    header_converter: HeaderConverter
    transform: Callable | None
    policy: ErrorPolicy
    plugin_names: dict[Stage, str]


class Worker:
    def __init__(
        self,
        config: Mapping[str, Any],
        *,
        log: Log,
        plugins: Plugins,
        offsets: OffsetStore,
        providers: ConfigProviders,
        worker_id: str,
        on_status: StatusCallback,
    ) -> None:
        self.config = dict(config)  # parsed WORKER_CONFIG values plus raw extra keys
        self.log = log
        self.plugins = plugins
        self.offsets = offsets
        self.providers = providers
        self.worker_id = worker_id
        self.on_status = on_status
        self.on_reconfigure: Callable[[str], None] | None = None
        #: (connector, topic, task) when a task first uses a topic (KIP-558 tracking).
        self.on_topic: Callable[[str, str, int], None] | None = None
        self._lock = threading.RLock()
        self.connectors: dict[str, Connector] = {}
        self.connector_states: dict[str, State] = {}
        self.tasks: dict[tuple[str, int], WorkerTask | ProcessTask] = {}
        #: Set by a distributed herder (`use_lease`): tasks write only while it holds.
        self.lease: Lease | None = None
        if isinstance(log, FileLog):  # converters may use `schema.registry.url=embedded`
            set_local_log(log, topic=str(self.config.get("schema.registry.topic", "_schemas")))

    def use_lease(self, lease: Lease) -> None:
        """Gate every task's writes on `lease` (see connect.worker.lease); task processes
        are told each extension."""
        self.lease = lease
        lease.add_listener(self._lease_extended)

    def _lease_extended(self, deadline: float) -> None:
        with self._lock:
            tasks = [t for t in self.tasks.values() if isinstance(t, ProcessTask)]
        generation = self.lease.generation if self.lease is not None else None
        for task in tasks:
            task.extend_lease(deadline, generation)

    # ------------------------------------------------------------- connectors

    def connector_class(self, props: Mapping[str, str]) -> type[Connector]:
        return self.plugins.resolve_connector(props)

    def is_sink(self, props: Mapping[str, str]) -> bool:
        return issubclass(self.connector_class(props), SinkConnector)

    def connector_type(self, props: Mapping[str, str]) -> str:
        try:
            cls = self.connector_class(props)
        except Exception:
            return "unknown"
        if issubclass(cls, SourceConnector):
            return "source"
        return "sink" if issubclass(cls, SinkConnector) else "unknown"

    def start_connector(self, name: str, props: Mapping[str, str], *, paused: bool) -> bool:
        """Start (or restart) a connector; False, with FAILED reported, when it fails."""
        self.stop_connector(name)
        try:
            resolved = self.providers.resolve(props)
            cls = self.connector_class(resolved)
            connector = cls()
            connector.initialize(_ConnectorContext(self, name))
            connector.start(resolved)
        except Exception as exc:
            self._fail(name, exc)
            return False
        with self._lock:
            self.connectors[name] = connector
        self._set_connector_state(name, State.PAUSED if paused else State.RUNNING)
        return True

    def _set_connector_state(self, name: str, state: State, trace: str | None = None) -> None:
        self.connector_states[name] = state
        self.on_status(name, None, state, trace)

    def _fail(self, name: str, exc: BaseException) -> None:
        _log.error("connector %s failed", name, exc_info=exc)
        self._set_connector_state(name, State.FAILED, "".join(traceback.format_exception(exc)))

    def fail_connector(self, name: str, error: BaseException) -> None:
        self._fail(name, error)
        with self._lock:
            connector = self.connectors.pop(name, None)
        if connector is not None:
            with contextlib.suppress(Exception):
                connector.stop()

    def task_configs(self, name: str, props: Mapping[str, str]) -> list[dict[str, str]]:
        """Ask the running connector for its task configs (tasks.max enforced)."""
        connector = self.connectors.get(name)
        if connector is None:
            return []
        max_tasks = int(props.get("tasks.max", 1))
        configs = [dict(c) for c in connector.task_configs(max_tasks)]
        enforce = str(props.get("tasks.max.enforce", "true")).lower() != "false"
        if enforce and len(configs) > max_tasks:
            raise ConfigError(
                "tasks.max",
                max_tasks,
                f"connector {name} generated {len(configs)} task configs, more than tasks.max",
            )
        task_class = connector.task_class()
        for config in configs:
            config.setdefault("task.class", f"{task_class.__module__}.{task_class.__qualname__}")
        return configs

    def stop_connector(self, name: str) -> None:
        with self._lock:
            connector = self.connectors.pop(name, None)
        if connector is None:
            return
        try:
            connector.stop()
        except Exception:
            _log.exception("connector %s failed to stop", name)

    def pause_connector(self, name: str) -> None:
        if name in self.connectors:
            self._set_connector_state(name, State.PAUSED)
        for (conn, _), task in list(self.tasks.items()):
            if conn == name:
                task.pause()

    def resume_connector(self, name: str) -> None:
        if name in self.connectors:
            self._set_connector_state(name, State.RUNNING)
        for (conn, _), task in list(self.tasks.items()):
            if conn == name:
                task.resume()

    # ------------------------------------------------------------------ tasks

    def start_task(
        self,
        name: str,
        index: int,
        connector_props: Mapping[str, str],
        task_props: Mapping[str, str],
        *,
        paused: bool,
    ) -> None:
        self.stop_tasks([(name, index)])
        try:
            cprops = self.providers.resolve(connector_props)
            tprops = self.providers.resolve(task_props)
            if self._isolated():
                self.connector_class(cprops)  # an unknown class fails here, not in a child
                task: WorkerTask | ProcessTask = self._process_task(
                    name, index, cprops, tprops, paused
                )
            else:
                task = self._build_task(name, index, cprops, tprops, paused)
        except Exception as exc:
            _log.error("task %s-%d failed to start", name, index, exc_info=exc)
            self.on_status(name, index, State.FAILED, "".join(traceback.format_exception(exc)))
            return
        if isinstance(task, WorkerTask):
            task.lease = self.lease
        with self._lock:
            self.tasks[(name, index)] = task
        task.start()

    def _isolated(self) -> bool:
        return self.config.get("task.isolation", "thread") == "process" and isinstance(
            self.log, FileLog
        )

    def _process_task(
        self,
        name: str,
        index: int,
        cprops: Mapping[str, str],
        tprops: Mapping[str, str],
        paused: bool,
    ) -> ProcessTask:
        assert isinstance(self.log, FileLog)

        def on_topic(topic: str) -> None:
            if self.on_topic is not None:
                self.on_topic(name, topic, index)

        spec = {
            "connector": name,
            "task": index,
            "connector_props": dict(cprops),
            "task_props": dict(tprops),
            "paused": paused,
            "log_dir": str(self.log.directory),
            "worker_id": self.worker_id,
            "worker_config": {
                k: v for k, v in self.config.items() if isinstance(v, (str, int, float, bool))
            },
            "log_level": logging.getLogger().getEffectiveLevel(),
            "lease": None if self.lease is None else self.lease.deadline,
            "generation": None if self.lease is None else self.lease.generation,
        }
        return ProcessTask(spec, on_status=self.on_status, on_topic=on_topic)

    def _build_task(
        self,
        name: str,
        index: int,
        cprops: Mapping[str, str],
        tprops: Mapping[str, str],
        paused: bool,
    ) -> WorkerTask:
        """The worker-side task for task `index` of connector `name`, not started.

        Steps: (1) resolve the connector and its task class and parse the common
        connector config; (2) build the record stages (converters, transforms, error
        policy) from it; (3) wrap the plugin as a sink or a source task, with the
        checks only that kind has (topics, dead-letter queue). A config error raised
        here names the key."""
        # Step 1
        sink, parsed, plugin = self._task_plugin(name, cprops, tprops)
        # Step 2
        parts = _TaskParts(
            name,
            index,
            plugin,
            cprops,
            tprops,
            parsed,
            paused,
            key_converter=self._converter("key", cprops, is_key=True),
            value_converter=self._converter("value", cprops, is_key=False),
            header_converter=self._header_converter(cprops),
            transform=self._transform_chain(cprops),
            policy=ErrorPolicy.from_parsed(parsed),
            # Errors name each converter by the class its config gave, as Kafka's
            # headers do.
            plugin_names={
                stage: self._plugin_settings(prefix, cprops)[0].strip()
                for stage, prefix in (
                    (Stage.KEY_CONVERTER, "key.converter"),
                    (Stage.VALUE_CONVERTER, "value.converter"),
                    (Stage.HEADER_CONVERTER, "header.converter"),
                )
            },
        )
        # Step 3
        return self._sink_task(parts) if sink else self._source_task(parts)

    def _task_plugin(
        self, name: str, cprops: Mapping[str, str], tprops: Mapping[str, str]
    ) -> tuple[bool, Mapping[str, Any], Task]:
        """Step 1 of `_build_task`: whether the connector is a sink, its parsed common
        config, and a new instance of its task class (`task.class` when the task config
        names one, else the connector's own)."""
        connector_cls = self.connector_class(cprops)
        sink = issubclass(connector_cls, SinkConnector)
        parsed = (SINK_CONNECTOR_CONFIG if sink else SOURCE_CONNECTOR_CONFIG).parse(
            {"name": name, **cprops}
        )
        task_class_name = tprops.get("task.class")
        if task_class_name:
            task_cls = self.plugins.resolve_task(task_class_name)
        else:
            connector = connector_cls()
            task_cls = connector.task_class()
        return sink, parsed, task_cls()

    def _task_callbacks(
        self, name: str, index: int
    ) -> tuple[Callable[[str, int, State, str | None], None], Callable[[str], None]]:
        """A task's status and new-topic callbacks; they look up the worker's own
        callbacks when called, so a herder may set them after the task is built."""

        def on_status(conn: str, task: int, state: State, trace: str | None) -> None:
            self.on_status(conn, task, state, trace)

        def on_topic(topic: str) -> None:
            if self.on_topic is not None:
                self.on_topic(name, topic, index)

        return on_status, on_topic

    def _sink_task(self, parts: _TaskParts) -> WorkerSinkTask:
        """Step 3 of `_build_task` for a sink: its dead-letter queue and the topics it
        consumes (`topics` or `topics.regex`, exactly one)."""
        name, index, plugin, policy = parts.name, parts.index, parts.plugin, parts.policy
        if not isinstance(plugin, SinkTask):
            raise ConfigError(
                "connector.class",
                parts.cprops.get("connector.class"),
                "a sink connector's task class must be a SinkTask",
            )
        dlq = None
        if policy.dlq_topic:
            dlq = DeadLetterQueueReporter(
                self.log,
                policy.dlq_topic,
                connector=name,
                task=index,
                context_headers=policy.dlq_context_headers,
            )
        errors = RetryWithTolerance(
            policy,
            connector=name,
            task=index,
            reporters=[dlq] if dlq else [],
            plugin_names=parts.plugin_names,
        )
        topics = parts.parsed["topics"]
        regex = parts.parsed["topics.regex"]
        if not topics and not regex:
            raise ConfigError("topics", "", "Must configure one of topics or topics.regex")
        if topics and regex:
            raise ConfigError(
                "topics.regex", regex, "topics and topics.regex are mutually exclusive"
            )
        on_status, on_topic = self._task_callbacks(name, index)
        return WorkerSinkTask(
            name,
            index,
            plugin,
            parts.tprops,
            log=self.log,
            topics=topics,
            topics_regex=regex,
            key_converter=parts.key_converter,
            value_converter=parts.value_converter,
            header_converter=parts.header_converter,
            transform=parts.transform,
            errors=errors,
            dlq=dlq,
            offset_flush_interval_ms=self._offset_flush_interval_ms(),
            on_status=on_status,
            paused=parts.paused,
            on_topic=on_topic,
            isolation_level=sink_isolation_level(self.config, parts.cprops),
        )

    def _source_task(self, parts: _TaskParts) -> WorkerSourceTask:
        """Step 3 of `_build_task` for a source: its offsets and the topics it may
        create (`topic.creation.*`)."""
        name, index, plugin = parts.name, parts.index, parts.plugin
        if not isinstance(plugin, SourceTask):
            raise ConfigError(
                "connector.class",
                parts.cprops.get("connector.class"),
                "a source connector's task class must be a SourceTask",
            )
        errors = RetryWithTolerance(
            parts.policy, connector=name, task=index, plugin_names=parts.plugin_names
        )
        on_status, on_topic = self._task_callbacks(name, index)
        return WorkerSourceTask(
            name,
            index,
            plugin,
            parts.tprops,
            log=self.log,
            offsets=self.offsets,
            key_converter=parts.key_converter,
            value_converter=parts.value_converter,
            header_converter=parts.header_converter,
            transform=parts.transform,
            errors=errors,
            create_topic=self._topic_creator(parts.cprops),
            offset_flush_interval_ms=self._offset_flush_interval_ms(),
            on_status=on_status,
            paused=parts.paused,
            on_topic=on_topic,
            transactions=task_transactions(
                self.log,
                self.config,
                self.worker_id,
                f"{name}-{index}",
                parts.parsed,
                parts.cprops,
                self.offsets,
            ),
            delivery_timeout_ms=source_delivery_timeout_ms(self.config, parts.cprops),
        )

    def _offset_flush_interval_ms(self) -> int:
        return int(self.config.get("offset.flush.interval.ms", 60_000))

    def stop_tasks(self, ids: list[tuple[str, int]]) -> None:
        """Stop tasks, waiting up to task.shutdown.graceful.timeout.ms for all of them."""
        with self._lock:
            tasks = [self.tasks.pop(i) for i in ids if i in self.tasks]
        for task in tasks:
            task.stop()
        timeout = int(self.config.get("task.shutdown.graceful.timeout.ms", 5000)) / 1000
        # One deadline for all, as Kafka's (a stop in an outage paid it once per task).
        deadline = time.monotonic() + timeout
        for task in tasks:
            if not task.await_stop(max(0.0, deadline - time.monotonic())):
                _log.error("task %s did not stop within %.1fs; abandoning it", task.name, timeout)

    def connector_tasks(self, name: str) -> list[tuple[str, int]]:
        with self._lock:
            return sorted(i for i in self.tasks if i[0] == name)

    def stop(self) -> None:
        self.stop_tasks(list(self.tasks))
        for name in list(self.connectors):
            self.stop_connector(name)
        if local_log()[0] is self.log:
            set_local_log(None)  # stops an embedded registry over our log

    # ------------------------------------------------------- building blocks

    def _plugin_settings(self, prefix: str, props: Mapping[str, str]) -> tuple[str, dict]:
        """(class name, settings): the connector's own when it names a class, else
        the worker's; settings are the keys under `<prefix>.` with it removed."""
        source: Mapping[str, Any] = props if props.get(prefix) else self.config
        class_name = str(source.get(prefix))
        start = len(prefix) + 1
        settings = {k[start:]: v for k, v in source.items() if k.startswith(prefix + ".")}
        return class_name, settings

    def _converter(self, kind: str, props: Mapping[str, str], *, is_key: bool) -> Converter:
        prefix = f"{kind}.converter"
        class_name, settings = self._plugin_settings(prefix, props)
        cls = self.plugins.resolve(PluginKind.CONVERTER, class_name, key=prefix)
        converter = cls()
        converter.configure(settings, is_key)
        return converter

    def _header_converter(self, props: Mapping[str, str]) -> HeaderConverter:
        class_name, settings = self._plugin_settings("header.converter", props)
        cls = self.plugins.resolve(PluginKind.HEADER_CONVERTER, class_name, key="header.converter")
        converter = cls()
        if isinstance(converter, HeaderConverter):
            converter.configure(settings)
        else:  # a value converter used for headers (e.g. JsonConverter), as Kafka allows
            converter.configure(settings, False)
            converter = _ConverterAsHeaderConverter(converter)
        return converter

    def _transform_chain(self, props: Mapping[str, str]) -> Callable | None:
        if not str(props.get("transforms", "")).strip():
            return None
        from connect.transforms.chain import TransformChain

        return TransformChain.from_config(props, self.plugins.resolve)  # callable: apply()

    def _topic_creator(self, props: Mapping[str, str]) -> Callable[[str], None]:
        """Create a source topic on first write: the first `topic.creation.groups`
        group whose include/exclude patterns match, else `topic.creation.default.*`,
        else the worker's `num.partitions`."""
        enabled = bool(self.config.get("topic.creation.enable", True))
        groups = [
            g.strip() for g in str(props.get("topic.creation.groups", "")).split(",") if g.strip()
        ]
        default_partitions = int(self.config.get("num.partitions", 1))

        def settings_of(group: str) -> tuple[int, dict[str, str]]:
            prefix = f"topic.creation.{group}."
            partitions = int(props.get(prefix + "partitions", -1) or -1)
            configs = {
                k[len(prefix) :]: v
                for k, v in props.items()
                if k.startswith(prefix) and k[len(prefix) :] in _TOPIC_KEYS
            }
            return (partitions if partitions > 0 else default_partitions), configs

        def matches(group: str, topic: str) -> bool:
            def patterns(key: str) -> list[str]:
                raw = props.get(f"topic.creation.{group}.{key}", "")
                return [p.strip() for p in str(raw).split(",") if p.strip()]

            included = any(re.fullmatch(p, topic) for p in patterns("include"))
            excluded = any(re.fullmatch(p, topic) for p in patterns("exclude"))
            return included and not excluded

        def create(topic: str) -> None:
            if topic in self.log.list_topics(include_internal=True):
                return
            partitions, configs = default_partitions, {}
            if enabled and "topic.creation.default.partitions" in props:
                partitions, configs = settings_of("default")
                for group in groups:
                    if matches(group, topic):
                        partitions, configs = settings_of(group)
                        break
            with contextlib.suppress(TopicExistsError):
                self.log.create_topic(topic, partitions, config=configs)

        return create


class _ConverterAsHeaderConverter(HeaderConverter):
    def __init__(self, converter: Converter) -> None:
        self._converter = converter

    def configure(self, configs: Mapping[str, Any]) -> None:
        self._converter.configure(configs, False)

    def from_connect_header(self, topic: str, key: str, schema: Any, value: Any) -> bytes | None:
        return self._converter.from_connect_data(topic, schema, value)

    def to_connect_header(self, topic: str, key: str, data: bytes | None) -> Any:
        return self._converter.to_connect_data(topic, data)

    def close(self) -> None:
        self._converter.close()
