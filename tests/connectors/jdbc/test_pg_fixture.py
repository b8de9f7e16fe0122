"""The private PostgreSQL server of tests/pg.py: settings CDC needs, a fresh database
per test, password roles."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

pytestmark = pytest.mark.postgres


def test_server_settings(postgres_url):
    engine = sa.create_engine(postgres_url)
    with engine.connect() as conn:
        settings = dict(
            conn.execute(
                sa.text(
                    "SELECT name, setting FROM pg_settings WHERE name IN ('wal_level', "
                    "'max_replication_slots', 'max_wal_senders', 'synchronous_commit', "
                    "'listen_addresses')"
                )
            ).all()
        )
        tables = "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
        assert conn.execute(sa.text(tables)).scalar() == 0
    engine.dispose()
    assert settings["wal_level"] == "logical"
    assert int(settings["max_replication_slots"]) >= 10
    assert int(settings["max_wal_senders"]) >= 10
    assert settings["synchronous_commit"] == "on"
    assert settings["listen_addresses"] == "127.0.0.1"


def test_each_test_gets_its_own_database(postgres_server, postgres_url):
    engine = sa.create_engine(postgres_url)
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE t (id int)"))
    engine.dispose()
    other = postgres_server.create_database()
    try:
        engine = sa.create_engine(postgres_server.url(other))
        with engine.connect() as conn:
            assert not sa.inspect(conn).get_table_names()
        engine.dispose()
    finally:
        postgres_server.drop_database(other)


def test_roles_need_their_password(postgres_server, postgres_url):
    postgres_server.execute("CREATE ROLE reader LOGIN PASSWORD 'secret'")
    try:
        database = postgres_url.rsplit("/", 1)[1]
        good = sa.create_engine(postgres_server.url(database, user="reader", password="secret"))
        with good.connect() as conn:
            assert conn.execute(sa.text("SELECT current_user")).scalar() == "reader"
        good.dispose()
        bad = sa.create_engine(postgres_server.url(database, user="reader", password="wrong"))
        with pytest.raises(sa.exc.OperationalError, match="password authentication failed"):
            bad.connect()
        bad.dispose()
    finally:
        postgres_server.execute("DROP ROLE reader")
