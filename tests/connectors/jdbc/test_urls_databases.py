"""Every form of `connection.url` users bring reaches its real database through JdbcSource
and JdbcSink on a real StandaloneHerder over a FileLog: rows of a table go to a topic
and from it into a table the sink creates. PostgreSQL through `postgresql://` (no driver
named: psycopg2), psycopg 3 (`postgresql+psycopg://`), psycopg2 and `jdbc:postgresql:`
(its currentSchema the schema the sink creates its table in); MariaDB through
`mysql://` with no driver named, `mysql+pymysql://`, `jdbc:mysql:` and `jdbc:mariadb:`;
SQLite through `jdbc:sqlite:` with a relative and an absolute path. Credentials come in
the URL, as `connection.user`/`connection.password`, and as a `${file:…}` placeholder.
A URL's demand for TLS is kept: the servers here speak none, so it is refused."""

from __future__ import annotations

import functools
import secrets
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa

from connect.herder.standalone import StandaloneHerder
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

ROWS = 5


@pytest.fixture
def start_herder(
    start_herder: Callable[..., StandaloneHerder], tmp_path: Path
) -> Callable[[], StandaloneHerder]:
    """The shared factory: tasks in the worker, and a file config provider."""
    return functools.partial(
        start_herder,
        {
            "task.isolation": "thread",
            "config.providers": "file",
            "config.providers.file.class": "FileConfigProvider",
        },
    )


def copy_through_the_worker(
    herder: StandaloneHerder, source: dict[str, str], sink: dict[str, str]
) -> None:
    """JdbcSource reads table `items` into topic `src-items`; JdbcSink writes the topic
    into table `copied`, which it creates."""
    herder.put_connector_config(
        "source",
        {
            "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
            "mode": "incrementing",
            "incrementing.column.name": "id",
            "table.whitelist": "items",
            "topic.prefix": "src-",
            "poll.interval.ms": "50",
            **source,
        },
        allow_replace=False,
    )
    herder.put_connector_config(
        "sink",
        {
            "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector",
            "topics": "src-items",
            "table.name.format": "copied",
            "auto.create": "true",
            "insert.mode": "upsert",
            "pk.mode": "record_value",
            "pk.fields": "id",
            **sink,
        },
        allow_replace=False,
    )


def failed_tasks(herder: StandaloneHerder) -> list[str]:
    out = []
    for name in ("source", "sink"):
        status = herder.connector_status(name)
        out += [f"{name}: {t.trace}" for t in status.tasks if t.state == "FAILED"]
        if status.state == "FAILED":
            out.append(f"{name}: {status.trace}")
    return out


def wait_for_rows(herder: StandaloneHerder, count: Callable[[], int]) -> None:
    def done() -> bool:
        assert not failed_tasks(herder), failed_tasks(herder)
        return count() == ROWS

    wait_until(done, 60, f"{ROWS} rows in the sink's table")


def counter(engine: sa.Engine, table: str) -> Callable[[], int]:
    def count() -> int:
        with engine.connect() as conn:
            if not sa.inspect(conn).has_table(table.split(".")[-1], schema=_schema(table)):
                return 0
            return conn.exec_driver_sql(f"SELECT count(*) FROM {table}").scalar_one()

    return count


def _schema(table: str) -> str | None:
    return table.split(".")[0] if "." in table else None


def secrets_file(tmp_path: Path, **values: str) -> str:
    path = tmp_path / "db.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
    return str(path)


# ------------------------------------------------------------------------ PostgreSQL


@pytest.fixture
def pg(postgres_server, postgres_url):
    """A database owned by a role with a password (so the URL's password matters), the
    table `items` in schema `shop`; yields (host:port, database, user, password)."""
    user, password = "etl_" + secrets.token_hex(4), "pw-" + secrets.token_hex(6)
    database = postgres_url.rsplit("/", 1)[1]
    postgres_server.execute(f"CREATE ROLE {user} LOGIN PASSWORD '{password}'")
    postgres_server.execute(f'ALTER DATABASE "{database}" OWNER TO {user}')
    admin = sa.create_engine(postgres_url)
    with admin.begin() as conn:
        conn.exec_driver_sql(f"CREATE SCHEMA shop AUTHORIZATION {user}")
        conn.exec_driver_sql("CREATE TABLE shop.items (id int PRIMARY KEY, name text NOT NULL)")
        conn.exec_driver_sql(f"ALTER TABLE shop.items OWNER TO {user}")
        conn.exec_driver_sql(
            f"INSERT INTO shop.items SELECT g, 'n' || g FROM generate_series(1, {ROWS}) g"
        )
    try:
        yield admin, f"127.0.0.1:{postgres_server.port}", database, user, password
    finally:
        admin.dispose()
        postgres_server.execute(f'ALTER DATABASE "{database}" OWNER TO tributary')
        postgres_server.execute(f"DROP OWNED BY {user} CASCADE", database=database)
        postgres_server.execute(f"DROP ROLE {user}")


@pytest.mark.postgres
@pytest.mark.parametrize(
    "form",
    ["postgresql://", "postgresql+psycopg://", "postgresql+psycopg2://"],
)
def test_every_sqlalchemy_postgresql_url_reaches_the_database(pg, start_herder, form):
    admin, address, database, user, password = pg
    url = f"{form}{user}:{password}@{address}/{database}"
    herder = start_herder()
    sink = {"connection.url": url, "table.name.format": "shop.copied"}
    copy_through_the_worker(herder, {"connection.url": url}, sink)
    wait_for_rows(herder, counter(admin, "shop.copied"))


@pytest.mark.postgres
def test_a_jdbc_postgresql_url_with_its_parameters_reaches_the_database(pg, start_herder):
    """Credentials as URL parameters and currentSchema as the schema of unqualified
    tables: the sink's `copied` lands in shop, not in public."""
    admin, address, database, user, password = pg
    url = (
        f"jdbc:postgresql://{address}/{database}?user={user}&password={password}"
        "&currentSchema=shop&ApplicationName=tributary-test&reWriteBatchedInserts=true"
    )
    herder = start_herder()
    copy_through_the_worker(herder, {"connection.url": url}, {"connection.url": url})
    wait_for_rows(herder, counter(admin, "shop.copied"))
    assert counter(admin, "public.copied")() == 0


@pytest.mark.postgres
def test_a_jdbc_postgresql_url_with_credentials_from_a_config_provider(pg, start_herder, tmp_path):
    """Confluent's keys beside the URL, the password a ${file:…} placeholder."""
    admin, address, database, user, password = pg
    path = secrets_file(tmp_path, password=password)
    credentials = {
        "connection.url": f"jdbc:postgresql://{address}/{database}?currentSchema=shop",
        "connection.user": user,
        "connection.password": f"${{file:{path}:password}}",
    }
    herder = start_herder()
    copy_through_the_worker(herder, credentials, credentials)
    wait_for_rows(herder, counter(admin, "shop.copied"))


# --------------------------------------------------------------------------- MariaDB


@pytest.fixture
def maria(mysql_url):
    engine = sa.create_engine(mysql_url)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE items (id int PRIMARY KEY, name varchar(20) NOT NULL)")
        conn.exec_driver_sql(
            "INSERT INTO items VALUES " + ",".join(f"({i}, 'n{i}')" for i in range(1, ROWS + 1))
        )
    url = engine.url
    try:
        yield engine, f"{url.host}:{url.port}", url.database, url.username, url.password
    finally:
        engine.dispose()


@pytest.mark.mysql
@pytest.mark.parametrize(
    "form",
    [
        "mysql://{user}:{password}@{address}/{database}",
        "mysql+pymysql://{user}:{password}@{address}/{database}?charset=utf8mb4",
        "jdbc:mysql://{address}/{database}?user={user}&password={password}"
        "&characterEncoding=UTF-8&serverTimezone=UTC&rewriteBatchedStatements=true",
        "jdbc:mysql://{user}:{password}@{address}/{database}?sslMode=PREFERRED",
        "jdbc:mariadb://{address}/{database}?user={user}&password={password}",
    ],
    ids=["mysql", "mysql+pymysql", "jdbc:mysql", "jdbc:mysql-userinfo", "jdbc:mariadb"],
)
def test_every_mysql_url_reaches_the_database(maria, start_herder, form):
    engine, address, database, user, password = maria
    url = form.format(address=address, database=database, user=user, password=password)
    herder = start_herder()
    copy_through_the_worker(herder, {"connection.url": url}, {"connection.url": url})
    wait_for_rows(herder, counter(engine, "copied"))


@pytest.mark.mysql
def test_a_jdbc_mysql_url_with_confluents_credential_keys(maria, start_herder, tmp_path):
    engine, address, database, user, password = maria
    path = secrets_file(tmp_path, user=user, password=password)
    credentials = {
        "connection.url": f"jdbc:mysql://{address}/{database}",
        "connection.user": f"${{file:{path}:user}}",
        "connection.password": f"${{file:{path}:password}}",
    }
    herder = start_herder()
    copy_through_the_worker(herder, credentials, credentials)
    wait_for_rows(herder, counter(engine, "copied"))


# ---------------------------------------------------------------------------- SQLite


def sqlite_items(path: Path) -> None:
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
        conn.executemany("INSERT INTO items VALUES (?, ?)", [(i, f"n{i}") for i in range(1, 6)])
    conn.close()


def test_a_jdbc_sqlite_url_with_a_relative_path(start_herder, tmp_path, monkeypatch):
    """Relative to the worker's working directory, as the JVM's is."""
    (tmp_path / "data").mkdir()
    sqlite_items(tmp_path / "data" / "test.db")
    monkeypatch.chdir(tmp_path)
    herder = start_herder()
    url = {"connection.url": "jdbc:sqlite:data/test.db"}
    copy_through_the_worker(herder, url, url)
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'data' / 'test.db'}")
    try:
        wait_for_rows(herder, counter(engine, "copied"))
    finally:
        engine.dispose()


def test_a_jdbc_sqlite_url_with_an_absolute_path(start_herder, tmp_path):
    sqlite_items(tmp_path / "test.db")
    herder = start_herder()
    url = {"connection.url": f"jdbc:sqlite:{tmp_path / 'test.db'}"}
    copy_through_the_worker(herder, url, url)
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'test.db'}")
    try:
        wait_for_rows(herder, counter(engine, "copied"))
    finally:
        engine.dispose()


# --------------------------------------------------------------------- TLS demands


@pytest.mark.parametrize(
    ("database", "demand"),
    [
        pytest.param("postgres", "ssl=true", marks=pytest.mark.postgres),
        pytest.param("postgres", "sslmode=require", marks=pytest.mark.postgres),
        pytest.param("mysql", "sslMode=REQUIRED", marks=pytest.mark.mysql),
        pytest.param("mysql", "useSSL=true&requireSSL=true", marks=pytest.mark.mysql),
    ],
)
def test_a_tls_demand_is_kept_not_downgraded(request, database, demand):
    """The test servers speak no TLS: a URL that demands it is refused, as the Java
    driver refuses it, in one line naming connection.url and never the password."""
    from connect.api import ConfigError
    from tests.connectors.jdbc.source_helpers import start_connector

    url = sa.make_url(request.getfixturevalue(f"{database}_url"))
    jdbc = (
        f"jdbc:{'postgresql' if database == 'postgres' else 'mysql'}://{url.host}:{url.port}"
        f"/{url.database}?user={url.username}&password=not-shown-{database}&{demand}"
    )
    with pytest.raises(ConfigError) as caught:
        start_connector({"connection.url": jdbc, "mode": "bulk", "topic.prefix": "x-"})
    message = str(caught.value)
    assert caught.value.name == "connection.url"
    assert "SSL" in message or "ssl" in message
    assert "not-shown" not in message
    assert "\n" not in message
