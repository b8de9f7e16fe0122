"""A source whose task draws its own transaction boundaries
(`transaction.boundary=connector`), named by dotted path (also in task processes).

It counts 0, 1, … `count - 1` in polls of `batch` records, with the source offset
{"n": n}; through its TransactionContext it asks to commit at every record n with
(n + 1) % `commit.every` == 0, to abort at every record with (n + 1) % `abort.every`
== 0 (abort wins), and after its last poll to commit (`end=commit`) or abort
(`end=abort`) the rest (the requests without a record).
Each record `commit_record` acknowledges is appended to `acks.file`. `expected()` is
what a read_committed reader must then see."""

from __future__ import annotations

import time
from collections.abc import Mapping

from connect.api import (
    INT64_SCHEMA,
    ConfigDef,
    ConfigType,
    ConnectorTransactionBoundaries,
    ExactlyOnceSupport,
    Importance,
    RecordMetadata,
    SourceConnector,
    SourceRecord,
    SourceTask,
)

CONFIG = (
    ConfigDef()
    .define("topic", ConfigType.STRING, "bounded", None, Importance.HIGH, "Topic to write.")
    .define("count", ConfigType.INT, 200, None, Importance.HIGH, "How many records in all.")
    .define("batch", ConfigType.INT, 10, None, Importance.LOW, "Records per poll().")
    .define("commit.every", ConfigType.INT, 7, None, Importance.LOW, "See the docstring.")
    .define("abort.every", ConfigType.INT, 25, None, Importance.LOW, "See the docstring.")
    .define("acks.file", ConfigType.STRING, "", None, Importance.LOW, "See the docstring.")
    .define("end", ConfigType.STRING, "commit", None, Importance.LOW, "See the docstring.")
)
PARTITION = {"counter": "bounded"}


def expected(count: int, commit_every: int, abort_every: int, end: str = "commit") -> list[int]:
    """The numbers of the committed transactions, in order."""
    committed: list[int] = []
    open_: list[int] = []
    for n in range(count):
        open_.append(n)
        if (n + 1) % abort_every == 0:
            open_ = []
        elif (n + 1) % commit_every == 0:
            committed += open_
            open_ = []
    return committed + open_ if end == "commit" else committed  # the last poll's request


class BoundarySource(SourceConnector):
    def config(self) -> ConfigDef:
        return CONFIG

    def start(self, props: Mapping[str, str]) -> None:
        self.props = dict(props)

    def task_class(self) -> type:
        return BoundarySourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props)]

    def stop(self) -> None:
        return None

    def exactly_once_support(self, props: Mapping[str, str]) -> ExactlyOnceSupport | None:
        return ExactlyOnceSupport.SUPPORTED

    def can_define_transaction_boundaries(
        self, props: Mapping[str, str]
    ) -> ConnectorTransactionBoundaries:
        return ConnectorTransactionBoundaries.SUPPORTED


class BoundarySourceTask(SourceTask):
    def start(self, props: Mapping[str, str]) -> None:
        parsed = CONFIG.parse(props)
        self.topic = parsed["topic"]
        self.count = parsed["count"]
        self.batch = parsed["batch"]
        self.commit_every = parsed["commit.every"]
        self.abort_every = parsed["abort.every"]
        self.acks = parsed["acks.file"]
        self.end = parsed["end"]
        offset = self.context.offset_storage_reader.offset(PARTITION)
        self.n = 0 if offset is None else int(offset["n"]) + 1
        self.transactions = self.context.transaction_context()
        assert self.transactions is not None, "transaction.boundary=connector gives one"

    def poll(self) -> list[SourceRecord] | None:
        if self.n >= self.count:
            time.sleep(0.05)
            return None
        out = []
        for n in range(self.n, min(self.count, self.n + self.batch)):
            record = SourceRecord(
                topic=self.topic,
                value_schema=INT64_SCHEMA,
                value=n,
                source_partition=PARTITION,
                source_offset={"n": n},
            )
            out.append(record)
            if (n + 1) % self.abort_every == 0:
                self.transactions.abort_transaction(record)
            elif (n + 1) % self.commit_every == 0:
                self.transactions.commit_transaction(record)
        self.n += len(out)
        if self.n >= self.count:
            if self.end == "abort":
                self.transactions.abort_transaction()
            else:
                self.transactions.commit_transaction()
        return out

    def commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:
        if self.acks:
            with open(self.acks, "a") as f:
                f.write(f"{record.value}\n")

    def stop(self) -> None:
        return None
