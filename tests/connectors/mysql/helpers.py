"""Driving MySqlCdcSourceTask the way the runtime does (the PostgreSQL source's Driver
with this task), and SQL on the test database."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pymysql
import sqlalchemy as sa

from connectors.mysql import MySqlCdcSourceTask
from tests.connectors.fakes import FakeOffsetReader, FakeSourceContext
from tests.connectors.postgres.helpers import Driver as _Driver

__all__ = ["Driver", "config", "db", "run"]


def _params(url: str) -> dict[str, Any]:
    u = sa.make_url(url)
    return {
        "host": u.host,
        "port": u.port,
        "user": u.username,
        "password": u.password,
        "database": u.database,
    }


@contextmanager
def db(url: str) -> Iterator[Any]:
    """An autocommit PyMySQL cursor on the test database."""
    conn = pymysql.connect(**_params(url), autocommit=True, charset="utf8mb4")
    try:
        with conn.cursor() as cur:
            yield cur
    finally:
        conn.close()


def run(url: str, *statements: str) -> None:
    with db(url) as cur:
        for sql in statements:
            cur.execute(sql)


def config(url: str, **extra: str) -> dict[str, str]:
    """The task's config for the test database: its host and credentials, only its
    tables (`database.include.list`), a server id of its own."""
    p = _params(url)
    return {
        "database.hostname": p["host"],
        "database.port": str(p["port"]),
        "database.user": p["user"],
        "database.password": p["password"],
        "database.include.list": p["database"],
        "topic.prefix": "srv",
        "poll.interval.ms": "100",
        "include.schema.changes": "false",
        **{k.replace("_", "."): v for k, v in extra.items()},
    }


class Driver(_Driver):
    """The runtime's commit protocol around a MySqlCdcSourceTask."""

    def __init__(self, props: dict[str, str], reader: FakeOffsetReader | None = None) -> None:
        self.reader = reader or FakeOffsetReader()
        self.task = MySqlCdcSourceTask()  # type: ignore[assignment]
        self.task.initialize(FakeSourceContext(props, self.reader))
        self.task.start(props)
        self.records = []
        self.batches = 0
        self._pending = None
