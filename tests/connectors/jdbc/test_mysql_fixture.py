"""The private MariaDB server of tests/mysql.py: real authentication, settings the
JDBC tests rely on, a fresh database per test."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from tests.mysql import MysqlServer

pytestmark = pytest.mark.mysql


def test_server_settings_and_identity(mysql_server: MysqlServer, mysql_url: str) -> None:
    engine = sa.create_engine(mysql_url)
    with engine.connect() as conn:
        version = conn.exec_driver_sql("SELECT VERSION()").scalar()
        row = conn.exec_driver_sql(
            "SELECT CURRENT_USER(), @@bind_address, @@character_set_server, "
            "@@time_zone, @@skip_grant_tables, DATABASE()"
        ).one()
        assert not sa.inspect(conn).get_table_names()
    engine.dispose()
    assert "MariaDB" in str(version)
    assert tuple(row) == (
        "tributary@127.0.0.1",
        "127.0.0.1",
        "utf8mb4",
        "+00:00",
        0,
        mysql_url.rsplit("/", 1)[1].split("?")[0],
    )
    assert mysql_server.started_in_s < 30


def test_each_test_gets_its_own_database(mysql_server: MysqlServer, mysql_url: str) -> None:
    engine = sa.create_engine(mysql_url)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE t (id int)")
    engine.dispose()
    other = mysql_server.create_database()
    try:
        engine = sa.create_engine(mysql_server.url(other))
        with engine.connect() as conn:
            assert not sa.inspect(conn).get_table_names()
        engine.dispose()
    finally:
        mysql_server.drop_database(other)


def test_users_need_their_password(mysql_server: MysqlServer, mysql_url: str) -> None:
    database = mysql_url.rsplit("/", 1)[1].split("?")[0]
    mysql_server.execute(
        "CREATE USER 'reader'@'127.0.0.1' IDENTIFIED BY 'secret'",
        f"GRANT SELECT ON `{database}`.* TO 'reader'@'127.0.0.1'",
    )
    try:
        good = sa.create_engine(mysql_server.url(database, user="reader", password="secret"))
        with good.connect() as conn:
            assert conn.exec_driver_sql("SELECT CURRENT_USER()").scalar() == "reader@127.0.0.1"
            with pytest.raises(sa.exc.OperationalError, match="command denied"):
                conn.exec_driver_sql("CREATE TABLE nope (id int)")
        good.dispose()
        bad = sa.create_engine(mysql_server.url(database, user="reader", password="wrong"))
        with pytest.raises(sa.exc.OperationalError, match="Access denied"):
            bad.connect()
        bad.dispose()
    finally:
        mysql_server.execute("DROP USER 'reader'@'127.0.0.1'")


def test_a_dropped_database_ends_the_sessions_left_in_it(mysql_server: MysqlServer) -> None:
    """A test that leaves a transaction open must not hang the teardown's DROP."""
    name = mysql_server.create_database()
    engine = sa.create_engine(mysql_server.url(name))
    conn = engine.connect()
    conn.exec_driver_sql("CREATE TABLE t (id int)")
    conn.commit()
    conn.exec_driver_sql("INSERT INTO t VALUES (1)")  # a transaction left open
    mysql_server.drop_database(name)
    conn.invalidate()
    engine.dispose()
    server = sa.create_engine(mysql_server.url())
    with server.connect() as check:
        assert check.exec_driver_sql(f"SHOW DATABASES LIKE '{name}'").all() == []
    server.dispose()
