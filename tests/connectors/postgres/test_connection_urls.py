"""PostgresCdcSource's `connection.url` in every form users bring: `postgresql://`,
psycopg 3's (`postgresql+psycopg://`), psycopg2's and pgJDBC's (`jdbc:postgresql:`
with user, password and currentSchema as parameters). The walsender is always reached
through psycopg2's replication connection, whatever driver the URL names: each form
snapshots a table and streams an insert, as a role that needs its password."""

from __future__ import annotations

import secrets

import pytest

from connect.api import ConfigError
from connectors.postgres.config import connection_params, parse_config
from tests.connectors.postgres.helpers import Driver, config, db, run
from tests.waiting import wait_until

pytestmark = pytest.mark.postgres


@pytest.fixture
def replicator(postgres_server, postgres_url):
    """A role that may replicate and must give its password; yields the URL parts."""
    user, password = "cdc_" + secrets.token_hex(4), "pw-" + secrets.token_hex(6)
    database = postgres_url.rsplit("/", 1)[1]
    postgres_server.execute(f"CREATE ROLE {user} LOGIN REPLICATION PASSWORD '{password}'")
    run(
        postgres_url,
        "CREATE SCHEMA shop",
        "CREATE TABLE shop.items (id int PRIMARY KEY, name text NOT NULL)",
        "INSERT INTO shop.items VALUES (1, 'one'), (2, 'two')",
        "CREATE PUBLICATION dbz_publication FOR ALL TABLES",
        f"GRANT USAGE ON SCHEMA shop TO {user}",
        f"GRANT SELECT ON ALL TABLES IN SCHEMA shop TO {user}",
    )
    try:
        yield postgres_url, f"127.0.0.1:{postgres_server.port}", database, user, password
    finally:
        run(postgres_url, f"DROP OWNED BY {user}")
        postgres_server.execute(f"DROP ROLE {user}")


@pytest.mark.parametrize(
    "form",
    [
        "postgresql://{user}:{password}@{address}/{database}",
        "postgresql+psycopg://{user}:{password}@{address}/{database}",
        "postgresql+psycopg2://{user}:{password}@{address}/{database}",
        "jdbc:postgresql://{address}/{database}?user={user}&password={password}"
        "&currentSchema=shop&sslmode=disable",
    ],
    ids=["postgresql", "postgresql+psycopg", "postgresql+psycopg2", "jdbc:postgresql"],
)
def test_every_postgresql_url_form_snapshots_and_streams(replicator, form):
    admin_url, address, database, user, password = replicator
    url = form.format(address=address, database=database, user=user, password=password)
    slot = "s_" + secrets.token_hex(4)
    props = config(url, slot_name=slot, publication_autocreate_mode="disabled")
    d = Driver(props)
    try:
        snapshot = d.poll_count(2)
        assert [r.value.get("after").get("id") for r in snapshot] == [1, 2]
        assert snapshot[0].topic == "srv.shop.items"
        run(admin_url, "INSERT INTO shop.items VALUES (3, 'three')")
        streamed = d.poll_count(3)[2]
        assert streamed.value.get("op") == "c"
        assert streamed.value.get("after").get("name") == "three"
    finally:
        d.stop()
        _drop_slot(admin_url, slot)


def _drop_slot(url: str, slot: str) -> None:
    """Drop `slot` once the server let it go: its walsender ends a moment after the
    source closed the replication connection, and a drop before that is refused
    ('replication slot … is active for PID …')."""

    def released() -> bool:
        with db(url) as cur:
            cur.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s", (slot,))
            row = cur.fetchone()
        return row is None or not row[0]

    wait_until(released, 30, f"replication slot {slot} released")
    run(url, f"SELECT pg_drop_replication_slot('{slot}')")


def test_the_session_options_stay_with_current_schema():
    """currentSchema's search_path joins the session settings every value's text form
    depends on (TimeZone UTC, ISO dates), never replaces them."""
    cfg = parse_config(
        {"topic.prefix": "srv", "connection.url": "jdbc:postgresql://h/db?currentSchema=shop"}
    )
    options = connection_params(cfg)["options"]
    assert "-c TimeZone=UTC" in options
    assert "-c DateStyle=ISO,YMD" in options
    assert options.endswith("-c search_path=shop")


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("jdbc:mysql://h/db?password=s3cret", "not a PostgreSQL URL"),
        ("mysql://u:s3cret@h/db", "not a PostgreSQL URL"),
        ("jdbc:postgresql://h/db?password=s3cret&bogus=1", "bogus"),
    ],
)
def test_a_url_it_cannot_use_is_refused_at_parse_naming_the_key(url, reason):
    with pytest.raises(ConfigError) as info:
        parse_config({"topic.prefix": "srv", "connection.url": url})
    assert info.value.name == "connection.url"
    assert reason in str(info.value)
    assert "s3cret" not in str(info.value)


def test_the_url_is_checked_when_the_config_is_validated():
    """The REST validate endpoint reports a URL it cannot use on connection.url (one
    line, the password masked); a ${file:…} placeholder waits for the task's start."""
    from connectors.postgres.config import CONFIG

    def errors(url: str) -> list[str]:
        results = CONFIG.validate({"topic.prefix": "srv", "connection.url": url})
        return next(r for r in results if r.name == "connection.url").errors

    (problem,) = errors("jdbc:mysql://h/db?password=s3cret")
    assert "not a PostgreSQL URL" in problem and "s3cret" not in problem
    assert errors("jdbc:postgresql://h/db?currentSchema=s") == []
    assert errors("${file:/run/secrets/db.properties:url}") == []
