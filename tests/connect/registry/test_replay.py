"""The registry's state is the replay of `_schemas`: restarts answer as before, several
instances over one log agree on every id and version, lost races are settled by the
log's order, compaction keeps the answers, and a rebuild of 10,000 schemas is fast."""

from __future__ import annotations

import json
import threading
import time

from connect.registry.core import SchemaRegistry, SchemaRequest
from connect.registry.core.records import SchemaRecord, encode_schema, schema_key
from log import FileLog
from tests.connect.registry.conftest import record_schema


def req(text: str) -> SchemaRequest:
    return SchemaRequest(text)


def snapshot(registry: SchemaRegistry) -> dict[str, object]:
    """Every answer a client could get, as plain data."""
    out: dict[str, object] = {"subjects": registry.subjects(deleted=True)}
    for subject in registry.subjects(deleted=True):
        for version in registry.versions(subject, deleted=True):
            out[f"{subject}/{version}"] = registry.version(subject, version, deleted=True)
    for schema_id in range(1, registry.state.max_id + 1):
        try:
            out[f"id/{schema_id}"] = registry.schema_versions(schema_id, deleted=True)
        except Exception as exc:
            out[f"id/{schema_id}"] = type(exc).__name__
    out["max_id"] = registry.state.max_id
    out["config"] = (registry.settings.get_config(None), dict(registry.state.configs))
    out["mode"] = (registry.settings.mode(None), dict(registry.state.modes))
    return out


def populate(registry: SchemaRegistry) -> None:
    registry.register("a", req(record_schema("A", "x")))
    registry.register("b", req(record_schema("A", "x")))
    registry.register("a", req(record_schema("A", "x", ("y", "int", 0))))
    registry.settings.set_config("a", "full")
    registry.settings.set_mode("c", "READONLY")
    registry.register("d", req(record_schema("D", "x")))
    registry.delete_version("a", 1)
    registry.delete_subject("d")
    registry.delete_subject("d", permanent=True)


def test_restart_rebuilds_identical_answers(make_registry, tmp_path):
    first = make_registry()
    populate(first)
    before = snapshot(first)
    log = FileLog(tmp_path / "log", background=False)
    try:
        again = make_registry(log)
        assert snapshot(again) == before
        # ids keep counting after the hard-deleted D (id 3): never reused
        assert again.register("e", req(record_schema("E", "x"))).id == 4
    finally:
        log.close()


def test_compaction_keeps_the_answers_and_the_id_watermark(make_registry, tmp_path):
    log = FileLog(tmp_path / "log", background=False, clock=lambda: 10**13)
    registry = make_registry(log)
    populate(registry)
    registry.delete_subject("b")
    registry.delete_subject("b", permanent=True)
    before = snapshot(registry)
    log.alter_topic_config("_schemas", {"segment.bytes": 1024, "min.cleanable.dirty.ratio": 0.0})
    for i in range(30):  # roll a few segments so the cleaner has work
        registry.settings.set_config(f"pad{i}", "NONE")
        registry.settings.delete_config(f"pad{i}")
    report = log.run_maintenance()
    assert any(v for k, v in report.items() if "compact" in k or "clean" in k), report
    after_compaction = make_registry(log)
    snap = snapshot(after_compaction)
    assert snap == before
    assert after_compaction.register("z", req(record_schema("Z", "x"))).id == 4
    log.close()


def test_two_instances_agree_under_concurrent_registrations(make_registry, tmp_path):
    one = make_registry()
    other_log = FileLog(tmp_path / "log", background=False)
    try:
        two = make_registry(other_log)
        results: dict[tuple[int, int], tuple[str, int, int]] = {}
        errors: list[BaseException] = []

        def worker(registry: SchemaRegistry, who: int, n: int) -> None:
            try:
                for i in range(n):
                    # shared schemas (same text from both) and distinct ones, one subject
                    # shared by everybody and one per thread
                    shared = record_schema(f"S{i % 7}", "x")
                    own = record_schema(f"O{who}_{i}", "x")
                    a = registry.register(f"shared-{i % 5}", req(shared), force=True)
                    b = registry.register(f"own-{who}", req(own), force=True)
                    results[(who, i)] = (a.subject, a.version, a.id)
                    results[(who, -i - 1)] = (b.subject, b.version, b.id)
            except BaseException as exc:
                errors.append(exc)

        threads = [
            threading.Thread(target=worker, args=(reg, who, 25))
            for who, reg in enumerate([one, two, one, two])
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors, errors
        # every answer given is what both instances now say
        for subject, version, schema_id in results.values():
            assert one.version(subject, version).id == schema_id
            assert two.version(subject, version).id == schema_id
        assert snapshot(one) == snapshot(two)
        # one id per distinct schema, across subjects and instances
        texts: dict[str, int] = {}
        for subject in one.subjects():
            for v in one.versions(subject):
                record = one.version(subject, v)
                assert texts.setdefault(record.schema, record.id) == record.id
        assert len(set(texts.values())) == len(texts)
    finally:
        other_log.close()


def test_a_record_that_lost_a_race_is_rejected_by_replay(make_registry, tmp_path):
    """Two writers that did not see each other: the log's first record wins, the
    loser's writer retries, and replay from scratch gives the same state."""
    registry = make_registry()
    winner = SchemaRecord("s", 1, 1, record_schema("W", "x"))
    loser = SchemaRecord("s", 1, 1, record_schema("L", "x"))  # same version and id
    other = SchemaRecord("t", 1, 1, record_schema("L", "x"))  # same id, other schema
    log = registry.store.log
    log.append(
        "_schemas",
        0,
        [encode_schema(winner), encode_schema(loser), encode_schema(other)],
        keys=[schema_key("s", 1), schema_key("s", 1), schema_key("t", 1)],
    )
    registry.store.catch_up()
    assert registry.version("s", 1) == winner
    assert registry.subjects() == ["s"]
    assert len(registry.state.rejected) == 2
    # a retry through the registry gets fresh numbers
    got = registry.register("t", req(record_schema("L", "x")))
    assert (got.version, got.id) == (1, 2)
    replayed = make_registry(FileLog(tmp_path / "log", background=False))
    assert snapshot(replayed) == snapshot(registry)
    replayed.store.log.close()


def test_rebuild_of_10k_schemas_is_fast(make_registry, tmp_path):
    log = FileLog(tmp_path / "log", background=False)
    log.create_topic("_schemas", 1, config={"cleanup.policy": "compact"})
    records = []
    for i in range(10_000):
        text = json.dumps(
            {
                "type": "record",
                "name": f"R{i}",
                "namespace": "bench",
                "fields": [{"name": "a", "type": "int"}, {"name": "b", "type": "string"}],
            }
        )
        records.append(SchemaRecord(f"subject-{i}", 1, i + 1, text))
    for start in range(0, len(records), 1000):
        chunk = records[start : start + 1000]
        log.append(
            "_schemas",
            0,
            [encode_schema(r) for r in chunk],
            keys=[schema_key(r.subject, r.version) for r in chunk],
        )
    log.flush()
    log.close()
    reopened = FileLog(tmp_path / "log", background=False)
    started = time.perf_counter()
    registry = make_registry(reopened)
    elapsed = time.perf_counter() - started
    assert len(registry.subjects()) == 10_000 and registry.state.max_id == 10_000
    assert elapsed <= 2.0, f"rebuild took {elapsed:.2f} s"
    print(f"rebuild_10k_s={elapsed:.3f}")
    reopened.close()


def test_unreadable_records_are_skipped_not_fatal(make_registry):
    registry = make_registry()
    registry.store.log.append(
        "_schemas", 0, [b"not json", b"{}"], keys=[schema_key("s", 1), b'{"keytype":"NOOP"}']
    )
    registry.register("ok", req(record_schema("A", "x")))
    assert registry.subjects() == ["ok"]
    assert registry.state.skipped == 1
