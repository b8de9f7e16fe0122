"""The snapshot's text protocol path (connectors/mysql/snapshot_text.py, text_rows.py):
the same values as the JSON chunks for every type it reads, rows over 16 MB, a table
left mid-stream, and a query killed mid-stream."""

from __future__ import annotations

import time
import warnings

import numpy as np
import pytest

from connect.api import ConnectError
from connectors.mysql import snapshot_text
from connectors.mysql.columns import TypeOptions
from connectors.mysql.envelope import source_schema
from connectors.mysql.snapshot_chunks import JsonChunks
from connectors.mysql.snapshot_text import TextRows
from connectors.mysql.tables import read_tables
from tests.connectors.mysql.helpers import Driver, config, db, run
from tests.connectors.postgres.helpers import events
from tests.waiting import wait_until

pytestmark = pytest.mark.mysql

COLUMNS = (
    "id INT PRIMARY KEY, ti TINYINT, si SMALLINT, mi MEDIUMINT UNSIGNED, i INT,"
    " bi BIGINT, ubi BIGINT UNSIGNED, ui INT UNSIGNED, y YEAR, f FLOAT, dbl DOUBLE,"
    " dec6 DECIMAL(20,6), c CHAR(5), vc VARCHAR(300), tx TEXT, lt LONGTEXT, js JSON,"
    " bn BINARY(3), vb VARBINARY(10), bl BLOB, e ENUM('a','b'), st SET('x','y','z'),"
    " ts TIMESTAMP(3) NULL, d DATE, dt0 DATETIME, dt3 DATETIME(3), dt6 DATETIME(6),"
    " tm0 TIME, tm3 TIME(3), tm6 TIME(6), b1 BIT(1), b10 BIT(10), b16 BIT(16), b64 BIT(64)"
)
ROWS = [
    "(1, -128, -32768, 16777215, -2147483648, -9223372036854775808, 18446744073709551615,"
    " 4294967295, 1901, 1.1, -1e300, -99999999999999.999999, 'ab', 'é\"'',\\n',"
    " REPEAT('t', 300), REPEAT('é', 70000), '{\"a\": [1, \"b\"]}', x'00fb', x'00fbff',"
    " x'', 'a', 'x,z', '2024-01-02 03:04:05.678', '1000-01-01', '1000-01-01 00:00:00',"
    " '1969-12-31 23:59:59.999', '1969-12-31 23:59:59.999999', '-596:31:23',"
    " '-00:00:00.5', '-12:34:56.000001', b'1', b'1010101010', b'1', b'1' << 63)",
    "(2, 127, 32767, 0, 2147483647, 9223372036854775807, 5, 0, 2155, -3.4e38,"
    " 3.141592653589793, 0.000001, '', '', '', '', '[]', x'ffffff', x'', REPEAT(x'fe', 300),"
    " 'b', '', '1970-01-01 00:00:01', '9999-12-31', '9999-12-31 23:59:59',"
    " '2024-02-29 12:00:00.5', '9999-12-31 23:59:59.999999', '596:31:23',"
    " '596:31:23.647', '838:59:59.999999', b'0', b'0', x'ff00', x'0102030405060708')",
    "(3, 0, 0, 1, 0, 0, 9223372036854775808, 1, 0, 0, 0, 0, 'z', 'v', 't', 'l', 'null',"
    " x'00', x'01', x'02', 'a', 'y', '2038-01-19 03:14:07.999', '0000-00-00',"
    " '0000-00-00 00:00:00', '0000-00-00 00:00:00.000', '1970-01-01 00:00:00', '00:00:00',"
    " '00:00:00.001', '12:34:56.123456', b'0', b'1111111111', 0, 0)",
    "(4" + ", NULL" * 33 + ")",
]


def _tables(url: str, **keys: str) -> dict:
    """The test database's tables as the snapshot builds them."""
    types = TypeOptions(**{k: v for k, v in keys.items() if k.endswith("_mode")})
    with db(url) as cur:
        return {
            t.name: t.build("srv", types, source_schema("mariadb"), None)
            for t in read_tables(cur, lambda d, n: True)
        }


@pytest.mark.parametrize(
    "modes",
    [
        {},
        {"decimal_handling_mode": "string", "bigint_unsigned_handling_mode": "precise"},
        {"decimal_handling_mode": "double", "time_precision_mode": "adaptive"},
    ],
)
def test_text_rows_give_the_json_chunks_values(mysql_url: str, modes: dict[str, str]) -> None:
    """`t` is read by the text path, `j` (the same rows and a geometry column, which
    only the JSON chunks read) by the JSON chunks: every value is the same. Chunks of 3
    rows; lengths of 1, 3 and 4 bytes; NULLs, zero dates, pre-1970 fractions."""
    rows = ", ".join(ROWS)
    run(
        mysql_url,
        "SET SESSION sql_mode = ''",  # zero dates
        f"CREATE TABLE t ({COLUMNS})",
        f"CREATE TABLE j ({COLUMNS}, g POINT NULL)",
        f"INSERT INTO t VALUES {rows}",
        "INSERT INTO j SELECT *, NULL FROM t",
    )
    tables = _tables(mysql_url, **modes)
    assert TextRows.supports(tables["t"]) and not TextRows.supports(tables["j"])
    assert JsonChunks.supports(tables["j"])
    d = Driver(config(mysql_url, snapshot_mode="initial_only", snapshot_fetch_size="3", **modes))
    try:
        d.poll_until(lambda r: bool(r) and r[-1].value.get("source").get("snapshot") == "last")
    finally:
        d.stop()
    got: dict[str, dict] = {"t": {}, "j": {}}
    for topic, op, key, _, after in events(d.records):
        assert op == "r"
        after.pop("g", None)
        if after["f"] is not None:  # `j`'s reads are records: FLOAT as the double parsed
            after["f"] = float(np.float32(after["f"]))
        got[topic.rsplit(".", 1)[1]][key["id"]] = after
    assert sorted(got["t"]) == [1, 2, 3, 4]
    assert got["t"] == got["j"]
    first, zeros, nulls = got["t"][1], got["t"][3], got["t"][4]
    assert len(first["lt"]) == 70000 and first["vb"] == b"\x00\xfb\xff"
    assert zeros["d"] is None and zeros["dt0"] is None and zeros["dt6"] == 0
    assert set(nulls.values()) == {None, 4}
    if not modes:
        assert first["ubi"] == -1 and first["dt3"] == -1 and first["dt6"] == -1
        assert first["tm6"] == -12 * 3600_000_000 - 34 * 60_000_000 - 56_000_001
        assert first["tm3"] == -500_000 and first["b1"] is True
        assert first["b10"] == (0b1010101010).to_bytes(2, "little")
        assert first["b64"] == (1 << 63).to_bytes(8, "little")
        assert first["d"] == -354285  # 1000-01-01


def _chunk_sizes(url: str, table: str, chunk: int) -> list[int]:
    """The row counts of TextRows' chunks of `table`, read on a connection of our own."""
    tables = _tables(url)
    with db(url) as cur:
        rows = TextRows(cur.connection, tables[table], chunk)
        sizes = []
        try:
            while (columns := rows.next_columns(10.0)) != []:
                assert columns is not None, "no chunk in 10 s"
                sizes.append(len(columns[0]))
        finally:
            rows.close()
        cur.execute("SELECT 1")  # the connection is PyMySQL's again
        assert cur.fetchone() == (1,)
    return sizes


def test_a_row_over_16_mb_spans_packets(mysql_url: str, monkeypatch) -> None:
    """A row of more than 2^24-1 bytes comes in several packets, joined before parsing;
    a chunk ends early once its rows pass the byte bound."""
    with db(mysql_url) as cur:
        cur.execute("SELECT @@GLOBAL.max_allowed_packet")
        before = cur.fetchone()[0]
        cur.execute("SET GLOBAL max_allowed_packet = 67108864")
    try:
        run(
            mysql_url,
            "CREATE TABLE big (id INT PRIMARY KEY, v LONGTEXT, n INT)",
            "INSERT INTO big VALUES (1, 'a', 1), (2, REPEAT('xy', 9000000), 2), (3, 'c', 3)",
        )
        d = Driver(config(mysql_url, snapshot_mode="initial_only", snapshot_fetch_size="2"))
        try:
            d.poll_until(
                lambda r: bool(r) and r[-1].value.get("source").get("snapshot") == "last", 60
            )
        finally:
            d.stop()
        assert _chunk_sizes(mysql_url, "big", 100) == [3]
        monkeypatch.setattr(snapshot_text, "_CHUNK_BYTES", 1 << 20)
        assert _chunk_sizes(mysql_url, "big", 100) == [2, 1]
    finally:
        with db(mysql_url) as cur:
            cur.execute(f"SET GLOBAL max_allowed_packet = {int(before)}")
    after = [e[4] for e in events(d.records)]
    assert [(a["id"], len(a["v"]), a["n"]) for a in after] == [
        (1, 1, 1),
        (2, 18_000_000, 2),
        (3, 1, 3),
    ]
    assert after[1]["v"][:4] == "xyxy" and after[1]["v"][-2:] == "xy"


def _big_table(url: str) -> None:
    """20,000 rows of ~1 kB: more than the sockets hold, so the server is still sending
    when the reader stops taking chunks (two ahead of the task)."""
    run(
        url,
        "CREATE TABLE wide (id INT PRIMARY KEY, pad VARCHAR(1000))",
        "INSERT INTO wide SELECT seq, REPEAT('p', 1000) FROM seq_1_to_20000",
    )


def test_a_snapshot_stopped_mid_table_closes_its_stream(mysql_url: str) -> None:
    """The task stopped mid-table: the stream cannot be read on, so the connection is
    closed (no PyMySQL warning about an unfinished result, no hang); a new task's
    snapshot reads every row."""
    _big_table(mysql_url)
    props = config(mysql_url, snapshot_mode="initial_only", snapshot_fetch_size="100")
    d = Driver(props)
    try:
        d.poll_until(lambda r: len(r) >= 100)
    finally:
        began = time.monotonic()
        with warnings.catch_warnings(record=True) as caught:  # recorded, not raised
            warnings.simplefilter("always")
            d.stop()
    assert time.monotonic() - began < 10
    assert [str(w.message) for w in caught] == []
    again = Driver(props)
    try:
        again.poll_until(
            lambda r: bool(r) and r[-1].value.get("source").get("snapshot") == "last", 60
        )
    finally:
        again.stop()
    assert sorted(e[2]["id"] for e in events(again.records)) == list(range(1, 20001))


def test_a_query_killed_mid_stream_fails_the_snapshot(mysql_url: str) -> None:
    """The server's error packet in the rows becomes the snapshot's error."""
    _big_table(mysql_url)
    d = Driver(config(mysql_url, snapshot_mode="initial_only", snapshot_fetch_size="100"))
    try:
        d.poll_until(lambda r: len(r) >= 100)
        with db(mysql_url) as cur:
            cur.execute(
                "SELECT ID FROM information_schema.PROCESSLIST "
                "WHERE INFO LIKE 'SELECT %%FROM `%%`.`wide`'"
            )
            (query,) = cur.fetchone()
            cur.execute(f"KILL QUERY {int(query)}")
        with pytest.raises(ConnectError, match="interrupted"):
            d.poll_until(lambda r: False, 30)
    finally:
        d.stop()


def test_a_snapshot_stopped_while_its_select_waits_ends_at_once(mysql_url: str) -> None:
    """The reader waiting on the server (another session holds the table locked, the
    SELECT waits): stopping the task wakes it by shutting the socket down."""
    run(mysql_url, "CREATE TABLE held (id INT PRIMARY KEY)", "INSERT INTO held VALUES (1)")
    with db(mysql_url) as locker:
        locker.execute("LOCK TABLES held WRITE")
        d = Driver(config(mysql_url, snapshot_mode="initial_only", snapshot_locking_mode="none"))
        try:
            assert d.poll_once() == []  # the table's reader started, no rows
            wait_until(
                lambda: _waiting_select(mysql_url), 10, "the snapshot's SELECT waiting on the lock"
            )
            assert d.poll_once() == []
        finally:
            began = time.monotonic()
            d.stop()
        assert time.monotonic() - began < 10
        locker.execute("UNLOCK TABLES")


def _waiting_select(url: str) -> bool:
    with db(url) as cur:
        cur.execute(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST "
            "WHERE INFO LIKE 'SELECT %%FROM `%%`.`held`' AND STATE LIKE '%%lock%%'"
        )
        return cur.fetchone()[0] == 1
