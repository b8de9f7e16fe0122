"""A JdbcSource connector whose start fails (a whitelisted table that is missing) leaves
no connection open: the runtime keeps the failed connector's error, not its pool, and
never calls stop() on it. Found with psycopg 3, which warns about a connection
collected while open; psycopg2 kept it open silently."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from connect.api import ConfigError
from tests.connectors.jdbc.source_helpers import run, source_props, start_connector

pytestmark = pytest.mark.postgres


def sessions(admin: sa.Engine, database: str) -> int:
    with admin.connect() as conn:
        return conn.exec_driver_sql(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = %(db)s AND pid <> pg_backend_pid()",
            {"db": database},
        ).scalar_one()


@pytest.mark.parametrize("driver", ["postgresql+psycopg2", "postgresql+psycopg"])
def test_a_failed_start_closes_its_connections(postgres_server, postgres_url, driver):
    database = postgres_url.rsplit("/", 1)[1]
    run(postgres_url, "CREATE TABLE here (id serial PRIMARY KEY)")
    url = postgres_url.replace("postgresql+psycopg2", driver)
    admin = sa.create_engine(postgres_server.url("postgres"))
    try:
        with pytest.raises(ConfigError, match="no table gone") as caught:
            start_connector(source_props(url, "pg-", mode="bulk", table_whitelist="here,gone"))
        # `caught` holds the traceback, and through it the failed connector
        assert caught.value.name == "table.whitelist"
        assert sessions(admin, database) == 0
    finally:
        admin.dispose()
