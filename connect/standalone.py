"""A standalone worker process: the log, the herder, the REST server, and a clean stop.

Start-up (numbered as in `start`):
1. parse the worker config (a bad key fails here, naming it);
2. claim the embedded log's directory (connect.worker.ownership): a standalone worker
   owns it, so a second worker on it is refused here, naming the running one, before
   it reads or writes anything; take the REST listener's port (one in use fails here,
   naming the address: `127.0.0.1:8083 is in use`); then open the log — a Kafka cluster when
   `bootstrap.servers` is set (unless Kafka's standalone `offset.storage.file.filename`
   keeps the log on this machine: connect.config_files), else the embedded log at
   `log.dir` — and with `schema.registry.enable` serve the schema registry over it
   (before the connectors, whose converters may use it);
3. start the herder: it replays configs, offsets and statuses and starts connectors;
4. apply the connector configs given on the command line (create or update);
5. serve the REST API.
A clean stop (SIGTERM, SIGINT) stops every task with a final offset commit, so a clean
restart neither loses nor repeats a record.
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from connect.api import ConfigError
from connect.config_files import KAFKA_WORKER_NOTES, kafka_worker_notes, read_config_file
from connect.herder.base import LogHerder
from connect.herder.standalone import StandaloneHerder
from connect.worker.config import WORKER_CONFIG, WORKER_PASS_THROUGH, unknown_key_warnings
from connect.worker.ownership import INTERNAL_TOPIC_KEYS, LogDirClaim
from log import FileLog, Log

__all__ = ["StandaloneWorker", "load_connector_config", "load_worker_config", "open_log"]

_log = logging.getLogger("connect")


def load_worker_config(path: str | Path, *, standalone: bool = True) -> dict[str, Any]:
    """The worker config file's keys (JSON or `.properties`, connect.config_files),
    parsed (typed) over the raw ones, so that pass-through keys like
    `value.converter.schemas.enable` stay available. Kafka worker keys that do something
    else here are noted in the log, one line each (`kafka_worker_notes`; `standalone`
    says whether Kafka's standalone state file keeps the log on this machine)."""
    raw = read_config_file(path, "worker config")
    raw = {
        str(k): v
        if isinstance(v, str)
        else json.dumps(v)
        if isinstance(v, (dict, list))
        else str(v).lower()
        if isinstance(v, bool)
        else str(v)
        for k, v in raw.items()
    }
    parsed = WORKER_CONFIG.parse(raw)
    updates, notes = kafka_worker_notes(raw, standalone=standalone)
    parsed.update(updates)
    for line in notes:
        _log.info("worker config %s: %s", path, line)
    known = {*WORKER_CONFIG.names(), *KAFKA_WORKER_NOTES, "offset.storage.file.filename"}
    for line in unknown_key_warnings(
        raw, known, WORKER_PASS_THROUGH, where=f"worker config {path}"
    ):
        _log.warning("%s", line)
    if not parsed["log.dir"] and not parsed["bootstrap.servers"]:
        raise ConfigError(
            "log.dir",
            None,
            "a worker needs log.dir (the embedded log's directory) or bootstrap.servers",
        )
    return {**raw, **parsed}


def load_connector_config(path: str | Path) -> tuple[str, dict[str, str]]:
    """(name, config) from a flat map (JSON or `.properties`) or Kafka's
    {"name": …, "config": {…}} JSON shape."""
    data = read_config_file(path, "connector config")
    if isinstance(data.get("config"), dict):
        config = dict(data["config"])
        name = data.get("name") or config.get("name")
    else:
        config = dict(data)
        name = config.get("name")
    if not name or not isinstance(name, str):
        raise ConfigError("name", None, f"connector config {path} has no name")
    config["name"] = name
    return name, {
        str(k): v if isinstance(v, str) else str(v).lower() if isinstance(v, bool) else str(v)
        for k, v in config.items()
    }


def open_log(config: Mapping[str, Any]) -> Log:
    """The worker's log: KafkaLog on the cluster named by `bootstrap.servers` (librdkafka
    settings from `kafka.`-prefixed keys; for sink tasks' group consumers, from
    `consumer.`-prefixed keys as in Kafka Connect), else the embedded FileLog at
    `log.dir`."""
    servers = config.get("bootstrap.servers")
    if servers:
        try:
            from log import KafkaLog
        except ImportError as exc:
            raise ConfigError(
                "bootstrap.servers",
                servers,
                f"the Kafka log needs confluent-kafka (pip install tributary[kafka]): {exc}",
            ) from None
        extra = {k[len("kafka.") :]: v for k, v in config.items() if k.startswith("kafka.")}
        member = {
            k[len("consumer.") :]: v for k, v in config.items() if k.startswith("consumer.")
        }
        return KafkaLog(
            servers, client_config=extra, member_config=member, timeout_s=_request_timeout_s(extra)
        )
    return FileLog(config["log.dir"])


def _request_timeout_s(extra: Mapping[str, Any]) -> float:
    """The log's request timeout: `kafka.request.timeout.ms` where the worker config
    sets it (librdkafka's producers take the same key), else 10 s. Why configurable:
    every request to a broker that is away waits it once (the first REST read of an
    outage, a sink task's fetch) before the runtime falls back or backs off."""
    given = extra.get("request.timeout.ms")
    if given is None:
        return 10.0
    try:
        ms = int(str(given))
    except ValueError:
        raise ConfigError(
            "kafka.request.timeout.ms", given, "must be a whole number of milliseconds"
        ) from None
    if ms < 1000:
        raise ConfigError("kafka.request.timeout.ms", given, "must be at least 1000")
    return ms / 1000


class StandaloneWorker:
    """Everything one `connect standalone` process runs (see the module docstring)."""

    #: How this worker claims an embedded log directory (a distributed worker shares it).
    claim_mode = "standalone"

    def __init__(
        self,
        worker_config: Mapping[str, Any],
        connector_configs: Sequence[tuple[str, dict[str, str]]] = (),
    ) -> None:
        self.config = dict(worker_config)
        self.connector_configs = list(connector_configs)
        self.log: Log | None = None
        self.herder: LogHerder | None = None
        self.rest: Any = None
        self.registry: Any = None
        self.claim: LogDirClaim | None = None
        self._socket: socket.socket | None = None  # the REST listener, bound in Step 1

    def start(self) -> None:
        # Step 1 (the config was parsed by load_worker_config)
        from connect.rest.listeners import bind_listener

        host, port = self._listener()
        # Step 2
        if not self.config.get("bootstrap.servers"):
            claim = LogDirClaim(self.config["log.dir"], mode=self.claim_mode)
            topics = {
                str(self.config[key]): key for key in INTERNAL_TOPIC_KEYS if self.config.get(key)
            }
            claim.acquire(f"http://{host or '127.0.0.1'}:{port}", internal_topics=topics)
            self.claim = claim
        # Why the port is taken now: a worker whose port is in use must fail before it
        # opens the log, joins a cluster or starts a task, naming the address.
        self._socket = bind_listener(host, port)
        port = self._socket.getsockname()[1]
        self.log = open_log(self.config)
        if self.config.get("schema.registry.enable"):
            from connect.registry.rest.service import RegistryService

            self.registry = RegistryService(self.config, self.log)
            self.registry.start()
        # Step 3
        self.herder = self._herder(host, port)
        self.herder.start()
        # Step 4
        for name, config in self.connector_configs:
            self.herder.put_connector_config(name, config, allow_replace=True)
        # Step 5
        self._start_rest(host, port)

    def _herder(self, host: str, port: int) -> LogHerder:
        """The herder this process runs (a distributed worker runs another)."""
        worker_id = self.config.get("worker.id") or f"{host}:{port}"
        return StandaloneHerder(self.config, log=self.log, worker_id=worker_id)

    def _listener(self) -> tuple[str, int]:
        from connect.rest import listener_from_config

        return listener_from_config(self.config)

    def _start_rest(self, host: str, port: int) -> None:
        from connect.rest import BasicAuth, RestServer, TopicTracking

        users = self.config.get("rest.basic.auth.users.file")
        auth = BasicAuth.from_file(users) if users else None
        tracking = TopicTracking(
            enabled=bool(self.config.get("topic.tracking.enable", True)),
            allow_reset=bool(self.config.get("topic.tracking.allow.reset", True)),
        )
        self.rest = RestServer(
            self.herder,
            host=host,
            port=port,
            auth=auth,
            topic_tracking=tracking,
            # The console's Schemas page reads the embedded registry (connect.rest.ui).
            registry=self.registry.registry if self.registry is not None else None,
        )
        self.rest.start(self._socket)
        self._socket = None  # the server owns it now
        if self.claim is not None:
            self.claim.note_url(self.rest.url)  # the real port when the config said 0
        _log.info("REST API listening on %s", self.rest.url)

    def stop(self) -> None:
        try:
            if self._socket is not None:  # start failed before serving on it
                self._socket.close()
                self._socket = None
            if self.rest is not None:
                self.rest.stop()
            if self.herder is not None:
                self.herder.stop()
            if self.registry is not None:
                self.registry.stop()
            if self.log is not None:
                self.log.close()
        finally:
            if self.claim is not None:  # the directory is free only once all is closed
                self.claim.release()
                self.claim = None
