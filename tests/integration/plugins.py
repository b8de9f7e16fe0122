"""Connectors for the end-to-end tests, loaded by dotted path in worker processes."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping

from connect.api import (
    STRING_SCHEMA,
    ConfigDef,
    ConfigType,
    Importance,
    SourceConnector,
    SourceRecord,
    SourceTask,
)

CONFIG = (
    ConfigDef()
    .define("topic", ConfigType.STRING, "flaky", None, Importance.HIGH, "Topic to write.")
    .define(
        "fail.file",
        ConfigType.STRING,
        None,
        None,
        Importance.HIGH,
        "While this file exists, poll() fails; once it is gone, the task counts up.",
    )
)


class FlakySource(SourceConnector):
    """A source that fails while a flag file exists: a failure the test can cure, so
    a restart can be seen to work."""

    def config(self) -> ConfigDef:
        return CONFIG

    def start(self, props: Mapping[str, str]) -> None:
        CONFIG.parse(props)
        self.props = dict(props)

    def task_class(self) -> type:
        return FlakySourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props)]

    def stop(self) -> None:
        return None


class FlakySourceTask(SourceTask):
    def start(self, props: Mapping[str, str]) -> None:
        parsed = CONFIG.parse(props)
        self.topic, self.fail_file = parsed["topic"], parsed["fail.file"]
        stored = self.context.offset_storage_reader.offset({"flaky": "x"})
        self.n = int(stored["n"]) if stored else 0
        self._idle = threading.Event()

    def poll(self) -> list[SourceRecord] | None:
        if self.fail_file and os.path.exists(self.fail_file):
            raise RuntimeError(f"failing while {self.fail_file} exists")
        if self.n >= 100:
            self._idle.wait(0.05)  # nothing more to send: do not spin
            return None
        self.n += 1
        return [
            SourceRecord(
                topic=self.topic,
                value_schema=STRING_SCHEMA,
                value=f"n={self.n}",
                source_partition={"flaky": "x"},
                source_offset={"n": self.n},
            )
        ]

    def stop(self) -> None:
        if hasattr(self, "_idle"):
            self._idle.set()
