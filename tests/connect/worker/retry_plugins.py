"""A sink for the redelivery tests, named by dotted path (also in task processes).

Everything its tasks do goes to a trace file, one line per event, so a test reads
what happened whether the task ran as a thread, in a process of its own, or was
killed:

    retry <time> <records>            put()/put_batches() raised RetriableError
    put <topic> <partition> <offset> <way>  one line per record accepted; the way is
                                      `record` (put) or `batch` (put_batches)
    pre_commit <topic>:<p>=<offset> … what pre_commit() was handed
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

from connect.api import (
    ConfigDef,
    ConfigType,
    Importance,
    RetriableError,
    SinkConnector,
    SinkRecord,
    SinkTask,
    TopicPartition,
)

CONFIG = (
    ConfigDef()
    .define("trace.file", ConfigType.STRING, None, None, Importance.HIGH, "Where events go.")
    .define(
        "fail.file",
        ConfigType.STRING,
        "",
        None,
        Importance.HIGH,
        "While this file exists, a put of any record raises RetriableError.",
    )
    .define(
        "fail.batches",
        ConfigType.BOOLEAN,
        True,
        None,
        Importance.LOW,
        "Whether put_batches() fails too while the fail file exists (else only put()).",
    )
    .define(
        "timeout.ms",
        ConfigType.INT,
        0,
        None,
        Importance.LOW,
        "context.timeout() to set before each RetriableError (0: none).",
    )
    .define(
        "pre.commit.skew",
        ConfigType.INT,
        0,
        None,
        Importance.LOW,
        "Added to every offset pre_commit() returns (a task that claims too much).",
    )
)


class RetryingSink(SinkConnector):
    """Tasks that take records (`put`)."""

    def config(self) -> ConfigDef:
        return CONFIG

    def start(self, props: Mapping[str, str]) -> None:
        CONFIG.parse(props)
        self.props = dict(props)

    def task_class(self) -> type:
        return RetryingSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props) for _ in range(max_tasks)]

    def stop(self) -> None:
        return None


class RetryingBatchSink(RetryingSink):
    """Tasks that take Arrow batches (`put_batches`) as well."""

    def task_class(self) -> type:
        return RetryingBatchSinkTask


class RetryingSinkTask(SinkTask):
    def start(self, props: Mapping[str, str]) -> None:
        parsed = CONFIG.parse(props)
        self.fail_file = parsed["fail.file"]
        self.fail_batches = parsed["fail.batches"]
        self.timeout_ms = parsed["timeout.ms"]
        self.skew = parsed["pre.commit.skew"]
        self.trace = open(parsed["trace.file"], "a")  # noqa: SIM115 (closed in stop)

    def _write(self, text: str) -> None:
        self.trace.write(text)
        self.trace.flush()  # one write per event: whole lines even after a SIGKILL

    def _refuse(self, count: int) -> None:
        if count and self.fail_file and os.path.exists(self.fail_file):
            if self.timeout_ms:
                self.context.timeout(self.timeout_ms)
            self._write(f"retry {time.time():.6f} {count}\n")
            raise RetriableError("the store is busy")

    def put(self, records: Sequence[SinkRecord]) -> None:
        self._refuse(len(records))
        if records:
            self._write(
                "".join(
                    f"put {r.topic} {r.kafka_partition} {r.kafka_offset} record\n" for r in records
                )
            )

    def pre_commit(self, offsets: Mapping[TopicPartition, int]) -> Mapping[TopicPartition, int]:
        listed = " ".join(f"{tp.topic}:{tp.partition}={o}" for tp, o in sorted(offsets.items()))
        self._write(f"pre_commit {listed}\n")
        return {tp: o + self.skew for tp, o in offsets.items()}

    def stop(self) -> None:
        if hasattr(self, "trace"):
            self.trace.close()


class RetryingBatchSinkTask(RetryingSinkTask):
    def put_batches(self, batches: Sequence[Any]) -> Any:
        if self.fail_batches:
            self._refuse(sum(b.records_in for b in batches))
        self._write(
            "".join(
                f"put {b.topic} {b.partition} {o} batch\n"
                for b in batches
                for o in sorted([*b.offsets.tolist(), *b.tombstones.tolist()])
            )
        )
        return None


class Trace:
    """A trace file as read by the tests."""

    def __init__(self, path: os.PathLike[str] | str) -> None:
        self.path = path

    def lines(self) -> list[list[str]]:
        try:
            with open(self.path) as f:
                return [line.split() for line in f if line.endswith("\n")]
        except FileNotFoundError:
            return []

    def retries(self) -> list[float]:
        """When each failing put happened (seconds since the epoch)."""
        return [float(w[1]) for w in self.lines() if w[0] == "retry"]

    def delivered(self) -> list[tuple[str, int, int]]:
        """(topic, partition, offset) of every record accepted, in order, repeats kept."""
        return [(w[1], int(w[2]), int(w[3])) for w in self.lines() if w[0] == "put"]

    def ways(self) -> set[str]:
        """How records were accepted: `record`, `batch`."""
        return {w[4] for w in self.lines() if w[0] == "put"}

    def pre_commits(self) -> int:
        return sum(1 for w in self.lines() if w[0] == "pre_commit")
