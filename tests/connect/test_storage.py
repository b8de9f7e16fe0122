"""Contract tests for the stores, run on every Table: memory and log-backed. The
log-backed ones must also survive a restart and see other writers' records."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable

import pytest

from connect.storage import (
    ConfigStore,
    LogTable,
    MemoryTable,
    OffsetStore,
    State,
    Status,
    StatusStore,
    TargetState,
    partition_key,
)
from log import FileLog
from tests.waiting import wait_until


@pytest.fixture(params=["memory", "log"])
def table_factory(request, make_log) -> Callable[[str], object]:
    if request.param == "memory":
        return lambda topic: MemoryTable()
    log = make_log()
    return lambda topic: LogTable(log, topic)


def test_offsets_contract(table_factory) -> None:
    store = OffsetStore(table_factory("connect-offsets"))
    store.start()
    part = {"filename": "/a"}
    assert store.get("c", part) is None
    store.put("c", {partition_key("c", part): (part, {"position": 10})})
    store.put("d", {partition_key("d", part): (part, {"position": 99})})
    assert store.get("c", part) == {"position": 10}
    store.put("c", {partition_key("c", part): (part, {"position": 20})})
    assert store.get_all("c") == [(part, {"position": 20})]
    store.put("c", {partition_key("c", part): (part, None)})
    assert store.get("c", part) is None and store.get("d", part) == {"position": 99}
    store.delete_connector("d")
    assert store.get_all("d") == []


def test_partition_keys_are_canonical() -> None:
    assert partition_key("c", {"b": 1, "a": 2}) == partition_key("c", {"a": 2, "b": 1})
    assert json.loads(partition_key("c", {"a": 1})) == ["c", {"a": 1}]


def test_configs_contract(table_factory) -> None:
    store = ConfigStore(table_factory("connect-configs"))
    seen: list[str] = []
    store.add_listener(seen.append)
    store.start()
    store.put_connector_config("src", {"connector.class": "X", "tasks.max": "2"})
    snap = store.snapshot()
    assert snap.connectors == {"src": {"connector.class": "X", "tasks.max": "2"}}
    assert snap.targets == {"src": TargetState.STARTED} and snap.tasks == {}
    store.put_task_configs("src", [{"task": "0"}, {"task": "1"}])
    assert store.snapshot().tasks["src"] == [{"task": "0"}, {"task": "1"}]
    store.put_target_state("src", TargetState.STOPPED)
    assert store.snapshot().targets["src"] is TargetState.STOPPED
    store.put_connector_config("other", {"connector.class": "Y"}, target=TargetState.PAUSED)
    assert store.snapshot().targets["other"] is TargetState.PAUSED
    store.remove_connector("src")
    snap = store.snapshot()
    assert "src" not in snap.connectors and "src" not in snap.tasks and "src" not in snap.targets
    assert "src" in seen and "other" in seen


def test_status_contract(table_factory) -> None:
    store = StatusStore(table_factory("connect-status"))
    store.start()
    store.put(Status("c", None, State.RUNNING, "w1"))
    store.put(Status("c", 0, State.RUNNING, "w1"))
    store.put(Status("c", 1, State.FAILED, "w1", trace="boom"))
    assert store.connector("c").state is State.RUNNING
    assert [(s.task, s.state, s.trace) for s in store.tasks("c")] == [
        (0, State.RUNNING, None),
        (1, State.FAILED, "boom"),
    ]
    store.remove_tasks("c", 1)
    assert [s.task for s in store.tasks("c")] == [0]
    store.remove_connector("c")
    assert store.connector("c") is None and store.tasks("c") == []


def test_status_of_an_older_generation_is_ignored_and_tasks_group_by_connector(
    table_factory,
) -> None:
    store = StatusStore(table_factory("connect-status"))
    store.start()
    store.put(Status("b", 1, State.RUNNING, "w2", generation=5))
    store.put(Status("b", 1, State.UNASSIGNED, "w1", generation=4))  # a zombie's word
    store.put(Status("b", 0, State.RUNNING, "w2", generation=5))
    store.put(Status("a", 10, State.FAILED, "w1", trace="x", generation=5))
    store.put(Status("a", 2, State.RUNNING, "w1", generation=5))
    assert store.tasks("b")[1].state is State.RUNNING
    store.put(Status("b", 1, State.PAUSED, "w2", generation=6))
    assert store.tasks("b")[1].state is State.PAUSED
    grouped = store.tasks_by_connector()
    assert grouped == {"a": store.tasks("a"), "b": store.tasks("b")}
    assert [s.task for s in grouped["a"]] == [2, 10]


def test_a_late_offset_commit_of_an_older_epoch_is_refused_by_every_reader(
    table_factory, make_log
) -> None:
    log = make_log()
    store = OffsetStore(LogTable(log, "connect-offsets"))
    store.start()
    p0, p1 = {"id": 0}, {"id": 1}
    k0, k1 = partition_key("src", p0), partition_key("src", p1)
    store.put("src", {k0: (p0, {"seqno": 100})}, epoch=7)  # the task's new owner
    store.put("src", {k0: (p0, {"seqno": 40}), k1: (p1, {"seqno": 5})}, epoch=6)  # a zombie
    assert store.get("src", p0) == {"seqno": 100}
    assert store.get("src", p1) == {"seqno": 5}  # no newer owner wrote p1: it counts
    replayed = OffsetStore(LogTable(log, "connect-offsets"))
    replayed.start()
    assert replayed.get("src", p0) == {"seqno": 100}
    # The header keeps the key and value Kafka's; an operator's edit (no epoch given)
    # and a deletion apply over any epoch.
    record = log.read("connect-offsets", 0, 0)[0]
    assert json.loads(record.key) == ["src", p0] and json.loads(record.value) == {"seqno": 100}
    assert dict(record.headers) == {"tributary.epoch": b"7"}
    replayed.put("src", {k0: (p0, {"seqno": 0})})
    store.refresh()
    assert store.get("src", p0) == {"seqno": 0}
    store.delete_connector("src")
    replayed.refresh()
    assert replayed.get_all("src") == []
    memory = OffsetStore(table_factory("other-offsets"))
    memory.start()
    memory.put("src", {k0: (p0, {"seqno": 3})}, epoch=2)
    memory.put("src", {k0: (p0, {"seqno": 1})}, epoch=1)
    assert memory.get("src", p0) == {"seqno": 3}


def test_log_backed_stores_survive_restart_in_kafka_formats(make_log) -> None:
    log = make_log()
    configs = ConfigStore(LogTable(log, "connect-configs"))
    configs.start()
    configs.put_connector_config("src", {"connector.class": "X"})
    configs.put_task_configs("src", [{"t": "0"}])
    configs.put_target_state("src", TargetState.STOPPED)
    raw = {r.key.decode(): json.loads(r.value) for r in log.read("connect-configs", 0, 0)}
    assert raw["connector-src"] == {"properties": {"connector.class": "X"}}
    assert raw["task-src-0"] == {"properties": {"t": "0"}}
    assert raw["commit-src"] == {"tasks": 1}
    assert raw["target-state-src"] == {"state": "PAUSED", "state.v2": "STOPPED"}
    log.close()
    again = FileLog(log.directory, background=False)
    try:
        restored = ConfigStore(LogTable(again, "connect-configs"))
        restored.start()
        snap = restored.snapshot()
        assert snap.connectors == {"src": {"connector.class": "X"}}
        assert snap.tasks == {"src": [{"t": "0"}]}
        assert snap.targets == {"src": TargetState.STOPPED}
    finally:
        again.close()


def test_uncommitted_task_configs_are_not_visible(make_log) -> None:
    log = make_log()
    log.create_topic("connect-configs", 1, config={"cleanup.policy": "compact"})
    log.append(
        "connect-configs",
        0,
        [
            json.dumps({"properties": {"a": "1"}}).encode(),
            json.dumps({"properties": {"t": "0"}}).encode(),
        ],
        keys=[b"connector-c", b"task-c-0"],
    )  # no commit-c record
    store = ConfigStore(LogTable(log, "connect-configs"))
    store.start()
    assert store.snapshot().connectors == {"c": {"a": "1"}}
    assert store.snapshot().tasks == {}


def test_two_stores_on_one_log_agree(make_log) -> None:
    log = make_log()
    a = StatusStore(LogTable(log, "connect-status"))
    b = StatusStore(LogTable(make_log(log.directory), "connect-status"))
    a.start()
    b.start()
    a.put(Status("c", None, State.RUNNING, "wa"))
    b.put(Status("c", None, State.PAUSED, "wb"))
    a.refresh()
    assert a.connector("c") == b.connector("c")
    assert a.connector("c").state is State.PAUSED  # the later write in log order wins


def test_a_write_reads_back_only_its_own_partitions(tmp_path) -> None:
    """A task's offset commit looks at the partitions it wrote, not at all 25 of the
    offsets topic (on Kafka each look is a watermark request through a consumer of its
    own: a whole refresh held a source task's polling thread for a second); another
    writer's offsets in other partitions arrive with the next whole refresh."""
    looked: list[int] = []

    class Watched(FileLog):
        def latest_offset(self, topic: str, partition: int) -> int:
            looked.append(partition)
            return super().latest_offset(topic, partition)

    log = Watched(tmp_path / "log", background=False)
    other = FileLog(tmp_path / "log", background=False)
    try:
        store = OffsetStore(LogTable(log, "connect-offsets", partitions=25))
        elsewhere = OffsetStore(LogTable(other, "connect-offsets", partitions=25))
        store.start()
        elsewhere.start()
        parts = [{"file": str(n)} for n in range(40)]
        mine, theirs = parts[0], next(
            p for p in parts[1:] if _offsets_partition("c", p) != _offsets_partition("c", parts[0])
        )
        elsewhere.put("c", {partition_key("c", theirs): (theirs, {"pos": 7})}, epoch=0)
        looked.clear()
        store.put("c", {partition_key("c", mine): (mine, {"pos": 1})}, epoch=0)
        assert set(looked) == {_offsets_partition("c", mine)}
        assert store.get("c", mine) == {"pos": 1}
        assert store.get("c", theirs) is None  # not looked at yet
        store.refresh()
        assert store.get("c", theirs) == {"pos": 7}
    finally:
        log.close()
        other.close()


def _offsets_partition(connector: str, partition: dict) -> int:
    from log import partition_for_key

    return partition_for_key(partition_key(connector, partition), 25)


def test_status_reads_that_arrive_together_share_one_refresh(make_log) -> None:
    """Readers that arrive while a refresh runs share the next one (one look at the
    topic, not one each), and it still shows them a status written before they
    arrived; a reader that arrived before a refresh began is served by it."""
    looks: list[int] = []
    held = threading.Event()
    release = threading.Event()

    class Held(LogTable):
        def refresh(self, partitions=None) -> None:
            super().refresh(partitions)
            if partitions is None and held.is_set():
                looks.append(1)
                if len(looks) == 1:
                    assert release.wait(30), "never released"

    log = make_log()
    reader = StatusStore(Held(log, "connect-status"))
    writer = StatusStore(LogTable(make_log(log.directory), "connect-status"))
    reader.start()
    writer.start()
    held.set()
    early = reader.ticket()
    first = threading.Thread(target=reader.refresh)
    first.start()
    wait_until(lambda: looks, 30, "the first refresh has read the topic")
    writer.put(Status("c", None, State.RUNNING, "wb"))  # after that read
    seen: list[State | None] = []

    def read(ticket: int) -> None:
        reader.refresh(ticket)
        status = reader.connector("c")
        seen.append(None if status is None else status.state)

    late = [threading.Thread(target=read, args=(reader.ticket(),)) for _ in range(5)]
    for thread in late:
        thread.start()
    release.set()
    for thread in [first, *late]:
        thread.join(30)
        assert not thread.is_alive()
    assert seen == [State.RUNNING] * 5
    assert len(looks) == 2
    reader.refresh(early)  # served by the first refresh, which began after it
    assert len(looks) == 2
