"""A distributed worker process: one of a cluster of workers sharing one log.

Start-up is the standalone worker's (connect.standalone) with the distributed herder in
place of the standalone one, and no connector files: connectors are created through the
REST API of any worker. Every worker of a cluster has the same `group.id` and internal
topics; its id (`worker.id`, default the advertised host:port) must be unique in the
cluster. A clean stop (SIGTERM, SIGINT) stops its tasks with final offset commits and
leaves the group expecting to return, so a rolling restart moves nothing: its work
waits for it up to `scheduled.rebalance.max.delay.ms`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api import ConfigError
from connect.herder.distributed import DistributedHerder
from connect.standalone import StandaloneWorker

__all__ = ["DistributedWorker", "advertised_url"]


def advertised_url(config: Mapping[str, Any], host: str, port: int) -> str:
    """The URL other workers and clients reach this worker at (Kafka's
    `rest.advertised.*` keys, else the listener's address)."""
    scheme = config.get("rest.advertised.listener") or "http"
    advertised_host = config.get("rest.advertised.host.name") or host or "127.0.0.1"
    advertised_port = config.get("rest.advertised.port") or port
    return f"{scheme}://{advertised_host}:{advertised_port}"


class DistributedWorker(StandaloneWorker):
    """Everything one `connect distributed` process runs."""

    claim_mode = "distributed"  # workers of a cluster share one log directory

    def __init__(self, worker_config: Mapping[str, Any]) -> None:
        super().__init__(worker_config)
        if not self.config.get("group.id"):
            raise ConfigError(
                "group.id", None, "a distributed worker needs group.id (its cluster's id)"
            )

    def start(self) -> None:
        # Why: a sink task's consumer on a dead worker holds its partitions in Kafka's
        # group until the consumer's own session times out (45 s by default), beyond
        # the cluster's failover budget; by default it times out with the worker.
        session_ms = int(self.config["session.timeout.ms"])
        self.config.setdefault("consumer.session.timeout.ms", session_ms)
        self.config.setdefault(
            "consumer.heartbeat.interval.ms",
            max(1, min(int(self.config["heartbeat.interval.ms"]), session_ms // 3)),
        )
        super().start()  # no connector files: connectors come through the REST API

    def _herder(self, host: str, port: int) -> DistributedHerder:
        url = advertised_url(self.config, host, port)
        worker_id = self.config.get("worker.id") or url.split("://", 1)[1]
        assert self.log is not None
        return DistributedHerder(self.config, log=self.log, worker_id=worker_id, url=url)
