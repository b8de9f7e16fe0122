"""COPY text straight to Arrow columns equals the per-row path, or declines.

The rule under test: for every chunk `CopyArrowParser.parse` accepts, its batch is
exactly `batch_from_values(table.value_schema, rows)` of the rows `parse_copy_text`
gives (and so `to_connect` gives today's values); a chunk it declines (None) is left to
that path. Real PostgreSQL output first (every supported type, nasty values, each
handling mode), then generated text for breadth, then the edges."""

from __future__ import annotations

import datetime as dt
import io
import struct
from typing import Any

import psycopg2
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connect.api import ConnectError, DataError, Struct, Type
from connect.api.arrow import batch_from_values, to_connect
from connectors.postgres.columns import TypeOptions
from connectors.postgres.config import connection_params
from connectors.postgres.copy_arrow import CopyArrowParser
from connectors.postgres.snapshot import parse_copy_text
from connectors.postgres.tables import Table, read_table
from tests.connectors.postgres.helpers import run

# ------------------------------------------------------------------- comparing


def _per_row(table: Table, chunk: bytes) -> tuple[list[list[Any]], pa.RecordBatch]:
    """Today's rows of a chunk and the batch the runtime makes of them. Every column
    is marked escapable: the per-row path then looks for escapes everywhere, which
    changes nothing where there are none."""
    rows = parse_copy_text(chunk.decode(), table.converters, [True] * len(table.columns))
    structs = [Struct.trusted(table.value_schema, row) for row in rows]
    return rows, batch_from_values(table.value_schema, structs)


def _float32(value: float) -> float:
    return struct.unpack("f", struct.pack("f", value))[0]


def _exact(values: list[Any]) -> list[str]:
    """Values as text that tells apart what == does not: repr makes NaN equal to NaN and
    tells -0.0 from 0.0 and Decimal('1.5') from Decimal('1.50'); a datetime's ISO text
    keeps its offset, not which class of UTC zone it carries."""
    return [v.isoformat() if isinstance(v, dt.datetime) else repr(v) for v in values]


def check(table: Table, chunk: bytes) -> pa.RecordBatch | None:
    """The parser's batch of `chunk` after checking it against the per-row path."""
    got = CopyArrowParser(table).parse(chunk)
    try:
        rows, want = _per_row(table, chunk)
    except (DataError, ConnectError):  # no Connect value: the per-row path raises it
        assert got is None
        return None
    if got is None:
        return None
    assert got.schema == want.schema
    for i, field in enumerate(table.value_schema.fields):
        assert got.column(i).type == want.column(i).type, field.name
        assert _exact(got.column(i).to_pylist()) == _exact(want.column(i).to_pylist()), field.name
        today = [row[i] for row in rows]
        if field.schema.type is Type.FLOAT32:  # Arrow's float32 holds today's double rounded
            today = [None if v is None else _float32(v) for v in today]
        assert _exact(to_connect(field.schema, got.column(i))) == _exact(today), field.name
    return got


# ------------------------------------------------------------ real PostgreSQL

EVERY_TYPE = """
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy', 'back\\slash');
CREATE TABLE every (
    id bigint PRIMARY KEY, i int, s smallint, o oid,
    t text, v varchar(20), c char(3),
    d double precision,
    n numeric(12, 2), n0 numeric(5, 0), nbig numeric(40, 5),
    tz timestamptz, tz0 timestamptz(0), tz3 timestamptz(3),
    ts timestamp, ts3 timestamp(3), ts0 timestamp(0),
    b boolean, day date, clock time, clock3 time(3),
    u uuid, j json, jb jsonb, feel mood, addr inet, tags text[]
)
"""
COLUMNS = (
    "id, i, s, o, t, v, c, d, n, n0, nbig, tz, tz0, tz3, ts, ts3, ts0, "
    "b, day, clock, clock3, u, j, jb, feel, addr, tags"
)
# rows PostgreSQL prints in the plain form: the parser must take every one
CLEAN_ROWS = [
    "1, 7, 3, 42, 'plain', 'short', 'abc', 0.25, 12.50, 12, 123.45678, "
    "'2024-01-01 00:00:01+00', '2024-01-01 00:00:01+00', '2024-01-01 00:00:01.5+00', "
    "'2016-11-04 13:51:30.123456', '2016-11-04 13:51:30.123', '2016-11-04 13:51:30', "
    "true, '2016-11-04', '13:51:30.123456', '13:51:30.123', "
    "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{\"a\": 1}', '{\"b\": [1, 2]}', 'happy', "
    "'10.0.0.1/8', '{a,\"b c\",NULL}'",
    # NULL in every nullable column
    "2" + ", NULL" * 26,
    # empty strings, unicode, and every character COPY escapes (undone, not declined)
    "3, -2147483648, -32768, 4294967295, '', '', '', -0.0, -0.01, -99999, "
    "-123456789012345678901234567890123.45678, "
    "'1969-12-31 23:59:59.999999+00', '0001-01-01 00:00:00+00', "
    "'9999-12-31 23:59:59.999+00', '1969-12-31 23:59:59.999999', "
    "'0001-01-01 00:00:00', '9999-12-31 23:59:59', false, '0001-01-01', '00:00:00', "
    "'23:59:59.999', '00000000-0000-0000-0000-000000000000', "
    "'{\"q\": \"a\\\"b\\\\c\\n\"}', '{\"é\": \"日本\"}', 'back\\slash', '::1', '{}'",
    "4, 2147483647, 32767, 0, E'tab\\there\\nnew\\rcr\\\\back\\bbs\\fff\\013vt', "
    "E'\\\\N', 'x\\y', 'NaN'::float8, 0.05, 0, 0.00001, "
    "'2024-02-29 12:00:00.000001+00', '2024-02-29 12:00:00+00', '2024-02-29 12:00:00.001+00', "
    "'1900-02-28 00:00:00.5', '1900-02-28 00:00:00.5', '1900-02-28 00:00:00', NULL, "
    "'1969-12-31', '23:59:59.999999', '00:00:00.5', NULL, '\"\\\\\\\\\"', 'null', 'sad', "
    "NULL, E'{\"tab\\there\"}'",
    "5, 0, 0, 1, '😀 z̀ 中文', 'ünï', 'ñ', 'Infinity'::float8, "
    "9999999999.99, 1, 0, '1970-01-01 00:00:00.12345+00', '1970-01-01 00:00:00+00', "
    "'1970-01-01 00:00:00.1+00', '1970-01-01 00:00:00', '1970-01-01 00:00:00', "
    "'1970-01-01 00:00:00', true, '9999-12-31', '12:00:00', '12:00:00', NULL, '[]', '[]', "
    "'ok', NULL, NULL",
    "6, NULL, NULL, NULL, 'a\tb', NULL, NULL, '-Infinity'::float8, "
    "-9999999999.99, NULL, NULL, '2000-01-01 00:00:00.999999+00', NULL, "
    "'2000-01-01 00:00:00.999+00', NULL, NULL, NULL, NULL, '2000-01-01', NULL, NULL, NULL, "
    "NULL, NULL, NULL, NULL, NULL",
    "7, NULL, NULL, NULL, NULL, NULL, NULL, 1e308, NULL, NULL, NULL, "
    "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
    "NULL, NULL",
    "8, NULL, NULL, NULL, NULL, NULL, NULL, 5e-324, NULL, NULL, NULL, "
    "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
    "NULL, NULL",
]
# one value each that the parser leaves to the per-row path (id ≥ 100)
FALLBACK_VALUES = [
    ("tz", "'infinity'"),
    ("tz", "'-infinity'"),
    ("tz", "'0044-03-15 12:00:00+00 BC'"),
    ("tz3", "'10000-01-01 00:00:00+00'"),
    ("ts", "'infinity'"),
    ("ts3", "'0044-03-15 12:00:00 BC'"),
    ("ts0", "'10000-01-01 00:00:00'"),
    ("day", "'infinity'"),  # no io.debezium.time.Date value: the per-row path raises
    ("day", "'4713-01-01 BC'"),
    ("day", "'5874897-12-31'"),
    ("clock", "'24:00:00'"),
    ("n", "'NaN'"),  # no Decimal value: the per-row path raises
]


def _copy(url: str, sql: str, *, timezone: str | None = None) -> list[bytes]:
    """The lines of COPY's text output in the connector's session settings."""
    conn = psycopg2.connect(**connection_params({"connection.url": url}))
    try:
        with conn.cursor() as cur:
            if timezone is not None:
                cur.execute("SET TimeZone = %s", (timezone,))
            out = io.BytesIO()
            cur.copy_expert(sql, out)
    finally:
        conn.close()
    return out.getvalue().splitlines(keepends=True)


def _table(url: str, name: str, types: TypeOptions) -> Table:
    conn = psycopg2.connect(**connection_params({"connection.url": url}))
    try:
        with conn.cursor() as cur:
            table = read_table(cur, "public", name, "srv", types=types)
    finally:
        conn.close()
    assert table is not None
    return table


@pytest.fixture
def every_type(postgres_url: str) -> tuple[str, list[bytes]]:
    """The table of every type with the clean rows and one row per fallback value."""
    inserts = [f"INSERT INTO every ({COLUMNS}) VALUES ({row})" for row in CLEAN_ROWS]
    inserts += [
        f"INSERT INTO every (id, {column}) VALUES ({100 + k}, {value})"
        for k, (column, value) in enumerate(FALLBACK_VALUES)
    ]
    run(postgres_url, EVERY_TYPE, *inserts)
    return postgres_url, _copy(postgres_url, f"COPY (SELECT {COLUMNS} FROM every) TO STDOUT")


MODES = [
    TypeOptions(),
    TypeOptions("adaptive_time_microseconds", "double", "numeric"),
    TypeOptions("connect", "string", "numeric"),
]


@pytest.mark.postgres
@pytest.mark.parametrize(
    "types", MODES, ids=lambda t: f"{t.time_precision_mode}-{t.decimal_handling_mode}"
)
def test_postgres_output_equals_the_per_row_path(
    every_type: tuple[str, list[bytes]], types: TypeOptions
) -> None:
    url, lines = every_type
    table = _table(url, "every", types)
    parser = CopyArrowParser(table)
    assert parser.supported, parser.reason
    assert len(lines) == len(CLEAN_ROWS) + len(FALLBACK_VALUES)
    clean = [line for line in lines if int(line.split(b"\t")[0]) < 100]
    for line in lines:
        got = check(table, line)
        if line in clean:
            assert got is not None, line
        elif types == TypeOptions():  # other modes take some of these (NaN as a double)
            assert got is None, line
    batch = check(table, b"".join(clean))  # one chunk of many rows
    assert batch is not None and batch.num_rows == len(clean)
    assert check(table, b"".join(lines)) is None  # one value the parser declines: all


@pytest.mark.postgres
def test_text_is_unescaped(every_type: tuple[str, list[bytes]]) -> None:
    url, lines = every_type
    table = _table(url, "every", TypeOptions())
    row4 = next(line for line in lines if line.startswith(b"4\t"))
    assert b"\\\\" in row4 and b"\\t" in row4  # COPY escaped them
    batch = CopyArrowParser(table).parse(row4)
    assert batch is not None
    assert batch.column(4).to_pylist() == ["tab\there\nnew\rcr\\back\bbs\fff\x0bvt"]
    assert batch.column(5).to_pylist() == ["\\N"]  # a text, not a NULL
    assert batch.column(26).to_pylist() == [["tab\there"]]  # an array's element


@pytest.mark.postgres
def test_zoned_timestamps_of_another_session_zone_fall_back(
    every_type: tuple[str, list[bytes]],
) -> None:
    url, _ = every_type
    table = _table(url, "every", TypeOptions())
    lines = _copy(
        url, f"COPY (SELECT {COLUMNS} FROM every WHERE id < 100) TO STDOUT", timezone="Asia/Kolkata"
    )
    for line in lines:
        got = check(table, line)
        # a row with any timestamptz prints an offset (+05:30, or +05:53:28 for local
        # mean time before 1854); the rows of NULLs parse still
        assert (got is None) == (b"+05:" in line), line


@pytest.mark.postgres
def test_the_lake_bench_table(postgres_url: str) -> None:
    """The benchmark's table (bench/lake_bench.py): every chunk taken, every value equal."""
    run(
        postgres_url,
        "CREATE TABLE orders (id bigint PRIMARY KEY, customer text NOT NULL, "
        "product text NOT NULL, quantity int NOT NULL, price float8 NOT NULL, "
        "amount numeric(12,2) NOT NULL, status text NOT NULL, region text, "
        "created_at timestamptz NOT NULL, paid boolean NOT NULL)",
        "INSERT INTO orders SELECT n, 'customer-' || (n % 5000), "
        "(ARRAY['kayak','tent','lamp','rope'])[1 + n % 4], n % 9, n * 0.25, "
        "round(n / 7.0, 2), (ARRAY['new','paid','shipped'])[1 + n % 3], "
        "CASE WHEN n % 11 = 0 THEN NULL ELSE 'region-' || (n % 4) END, "
        "timestamptz '2024-01-01' + n * interval '1.37 second', n % 2 = 0 "
        "FROM generate_series(1, 3000) n",
    )
    table = _table(postgres_url, "orders", TypeOptions())
    lines = _copy(postgres_url, "COPY (SELECT * FROM orders) TO STDOUT")
    for start in range(0, len(lines), 1024):
        assert check(table, b"".join(lines[start : start + 1024])) is not None


@pytest.mark.postgres
def test_numeric_without_precision(postgres_url: str) -> None:
    """A numeric with a scale per value (VariableScaleDecimal) has no columnar reading;
    as a double or as text it has."""
    run(
        postgres_url,
        "CREATE TABLE plain (id int, ratio numeric)",
        "INSERT INTO plain VALUES (1, 10.1100), (2, 'NaN'), (3, -1e-20), (4, NULL)",
    )
    lines = b"".join(_copy(postgres_url, "COPY (SELECT * FROM plain) TO STDOUT"))
    precise = CopyArrowParser(_table(postgres_url, "plain", TypeOptions()))
    assert not precise.supported
    assert precise.reason is not None and "'ratio'" in precise.reason
    assert precise.parse(lines) is None
    for mode in ("double", "string"):
        table = _table(postgres_url, "plain", TypeOptions(decimal_handling_mode=mode))
        assert check(table, lines) is not None


# ------------------------------------------------------------ generated text

INT4, INT8, INT2, FLOAT4, FLOAT8, TEXT, NUMERIC, BOOL = 23, 20, 21, 700, 701, 25, 1700, 16
DATE, TIME, TIMESTAMP, TIMESTAMPTZ, UUID, BYTEA, INTERVAL = 1082, 1083, 1114, 1184, 2950, 17, 1186


def _numeric(precision: int, scale: int) -> int:
    return (precision << 16) + scale + 4


def _escape(text: str) -> str:
    """COPY's escaping of a text value."""
    out = text.replace("\\", "\\\\")
    for char, code in (("\t", "t"), ("\n", "n"), ("\r", "r"), ("\b", "b"), ("\f", "f")):
        out = out.replace(char, "\\" + code)
    return out.replace("\v", "\\v")


_moments = st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31))
# text rich in what COPY escapes, and in `N` (a text `\N` beside a NULL's `\N`)
_texts = st.text(
    alphabet=st.sampled_from("a\\N\t\n\r\b\f\v")
    | st.characters(codec="utf-8", exclude_characters="\x00"),
    max_size=8,
)


def _instant(moment: dt.datetime, digits: int, suffix: str) -> str:
    """PostgreSQL's text of a timestamp(tz)(digits): fraction trimmed of trailing zeros."""
    fraction = f"{moment.microsecond:06d}"[:digits].rstrip("0")
    text = moment.isoformat(sep=" ", timespec="seconds")
    return f"{text}.{fraction}{suffix}" if fraction else f"{text}{suffix}"


def _clock(moment: dt.datetime, digits: int) -> str:
    fraction = f"{moment.microsecond:06d}"[:digits].rstrip("0")
    text = moment.time().isoformat(timespec="seconds")
    return f"{text}.{fraction}" if fraction else text


_odd_instants = st.sampled_from(
    ["infinity", "-infinity", "0044-03-15 12:00:00+00 BC", "2024-01-01 00:00:00+05:30"]
)


def _zoned(digits: int) -> st.SearchStrategy[str]:
    return _moments.map(lambda m: _instant(m, digits, "+00"))


def _numbers(scale: int) -> st.SearchStrategy[str]:
    return st.decimals(places=scale, min_value=-(10**9), max_value=10**9, allow_nan=False).map(
        lambda d: f"{d:.{scale}f}"
    )


# (type oid, typmod, PostgreSQL's text, odd text the parser may decline); None is NULL
GENERATED = [
    (INT4, -1, st.integers(-(2**31), 2**31 - 1).map(str), st.nothing()),
    (INT8, -1, st.integers(-(2**63), 2**63 - 1).map(str), st.nothing()),
    (INT2, -1, st.integers(-(2**15), 2**15 - 1).map(str), st.nothing()),
    (FLOAT8, -1, st.floats().map(repr).map(lambda r: r.replace("inf", "Infinity")), st.nothing()),
    (TEXT, -1, _texts.map(_escape), st.just("a\\x41")),
    (UUID, -1, st.uuids().map(str), st.nothing()),
    (NUMERIC, _numeric(12, 2), _numbers(2), st.just("NaN")),
    (NUMERIC, _numeric(10, 0), _numbers(0), st.just("NaN")),
    (BOOL, -1, st.sampled_from(["t", "f"]), st.nothing()),
    (TIMESTAMPTZ, -1, _zoned(6), _odd_instants),
    (TIMESTAMPTZ, 0, _zoned(0), _odd_instants),
    (TIMESTAMPTZ, 3, _zoned(3), _odd_instants | st.just("2024-01-01 00:00:00.1234+00")),
    (TIMESTAMP, -1, _moments.map(lambda m: _instant(m, 6, "")), st.just("infinity")),
    (TIMESTAMP, 3, _moments.map(lambda m: _instant(m, 3, "")), st.just("10000-01-01 00:00:00")),
    (DATE, -1, _moments.map(lambda m: m.date().isoformat()), st.just("0044-03-15 BC")),
    (TIME, -1, _moments.map(lambda m: _clock(m, 6)), st.just("24:00:00")),
    (TIME, 3, _moments.map(lambda m: _clock(m, 3)), st.just("24:00:00")),
]


def _table_of(chosen: list[tuple[int, int]], types: TypeOptions) -> Table:
    return Table(
        oid=1,
        schema="public",
        name="t",
        columns=[f"c{i}" for i in range(len(chosen))],
        type_oids=[oid for oid, _ in chosen],
        typmods=[mod for _, mod in chosen],
        not_null=[False] * len(chosen),
        primary_key=[],
        replica_identity="d",
    ).build("srv", types)


@settings(max_examples=300, deadline=None)
@given(st.data(), st.sampled_from(MODES), st.booleans())
def test_generated_text_equals_the_per_row_path(
    data: st.DataObject, types: TypeOptions, odd: bool
) -> None:
    chosen = data.draw(st.lists(st.sampled_from(GENERATED), min_size=1, max_size=6))
    cells = [st.none() | plain | (odd_ if odd else st.nothing()) for _, _, plain, odd_ in chosen]
    rows = data.draw(st.lists(st.tuples(*cells), min_size=1, max_size=12))
    chunk = "".join("\t".join("\\N" if v is None else v for v in row) + "\n" for row in rows)
    table = _table_of([(oid, mod) for oid, mod, _, _ in chosen], types)
    got = check(table, chunk.encode())
    if not odd:  # PostgreSQL's plain text: always taken
        assert got is not None


# ------------------------------------------------------------------- the edges

# values where rounding the wrong way or losing a digit would show
EDGES = [
    (TIMESTAMP, -1, "1969-12-31 23:59:59.999999"),  # Connect's ms floor, not truncation
    (TIMESTAMP, -1, "0001-01-01 00:00:00.000001"),
    (TIMESTAMP, 3, "1969-12-31 23:59:59.999"),
    (TIMESTAMP, 0, "1969-12-31 23:59:59"),
    (TIME, -1, "23:59:59.999999"),
    (TIME, 3, "00:00:00.001"),
    (DATE, -1, "1969-12-31"),
    (TIMESTAMPTZ, -1, "1969-12-31 23:59:59.000001+00"),
    (TIMESTAMPTZ, 6, "2024-01-01 00:00:00.1+00"),
    (TIMESTAMPTZ, 1, "2024-01-01 00:00:00.1+00"),
    (TIMESTAMPTZ, 1, "2024-01-01 00:00:00+00"),
    (NUMERIC, _numeric(12, 2), "-0.01"),
    (NUMERIC, _numeric(38, 38), "0.12345678901234567890123456789012345678"),
    (NUMERIC, _numeric(38, 0), "-99999999999999999999999999999999999999"),
]


@pytest.mark.parametrize("types", MODES, ids=lambda t: t.time_precision_mode)
@pytest.mark.parametrize(("oid", "mod", "text"), EDGES)
def test_edges_are_taken_and_equal(types: TypeOptions, oid: int, mod: int, text: str) -> None:
    table = _table_of([(oid, mod), (oid, mod)], types)
    assert check(table, f"{text}\t\\N\n\\N\t{text}\n".encode()) is not None


def test_unsupported_columns_name_the_reason() -> None:
    # real (a double in the record path), bytea, interval, and a numeric(3, 5)
    # (PostgreSQL 15), which pa.array refuses too
    for oid, mod in ((FLOAT4, -1), (BYTEA, -1), (INTERVAL, -1), (NUMERIC, _numeric(3, 5))):
        parser = CopyArrowParser(_table_of([(INT4, -1), (oid, mod)], TypeOptions()))
        assert not parser.supported
        assert parser.reason is not None and "'c1'" in parser.reason
        assert parser.parse(b"1\t\\N\n") is None


def test_malformed_chunks_are_declined() -> None:
    parser = CopyArrowParser(_table_of([(INT4, -1), (TEXT, -1)], TypeOptions()))
    assert parser.parse(b"1\ta\n2\tb\n") is not None
    assert parser.parse(b"") is None
    assert parser.parse(b"1\ta\n2\tb") is None  # not whole lines
    assert parser.parse(b"1\ta\n2\n") is None  # a row of another width
    assert parser.parse(b"1\ta\tb\n") is None
    assert parser.parse(b"x\ta\n") is None  # not an int: the per-row path raises
    assert parser.parse(b"1\ta\\x41\n") is None  # an escape COPY TO never writes


def test_a_one_column_row_of_an_empty_text_is_a_row() -> None:
    table = _table_of([(TEXT, -1)], TypeOptions())
    batch = check(table, b"\n\\N\nx\n\n")
    assert batch is not None and batch.column(0).to_pylist() == ["", None, "x", ""]
