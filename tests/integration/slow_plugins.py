"""A connector for the cluster-view tests: one whose start() takes `start.delay.ms`,
so its first status is written that long after its config is in the log."""

from __future__ import annotations

import threading
from collections.abc import Mapping

from connect.api import ConfigDef, ConfigType, Importance, SourceConnector, SourceRecord, SourceTask


class SlowStartSource(SourceConnector):
    def config(self) -> ConfigDef:
        return ConfigDef().define(
            "start.delay.ms", ConfigType.LONG, 0, None, Importance.LOW, "How long start takes."
        )

    def start(self, props: Mapping[str, str]) -> None:
        threading.Event().wait(int(props.get("start.delay.ms", 0)) / 1000)

    def task_class(self) -> type[SourceTask]:
        return IdleTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{} for _ in range(max_tasks)]

    def stop(self) -> None:
        return None


class IdleTask(SourceTask):
    def start(self, props: Mapping[str, str]) -> None:
        self._stopped = threading.Event()

    def poll(self) -> list[SourceRecord] | None:
        self._stopped.wait(0.1)
        return None

    def stop(self) -> None:
        self._stopped.set()
