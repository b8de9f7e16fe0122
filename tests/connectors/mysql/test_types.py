"""Column types as Debezium's MySQL connector maps them, and the same value whether the
snapshot read it (PyMySQL) or the binlog carried it (python-mysql-replication)."""

from __future__ import annotations

import decimal

import pytest

from tests.connectors.mysql.helpers import Driver, config, db, run

pytestmark = pytest.mark.mysql

COLUMNS = (
    "id INT PRIMARY KEY, u INT UNSIGNED, bu BIGINT UNSIGNED, ti TINYINT(1), su SMALLINT"
    " UNSIGNED, d DECIMAL(10,3), f FLOAT, s VARCHAR(20), tx TEXT, b BLOB, dt DATETIME(3),"
    " dt6 DATETIME(6), ts TIMESTAMP(6) NULL, tm TIME(6), dd DATE, y YEAR, bi BIT(10),"
    " b1 BIT(1), e ENUM('a','b'), st SET('x','y','z'), g GEOMETRY NULL"
)
VALUES = (
    "(%s, 4000000000, 18446744073709551615, 1, 65535, 12.345, 1.1, 'héllo', 'text',"
    " x'00ff', '2024-01-02 03:04:05.678', '2024-01-02 03:04:05.678901',"
    " '2024-01-02 03:04:05.5', '-12:34:56.5', '2024-02-29', 2024, b'1010101010', b'1',"
    " 'b', 'x,z', ST_GeomFromText('POINT(1 2)'))"
)


def test_snapshot_and_stream_give_debezium_values(mysql_url: str) -> None:
    run(mysql_url, f"CREATE TABLE ty ({COLUMNS})", "INSERT INTO ty VALUES " + VALUES % 1)
    d = Driver(config(mysql_url))
    try:
        d.poll_count(1)
        run(mysql_url, "INSERT INTO ty VALUES " + VALUES % 2)
        d.poll_count(2)
    finally:
        d.stop()
    read, created = (r.value.get("after").to_dict() for r in d.records)
    assert d.records[1].value.get("op") == "c"
    del read["id"], created["id"]
    assert read == created
    g = read.pop("g")
    assert g["srid"] == 0 and len(g["wkb"]) == 21  # a WKB point
    assert read == {
        "u": 4000000000,
        "bu": -1,  # bigint.unsigned.handling.mode=long wraps, as Debezium's does
        "ti": 1,
        "su": 65535,
        "d": decimal.Decimal("12.345"),
        "f": 1.1,
        "s": "héllo",
        "tx": "text",
        "b": b"\x00\xff",
        "dt": 1704164645678,
        "dt6": 1704164645678901,
        "ts": "2024-01-02T03:04:05.500000Z",
        "tm": -(12 * 3600 + 34 * 60 + 56) * 1_000_000 - 500_000,
        "dd": 19782,
        "y": 2024,
        "bi": (0b1010101010).to_bytes(2, "little"),
        "b1": True,
        "e": "b",
        "st": "x,z",
    }
    schema = d.records[0].value.get("after").schema
    names = {f.name: (f.schema.type.name, f.schema.name) for f in schema.fields}
    assert names["u"] == ("INT64", None) and names["su"] == ("INT32", None)
    assert names["ti"] == ("INT16", None) and names["f"] == ("FLOAT32", None)
    assert names["dt"] == ("INT64", "io.debezium.time.Timestamp")
    assert names["dt6"] == ("INT64", "io.debezium.time.MicroTimestamp")
    assert names["ts"] == ("STRING", "io.debezium.time.ZonedTimestamp")
    assert names["tm"] == ("INT64", "io.debezium.time.MicroTime")
    assert names["bi"] == ("BYTES", "io.debezium.data.Bits")
    assert names["st"] == ("STRING", "io.debezium.data.EnumSet")
    assert names["g"] == ("STRUCT", "io.debezium.data.geometry.Geometry")


def test_precise_modes(mysql_url: str) -> None:
    run(
        mysql_url,
        "CREATE TABLE pm (id INT PRIMARY KEY, bu BIGINT UNSIGNED, d DECIMAL(6,2))",
        "INSERT INTO pm VALUES (1, 18446744073709551615, 1.5)",
    )
    props = config(
        mysql_url, bigint_unsigned_handling_mode="precise", decimal_handling_mode="string"
    )
    d = Driver(props)
    try:
        d.poll_count(1)
        run(mysql_url, "INSERT INTO pm VALUES (2, 18446744073709551615, 2.25)")
        d.poll_count(2)
    finally:
        d.stop()
    rows = [r.value.get("after").to_dict() for r in d.records]
    assert [(r["bu"], r["d"]) for r in rows] == [
        (decimal.Decimal(18446744073709551615), "1.50"),
        (decimal.Decimal(18446744073709551615), "2.25"),
    ]


def test_decimals_decoded_from_the_binlog_equal_the_snapshot(mysql_url: str) -> None:
    """The binlog's binary DECIMAL (nine-digit groups, negatives inverted) read by our
    own row decoder gives what the server prints."""
    values = [
        "0",
        "-0.5",
        "1",
        "-1",
        "123456789012.3456789012",
        "-999999999999.9999999999",
        "0.0000000001",
        "-42.1",
    ]
    run(
        mysql_url,
        "CREATE TABLE dd (id INT PRIMARY KEY, a DECIMAL(22,10), b DECIMAL(5,0), c DECIMAL(34,20))",
    )
    rows = ", ".join(f"({i}, {v}, {int(float(v)) % 99999}, {v})" for i, v in enumerate(values))
    d = Driver(config(mysql_url, snapshot_mode="no_data"))
    try:
        run(mysql_url, f"INSERT INTO dd VALUES {rows}")
        d.poll_count(len(values))
    finally:
        d.stop()
    with db(mysql_url) as cur:
        cur.execute("SELECT a, b, c FROM dd ORDER BY id")
        expected = [list(r) for r in cur.fetchall()]
    got = [[r.value.get("after").get(k) for k in "abc"] for r in d.records]
    assert got == expected


def test_timestamps_of_every_precision_read_as_streamed(mysql_url: str) -> None:
    """The snapshot's TIMESTAMP text is the server's (JSON chunks), the stream's is
    formatted from the binlog's value: both give Debezium's ZonedTimestamp, nulls kept.
    Chunks of one row: the later chunks' query (keyed by the last row) runs too."""
    run(
        mysql_url,
        "CREATE TABLE tz (id INT PRIMARY KEY, t0 TIMESTAMP NULL, t3 TIMESTAMP(3) NULL, "
        "t6 TIMESTAMP(6) NULL)",
        "INSERT INTO tz VALUES (1, '2024-05-06 07:08:09', '2024-05-06 07:08:09.120', "
        "'1970-01-01 00:00:01.000001'), (2, NULL, NULL, NULL)",
    )
    d = Driver(config(mysql_url, snapshot_fetch_size="1"))
    try:
        d.poll_count(2)
        run(
            mysql_url,
            "INSERT INTO tz VALUES (3, '2024-05-06 07:08:09', '2024-05-06 07:08:09.120', "
            "'1970-01-01 00:00:01.000001'), (4, NULL, NULL, NULL)",
        )
        d.poll_count(4)
    finally:
        d.stop()
    rows = [r.value.get("after").to_dict() for r in d.records]
    assert [r.pop("id") for r in rows] == [1, 2, 3, 4]
    assert [r["op"] for r in (x.value.to_dict() for x in d.records)] == ["r", "r", "c", "c"]
    full = {
        "t0": "2024-05-06T07:08:09Z",
        "t3": "2024-05-06T07:08:09.120Z",
        "t6": "1970-01-01T00:00:01.000001Z",
    }
    empty = {"t0": None, "t3": None, "t6": None}
    assert rows == [full, empty, full, empty]


@pytest.mark.parametrize("mode", ["precise", "double"])
def test_doubles_and_decimals_read_by_arrow_equal_the_streamed_ones(mysql_url: str, mode) -> None:
    """The snapshot hands DOUBLE and DECIMAL columns over as their text, which Arrow
    parses a column at a time (connectors/mysql/snapshot_chunks.py): the values equal
    the binlog's for the same rows, nulls, negatives and a decimal key included."""
    run(
        mysql_url,
        "CREATE TABLE nd (k DECIMAL(8,2) PRIMARY KEY, x DOUBLE, d DECIMAL(30,10), n INT)",
    )
    rows = [
        ("0.1", "-12345678901234567890.0123456789", "1"),
        ("-1e300", "0.0000000001", "NULL"),
        ("NULL", "NULL", "3"),
        ("3.141592653589793", "-0.5", "4"),
    ]

    def insert(keys: list[str]) -> None:
        listed = ", ".join(f"({k}, {', '.join(r)})" for k, r in zip(keys, rows, strict=True))
        run(mysql_url, f"INSERT INTO nd VALUES {listed}")

    old, new = ["-100.25", "-7.5", "0.01", "99.99"], ["100.25", "207.5", "300.01", "499.99"]
    insert(old)
    d = Driver(config(mysql_url, decimal_handling_mode=mode, snapshot_fetch_size="3"))
    try:
        d.poll_count(len(rows))
        insert(new)
        d.poll_count(2 * len(rows))
    finally:
        d.stop()
    got = [r.value.get("after").to_dict() for r in d.records]
    assert [r.value.get("op") for r in d.records] == ["r"] * 4 + ["c"] * 4
    assert [float(g.pop("k")) for g in got] == [float(k) for k in old + new]
    assert got[:4] == got[4:]
    assert got[1]["x"] == -1e300 and got[2]["x"] is None and got[1]["n"] is None
    kind = decimal.Decimal if mode == "precise" else float
    assert type(got[0]["d"]) is kind and got[0]["d"] == kind("-12345678901234567890.0123456789")
