"""The pgoutput parser on real bytes: messages captured from the fixture server with
pg_logical_slot_get_binary_changes, then parsed message by message."""

from __future__ import annotations

import pytest

from connectors.postgres import pgoutput as pgo
from tests.connectors.postgres.helpers import db, run

pytestmark = pytest.mark.postgres


def capture(url: str, *statements: str) -> list[tuple[int, bytes]]:
    run(
        url,
        "CREATE PUBLICATION p FOR ALL TABLES",
        "SELECT pg_create_logical_replication_slot('cap', 'pgoutput')",
        *statements,
    )
    with db(url) as cur:
        cur.execute(
            "SELECT lsn::text, data FROM pg_logical_slot_get_binary_changes('cap', NULL, NULL, "
            "'proto_version', '1', 'publication_names', 'p')"
        )
        rows = [(pgo.lsn_int(lsn), bytes(data)) for lsn, data in cur.fetchall()]
        cur.execute("SELECT pg_drop_replication_slot('cap')")
    return rows


def test_every_message_kind(postgres_url: str) -> None:
    run(
        postgres_url,
        "CREATE TABLE t (id int PRIMARY KEY, v text, big text)",
        "ALTER TABLE t ALTER big SET STORAGE EXTERNAL",  # stored out of line, uncompressed
        "CREATE TABLE f (id int PRIMARY KEY, v text)",
        "ALTER TABLE f REPLICA IDENTITY FULL",
    )
    msgs = [
        pgo.parse(data)
        for _, data in capture(
            postgres_url,
            "INSERT INTO t VALUES (1, 'a', repeat('x', 100000)), (2, NULL, 'y')",
            "UPDATE t SET v = 'b' WHERE id = 1",  # big is TOASTed and unchanged
            "UPDATE t SET id = 3 WHERE id = 2",  # key change: old key sent ('K')
            "DELETE FROM t WHERE id = 1",
            "INSERT INTO f VALUES (1, 'old')",
            "UPDATE f SET v = 'new'",  # FULL: the whole old row ('O')
            "DELETE FROM f",
            "TRUNCATE t, f",
        )
    ]
    kinds = [type(m).__name__ for m in msgs]
    assert kinds[:5] == ["Begin", "Relation", "Insert", "Insert", "Commit"]
    begin, rel, ins1, ins2, commit = msgs[:5]
    assert begin.xid > 0 and begin.final_lsn == commit.commit_lsn
    assert commit.end_lsn > commit.commit_lsn and commit.commit_time_us == begin.commit_time_us
    assert (rel.schema, rel.name, rel.replica_identity) == ("public", "t", "d")
    assert [(c.name, c.type_oid, c.key) for c in rel.columns] == [
        ("id", 23, True),
        ("v", 25, False),
        ("big", 25, False),
    ]
    assert ins1.relation_oid == rel.oid and ins1.new[:2] == ["1", "a"]
    assert ins1.new[2] == "x" * 100000
    assert ins2.new == ["2", None, "y"]
    updates = [m for m in msgs if isinstance(m, pgo.Update)]
    assert updates[0].old is None and updates[0].new == ["1", "b", pgo.UNCHANGED_TOAST]
    assert updates[1].old_kind == "K" and updates[1].old == ["2", None, None]
    assert updates[1].new == ["3", None, "y"]
    assert updates[2].old_kind == "O" and updates[2].old == ["1", "old"]
    deletes = [m for m in msgs if isinstance(m, pgo.Delete)]
    assert (deletes[0].old_kind, deletes[0].old) == ("K", ["1", None, None])
    assert (deletes[1].old_kind, deletes[1].old) == ("O", ["1", "new"])
    (trunc,) = [m for m in msgs if isinstance(m, pgo.Truncate)]
    assert len(trunc.relation_oids) == 2 and trunc.options == 0
    assert kinds.count("Begin") == kinds.count("Commit") == 8


def test_type_message_for_a_user_type(postgres_url: str) -> None:
    run(
        postgres_url,
        "CREATE TYPE mood AS ENUM ('sad', 'happy')",
        "CREATE TABLE m (id int PRIMARY KEY, feel mood)",
    )
    msgs = [pgo.parse(d) for _, d in capture(postgres_url, "INSERT INTO m VALUES (1, 'happy')")]
    (typ,) = [m for m in msgs if isinstance(m, pgo.TypeInfo)]
    assert (typ.schema, typ.name) == ("public", "mood")
    (ins,) = [m for m in msgs if isinstance(m, pgo.Insert)]
    assert ins.new == ["1", "happy"]


def test_lsn_text_round_trip_and_bad_payloads() -> None:
    assert pgo.lsn_text(0x1_0000_00AB) == "1/AB"
    assert pgo.lsn_int("1/AB") == 0x1_0000_00AB
    with pytest.raises(pgo.ProtocolError, match="unknown pgoutput message type"):
        pgo.parse(b"Z")
    with pytest.raises(pgo.ProtocolError, match="malformed"):
        pgo.parse(b"B\x00")
    with pytest.raises(pgo.ProtocolError, match="empty"):
        pgo.parse(b"")
