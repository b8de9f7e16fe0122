"""Column types as Debezium's PostgreSQL connector maps them: schemas (names, versions,
parameters), values from the snapshot's COPY text and from pgoutput equal for the same
data, the handling modes, the text forms other sessions produce, edge values, and the
zero values of key-only row images."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import psycopg2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from connect.api import ConfigError, DataError, Struct
from connectors.jdbc.types import from_variable_scale_decimal
from connectors.postgres import text_values
from connectors.postgres.columns import (
    DATE,
    INTERVAL,
    NUMERIC,
    TIME,
    TIMESTAMP,
    TIMESTAMPTZ,
    TIMETZ,
    TypeOptions,
    column_type,
)
from connectors.postgres.config import connection_params, parse_config, type_options
from connectors.postgres.envelope import zero_value
from connectors.postgres.tables import Table, read_table
from tests.connectors.postgres.helpers import Driver, config, db, run

_EPOCH = dt.datetime(1970, 1, 1)
_US = dt.timedelta(microseconds=1)


def micros(value: dt.datetime) -> int:
    return (value - _EPOCH) // _US


def convert(type_oid: int, typmod: int, text: str, types: TypeOptions | None = None) -> Any:
    return column_type(type_oid, typmod, types or TypeOptions())[1](text)


# ------------------------------------------------------------- one table, every type

TYPES_TABLE = """
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE typed (
    id int PRIMARY KEY,
    day date, clock time, clock3 time(3), clock0 time(0), clocktz timetz,
    local timestamp, local3 timestamp(3), at timestamptz, at3 timestamptz(3),
    at0 timestamptz(0), price numeric(12, 2) NOT NULL, ratio numeric, took interval,
    ref uuid, doc jsonb, raw json, data bytea, feel mood, note text
)
"""
VALUES = (
    "'2016-11-04', '13:51:30.123456', '13:51:30.123', '13:51:30', '13:51:30.123789+02', "
    "'2016-11-04 13:51:30.123456', '2016-11-04 13:51:30.123', "
    "'2016-11-04 13:51:30.1+02', '2016-11-04 13:51:30.1+02', '2016-11-04 13:51:30+02', "
    "1.5, 10.1100, '1 year 2 mons 3 days 04:05:06.78', "
    "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{\"bar\": \"baz\"}', '{\"a\":1}', '\\x0102', "
    "'happy', 'tab\there'"
)
EXPECTED: dict[str, Any] = {
    "day": (dt.date(2016, 11, 4) - dt.date(1970, 1, 1)).days,
    "clock": (13 * 3600 + 51 * 60 + 30) * 1_000_000 + 123456,
    "clock3": (13 * 3600 + 51 * 60 + 30) * 1000 + 123,
    "clock0": (13 * 3600 + 51 * 60 + 30) * 1000,
    "clocktz": "11:51:30.123789Z",
    "local": micros(dt.datetime(2016, 11, 4, 13, 51, 30, 123456)),
    "local3": micros(dt.datetime(2016, 11, 4, 13, 51, 30, 123000)) // 1000,
    "at": "2016-11-04T11:51:30.100000Z",
    "at3": "2016-11-04T11:51:30.100Z",
    "at0": "2016-11-04T11:51:30Z",
    "price": decimal.Decimal("1.50"),
    "took": ((12 + 2) * 30.4375 * 86400 + 3 * 86400 + 4 * 3600 + 5 * 60) * 1_000_000 + 6_780_000,
    "ref": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
    "doc": '{"bar": "baz"}',
    "raw": '{"a":1}',
    "data": b"\x01\x02",
    "feel": "happy",
    "note": "tab\there",
}
SCHEMAS = {  # field -> (type, name) for the named ones
    "day": ("int32", "io.debezium.time.Date"),
    "clock": ("int64", "io.debezium.time.MicroTime"),
    "clock3": ("int32", "io.debezium.time.Time"),
    "clock0": ("int32", "io.debezium.time.Time"),
    "clocktz": ("string", "io.debezium.time.ZonedTime"),
    "local": ("int64", "io.debezium.time.MicroTimestamp"),
    "local3": ("int64", "io.debezium.time.Timestamp"),
    "at": ("string", "io.debezium.time.ZonedTimestamp"),
    "price": ("bytes", "org.apache.kafka.connect.data.Decimal"),
    "ratio": ("struct", "io.debezium.data.VariableScaleDecimal"),
    "took": ("int64", "io.debezium.time.MicroDuration"),
    "ref": ("string", "io.debezium.data.Uuid"),
    "doc": ("string", "io.debezium.data.Json"),
    "raw": ("string", "io.debezium.data.Json"),
    "feel": ("string", "io.debezium.data.Enum"),
    "data": ("bytes", None),
    "note": ("string", None),
}


def after(record: Any) -> dict[str, Any]:
    return dict(
        zip(
            [f.name for f in record.value.schema.field("after").schema.fields],
            record.value.get("after").values(),
            strict=True,
        )
    )


def test_snapshot_and_stream_give_debezium_values(postgres_url: str) -> None:
    run(postgres_url, TYPES_TABLE, f"INSERT INTO typed VALUES (1, {VALUES})")
    d = Driver(config(postgres_url))
    try:
        snapshot = d.poll_count(1)[0]
        run(postgres_url, f"INSERT INTO typed VALUES (2, {VALUES})")
        streamed = d.poll_count(2)[1]
    finally:
        d.stop()
    assert snapshot.value.get("op") == "r" and streamed.value.get("op") == "c"
    snap, stream = after(snapshot), after(streamed)
    assert {**snap, "id": 2} == stream  # one value whichever way it came
    for name, want in EXPECTED.items():
        assert snap[name] == want, name
    assert from_variable_scale_decimal(snap["ratio"]) == decimal.Decimal("10.11")
    assert snap["ratio"].to_dict()["scale"] == 2  # trailing zeros stripped
    fields = {f.name: f.schema for f in snapshot.value.schema.field("after").schema.fields}
    for name, (type_, schema_name) in SCHEMAS.items():
        schema = fields[name]
        assert (schema.type.value, schema.name) == (type_, schema_name), name
        assert schema.version == (1 if schema_name else None), name
        assert schema.optional is (name != "price"), name  # price is NOT NULL
    assert fields["price"].optional is False
    assert fields["price"].parameters == {"scale": "2", "connect.decimal.precision": "12"}
    assert fields["feel"].parameters == {"allowed": "sad,ok,happy"}


def test_key_only_images_use_zero_values_of_the_new_types(postgres_url: str) -> None:
    run(
        postgres_url,
        "CREATE TABLE req (id int PRIMARY KEY, at timestamptz NOT NULL, "
        "day date NOT NULL, ratio numeric NOT NULL, price numeric(6,3) NOT NULL, "
        "clocktz timetz NOT NULL, ref uuid NOT NULL, took interval NOT NULL)",
        "INSERT INTO req VALUES (1, now(), current_date, 1.5, 2.5, localtime, "
        "gen_random_uuid(), '1 day')",
    )
    d = Driver(config(postgres_url))
    try:
        d.poll_count(1)
        run(postgres_url, "DELETE FROM req WHERE id = 1")
        delete = d.poll_count(3)[1]
    finally:
        d.stop()
    before = delete.value.get("before")
    ratio_schema = before.schema.field("ratio").schema
    assert before.to_dict() == {
        "id": 1,
        "at": "1970-01-01T00:00:00Z",
        "day": 0,
        "ratio": {"scale": 0, "value": b"\x00"},
        "price": decimal.Decimal("0.000"),
        "clocktz": "00:00:00Z",
        "ref": "",
        "took": 0,
    }
    assert before.get("ratio").schema == ratio_schema  # a struct of the field's schema
    assert str(before.get("price")) == "0.000"


# --------------------------------------------------------- modes and other sessions

COLUMNS = "day, clock, clock3, local, local3, at, price, ratio, took"


def read_as(postgres_url: str, types: TypeOptions, *, session: str = "") -> list[Any]:
    """Row 1 of `typed` through `read_table` with `types`, read as text in a session
    configured by `session` (SET statements)."""
    with db(postgres_url) as cur:
        table = read_table(cur, "public", "typed", "srv", types=types)
        assert table is not None
        if session:
            cur.execute(session)
        cur.execute(f"SELECT {', '.join(c + '::text' for c in table.columns)} FROM typed")
        return table.convert(cur.fetchone())


def test_connect_double_string_and_microsecond_modes(postgres_url: str) -> None:
    run(postgres_url, TYPES_TABLE, f"INSERT INTO typed VALUES (1, {VALUES})")
    with db(postgres_url) as cur:
        default = read_table(cur, "public", "typed", "srv")
    assert isinstance(default, Table)
    names = default.columns

    connect = TypeOptions(time_precision_mode="connect")
    row = dict(zip(names, read_as(postgres_url, connect), strict=True))
    assert row["day"] == dt.date(2016, 11, 4)
    assert row["clock"] == dt.time(13, 51, 30, 123000)  # Connect's Time keeps ms
    assert row["local"] == dt.datetime(2016, 11, 4, 13, 51, 30, 123000, tzinfo=dt.UTC)
    assert row["at"] == "2016-11-04T11:51:30.100000Z"  # ZonedTimestamp in every mode

    micro = TypeOptions(time_precision_mode="adaptive_time_microseconds")
    row = dict(zip(names, read_as(postgres_url, micro), strict=True))
    assert row["clock3"] == EXPECTED["clock3"] * 1000  # a MicroTime whatever the precision
    assert row["local3"] == EXPECTED["local3"]  # timestamps stay adaptive

    double = TypeOptions(decimal_handling_mode="double")
    row = dict(zip(names, read_as(postgres_url, double), strict=True))
    assert (row["price"], row["ratio"]) == (1.5, 10.11)

    string = TypeOptions(decimal_handling_mode="string", interval_handling_mode="string")
    row = dict(zip(names, read_as(postgres_url, string), strict=True))
    assert (row["price"], row["ratio"]) == ("1.50", "10.1100")
    assert row["took"] == "P1Y2M3DT4H5M6.78S"


def test_other_session_settings_give_the_same_values(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sessions we open run in UTC, but values of a session in another zone (or a
    server that sets one for the database) take the parsing path: same values. The
    connector's own sessions — the walsender's too, whose pgoutput text follows its
    TimeZone — stay in UTC whatever the database's settings, so the snapshot and the
    stream both take the fast rewrite."""
    run(postgres_url, TYPES_TABLE, f"INSERT INTO typed VALUES (1, {VALUES})")
    utc = read_as(postgres_url, TypeOptions())
    nepal = read_as(postgres_url, TypeOptions(), session="SET TIME ZONE 'Asia/Kathmandu'")
    assert nepal == utc

    with db(postgres_url) as cur:
        cur.execute("SELECT current_database()")
        name = cur.fetchone()[0]
        cur.execute(f"ALTER DATABASE \"{name}\" SET timezone TO 'America/St_Johns'")
        cur.execute(f"ALTER DATABASE \"{name}\" SET intervalstyle TO 'iso_8601'")
    with db(postgres_url) as cur:
        cur.execute("SHOW timezone")
        assert cur.fetchone()[0] == "America/St_Johns"  # what a plain session gets now
    conn = psycopg2.connect(**connection_params(parse_config(config(postgres_url))))
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT current_setting('timezone'), current_setting('intervalstyle')")
            assert cur.fetchone() == ("UTC", "postgres")  # what the connector's get
    finally:
        conn.close()
    parsed: list[str] = []
    slow = text_values.zoned_slow

    def spy(text: str, digits: int) -> str:
        parsed.append(text)
        return slow(text, digits)

    monkeypatch.setattr(text_values, "zoned_slow", spy)
    d = Driver(config(postgres_url))
    try:
        snapshot = d.poll_count(1)[0]
        run(postgres_url, f"INSERT INTO typed VALUES (2, {VALUES})")
        streamed = d.poll_count(2)[1]
    finally:
        d.stop()
    assert parsed == []  # every timestamptz text was a UTC session's
    assert {**after(snapshot), "id": 2} == after(streamed)
    assert after(streamed)["at"] == EXPECTED["at"]
    assert after(streamed)["took"] == EXPECTED["took"]


# ------------------------------------------------------------- edges, without a server


@pytest.mark.parametrize(
    ("text", "digits", "want"),
    [
        ("2024-01-01 00:00:01.123456+00", 6, "2024-01-01T00:00:01.123456Z"),
        ("2024-01-01 00:00:01+00", 6, "2024-01-01T00:00:01.000000Z"),
        ("2024-01-01 00:00:01.12+00", 3, "2024-01-01T00:00:01.120Z"),
        ("2024-01-01 00:00:01+00", 0, "2024-01-01T00:00:01Z"),
        ("2024-01-01 05:45:01.5+05:45", 6, "2024-01-01T00:00:01.500000Z"),
        ("2023-12-31 20:30:00-03:30", 6, "2024-01-01T00:00:00.000000Z"),
        ("1900-01-01 00:00:00+00:19:32", 0, "1899-12-31T23:40:28Z"),
        ("21016-11-04 13:51:30.123456+07", 6, "+21016-11-04T06:51:30.123456Z"),
        ("4714-12-31 23:59:59.999999+00 BC", 6, "-4713-12-31T23:59:59.999999Z"),
        ("0044-03-15 10:00:00+00 BC", 0, "-0043-03-15T10:00:00Z"),
        ("infinity", 6, "infinity"),
        ("-infinity", 6, "-infinity"),
    ],
)
def test_zoned_timestamps(text: str, digits: int, want: str) -> None:
    assert convert(TIMESTAMPTZ, digits, text) == want


@given(
    st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31)),
    st.integers(min_value=0, max_value=6),
)
def test_zoned_timestamp_rewrite_equals_formatting(value: dt.datetime, digits: int) -> None:
    """The rewrite of a UTC session's text gives what formatting the instant gives."""
    value = value.replace(microsecond=value.microsecond // 10 ** (6 - digits) * 10 ** (6 - digits))
    fraction = f".{value.microsecond:06d}".rstrip("0").rstrip(".")
    text = f"{value.year:04d}-{value:%m-%d %H:%M:%S}{fraction}+00"  # 4-digit years
    want = f"{value.year:04d}-{value:%m-%dT%H:%M:%S}" + (
        f".{value.microsecond:06d}"[: digits + 1] if digits else ""
    )
    assert convert(TIMESTAMPTZ, digits, text) == want + "Z"
    shifted = value + dt.timedelta(hours=5, minutes=45) if value.year < 9999 else None
    if shifted is not None:  # the parsing path of another session agrees
        other = f"{shifted.year:04d}-{shifted:%m-%d %H:%M:%S}{fraction}+05:45"
        assert convert(TIMESTAMPTZ, digits, other) == want + "Z"
    assert convert(TIMESTAMP, -1, text[:-3]) == micros(value)
    assert convert(DATE, -1, text[:10]) == (value.date() - dt.date(1970, 1, 1)).days


def test_dates_times_and_timestamps_beyond_python() -> None:
    assert convert(DATE, -1, "0001-01-01 BC") == -719528
    # 2016-11-04 (17109) + 47 cycles of 400 years (146097 days each) + 200 years
    assert convert(DATE, -1, "21016-11-04") == 17109 + 47 * 146097 + 200 * 365 + 48
    assert convert(TIMESTAMP, -1, "infinity") == 9_223_372_036_825_200_000
    assert convert(TIMESTAMP, -1, "-infinity") == -9_223_372_036_832_400_000
    assert convert(TIME, -1, "24:00:00") == 86_400_000_000
    assert convert(TIMETZ, -1, "00:30:00+01") == "23:30:00Z"
    assert convert(TIMETZ, -1, "23:30:00.250-01:30") == "01:00:00.25Z"
    with pytest.raises(DataError, match="infinity"):
        convert(DATE, -1, "infinity")
    with pytest.raises(DataError, match="outside Connect's Timestamp"):
        convert(TIMESTAMP, -1, "0044-03-15 10:00:00 BC", TypeOptions(time_precision_mode="connect"))


@pytest.mark.parametrize(
    ("text", "micros_", "iso"),
    [
        ("1 year 2 mons 3 days 04:05:06.78", 37_091_106_780_000, "P1Y2M3DT4H5M6.78S"),
        ("-1 years -2 mons +3 days -04:05:06.78", -36_572_706_780_000, "P-1Y-2M3DT-4H-5M-6.78S"),
        ("00:00:00", 0, "P0Y0M0DT0H0M0S"),
        ("-00:00:00.000001", -1, "P0Y0M0DT0H0M-0.000001S"),
        ("1 mon", 2_629_800_000_000, "P0Y1M0DT0H0M0S"),
        ("100:00:00", 360_000_000_000, "P0Y0M0DT100H0M0S"),
    ],
)
def test_intervals(text: str, micros_: int, iso: str) -> None:
    assert convert(INTERVAL, -1, text) == micros_
    assert convert(INTERVAL, -1, text, TypeOptions(interval_handling_mode="string")) == iso


@pytest.mark.parametrize(
    ("text", "scale", "value"),
    [
        ("10.1100", 2, b"\x03\xf3"),
        ("-1000", 0, b"\xfc\x18"),
        ("0.000", 0, b"\x00"),
        ("128", 0, b"\x00\x80"),
        ("-0.5", 1, b"\xfb"),
    ],
)
def test_variable_scale_decimals(text: str, scale: int, value: bytes) -> None:
    got = convert(NUMERIC, -1, text)
    assert isinstance(got, Struct)
    assert got.to_dict() == {"scale": scale, "value": value}


def test_special_numerics_need_string_mode() -> None:
    with pytest.raises(DataError, match=r"decimal\.handling\.mode=string"):
        convert(NUMERIC, -1, "NaN")
    with pytest.raises(DataError, match=r"decimal\.handling\.mode=string"):
        convert(NUMERIC, (10 << 16) + 2 + 4, "Infinity")
    assert convert(NUMERIC, -1, "NaN", TypeOptions(decimal_handling_mode="string")) == "NaN"


def test_zero_values_follow_the_schema() -> None:
    price = column_type(NUMERIC, (6 << 16) + 3 + 4, optional=False)[0]
    assert str(zero_value(price)) == "0.000"
    assert zero_value(column_type(TIMESTAMPTZ, -1, optional=False)[0]) == "1970-01-01T00:00:00Z"
    assert zero_value(column_type(TIMESTAMPTZ, -1, optional=True)[0]) is None


def test_config_keys() -> None:
    base = {"topic.prefix": "srv", "connection.url": "postgresql://u@h/db"}
    assert type_options(parse_config(base)) == TypeOptions()
    chosen = type_options(
        parse_config(
            {
                **base,
                "time.precision.mode": "connect",
                "decimal.handling.mode": "string",
                "interval.handling.mode": "string",
            }
        )
    )
    assert chosen == TypeOptions("connect", "string", "string")
    for key in ("time.precision.mode", "decimal.handling.mode", "interval.handling.mode"):
        with pytest.raises(ConfigError) as err:
            parse_config({**base, key: "nanoseconds"})
        assert err.value.name == key


def test_the_task_maps_types_per_its_handling_modes(postgres_url: str) -> None:
    run(postgres_url, TYPES_TABLE, f"INSERT INTO typed VALUES (1, {VALUES})")
    d = Driver(
        config(
            postgres_url,
            **{"time.precision.mode": "connect", "decimal.handling.mode": "string"},
        )
    )
    try:
        snapshot = d.poll_count(1)[0]
        run(postgres_url, f"INSERT INTO typed VALUES (2, {VALUES})")
        streamed = d.poll_count(2)[1]
    finally:
        d.stop()
    for record in (snapshot, streamed):
        row = after(record)
        assert row["day"] == dt.date(2016, 11, 4)  # Connect's Date, not days since epoch
        assert row["price"] == "1.50"  # decimal.handling.mode=string
        fields = {f.name: f.schema for f in record.value.schema.field("after").schema.fields}
        assert fields["day"].name == "org.apache.kafka.connect.data.Date"
