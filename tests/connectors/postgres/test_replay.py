"""The CDC round trip users build: PostgreSQL → PostgresCdcSource → log →
ExtractNewRecordState → JdbcSink → a fresh table, compared row for row with the source
after a snapshot and a mixed stream of inserts, updates and deletes in many
transactions (on a real server, tasks in child processes). Values are compared at full
precision: Debezium's types (MicroTimestamp, ZonedTimestamp, MicroTime,
VariableScaleDecimal, …) carry every digit, and the sink creates columns of the
source's types from them; one-dimensional arrays (Connect arrays) arrive as the
PostgreSQL arrays they were, NULL elements, quotes, commas and braces included."""

from __future__ import annotations

import pytest

from tests.connectors.postgres.helpers import db, run, table_rows
from tests.waiting import wait_until

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def test_cdc_replayed_through_unwrap_and_the_jdbc_sink_matches_row_for_row(
    postgres_url, start_herder
) -> None:
    run(
        postgres_url,
        "CREATE TABLE src (id int PRIMARY KEY, name text, amount numeric(12,2) NOT NULL, "
        "at timestamptz, ok boolean, local timestamp, day date, clock time, "
        "ratio numeric, ref uuid, doc jsonb, tags text[], nums int[], ratios numeric[], "
        "ats timestamptz[])",
        "INSERT INTO src SELECT n, 'n' || n, n / 4.0, timestamptz '2024-01-01' + n * "
        "interval '1 minute 1.000123 second', n % 2 = 0, "
        "timestamp '1999-12-31 23:59:59.999999' + n * interval '1.5 second', "
        "date '2024-02-28' + n, time '23:59:59.999999' - n * interval '1.000001 second', "
        "n / 7.0, md5(n::text)::uuid, jsonb_build_object('n', n, 'tags', array['a', 'b']), "
        "array['a, ' || n, NULL, 'q\"' || n, 'b\\s', '{}', 'NULL', ''], "
        "CASE WHEN n % 5 = 0 THEN '{}'::int[] ELSE array[n, NULL, -n] END, "
        "array[n / 7.0, NULL, 1e-20], "
        "array[timestamptz '2024-01-01' + n * interval '1.000123 second', NULL] "
        "FROM generate_series(1, 300) n",
    )
    herder = start_herder()  # JSON with schemas: the sink creates its table from them
    herder.put_connector_config(
        "cdc",
        {
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "connection.url": postgres_url,
            "topic.prefix": "srv",
            "table.include.list": "public\\.src",
            "poll.interval.ms": "100",
        },
        allow_replace=False,
    )
    herder.put_connector_config(
        "sink",
        {
            "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector",
            "connection.url": postgres_url,
            "topics": "srv.public.src",
            "table.name.format": "dst",
            "insert.mode": "upsert",
            "pk.mode": "record_key",
            "pk.fields": "id",
            "auto.create": "true",
            "delete.enabled": "true",
            "transforms": "unwrap",
            "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
            "transforms.unwrap.drop.tombstones": "false",
            "transforms.unwrap.delete.handling.mode": "none",
        },
        allow_replace=False,
    )
    statements = []
    for t in range(40):  # many small transactions of every kind
        base = t * 7 + 1
        statements += [
            f"INSERT INTO src VALUES ({1000 + t}, 'new {t}', {t}.5, now(), true, "
            f"localtimestamp, current_date, localtime, {t}.25 ^ 3, gen_random_uuid(), "
            f"'{{\"t\": {t}}}')",
            f"UPDATE src SET amount = amount + 1, name = name || '!' WHERE id = {base}",
            f"UPDATE src SET tags = tags || 'x{{y}}'::text, nums = NULL WHERE id = {base + 1}",
            f"DELETE FROM src WHERE id = {base + 3}",
            f"UPDATE src SET ok = NULL, at = NULL WHERE id = {base + 5}",
        ]
    statements.append("UPDATE src SET amount = amount * 2 WHERE id % 10 = 0")
    statements.append("DELETE FROM src WHERE id BETWEEN 280 AND 290")
    run(postgres_url, *statements)
    expected = table_rows(postgres_url, "src")

    def replayed() -> bool:
        try:
            return table_rows(postgres_url, "dst") == expected
        except Exception:
            return False  # the sink has not created its table yet

    try:
        wait_until(replayed)
    except AssertionError:
        status = herder.connector_status("sink").to_json()
        try:
            got = table_rows(postgres_url, "dst")
        except Exception as exc:
            got = {"error": str(exc)}
        diff = {
            k: (expected.get(k), got.get(k))
            for k in set(expected) | set(got)
            if expected.get(k) != got.get(k)
        }
        raise AssertionError(
            f"sink status {status}; {len(diff)} rows differ, e.g. {list(diff.items())[:3]}"
        ) from None
    assert len(expected) == 300 + 40 - 40 - 11
    # full precision came through: microseconds, and numerics of any scale
    assert any(row["at"].microsecond % 1000 for row in expected.values())
    assert any(row["local"].microsecond % 1000 for row in expected.values())
    assert any(row["clock"].microsecond % 1000 for row in expected.values())
    assert any(row["ratio"].as_tuple().exponent < -10 for row in expected.values())
    with db(postgres_url) as cur:
        cur.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_name = 'dst' ORDER BY ordinal_position"
        )
        types = dict(cur.fetchall())
    assert types == {
        "id": "integer",
        "name": "text",
        "amount": "numeric",
        "at": "timestamp with time zone",
        "ok": "boolean",
        "local": "timestamp without time zone",
        "day": "date",
        "clock": "time without time zone",
        "ratio": "numeric",
        "ref": "uuid",
        "doc": "jsonb",
        "tags": "ARRAY",
        "nums": "ARRAY",
        "ratios": "ARRAY",
        "ats": "ARRAY",
    }
    with db(postgres_url) as cur:
        cur.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = 'dst'::regclass AND attname IN ('tags', 'nums', 'ratios', 'ats') "
            "ORDER BY attnum"
        )
        arrays = [r[0] for r in cur.fetchall()]
    assert arrays == ["text[]", "integer[]", "numeric[]", "timestamp(6) with time zone[]"]
    assert any(row["tags"] and "x{y}" in row["tags"] for row in expected.values())
