"""Zombie fencing before a new task generation of an exactly-once source (KIP-618's
round, connect.herder.fencing): on the real embedded log and config topic, a
producer of the old generation is fenced (its open transaction never shows), the
round happens once per generation (the task-count record), 1 → 1 is left to the new
task's own init, and a standalone herder runs it before its tasks start and on
`fence_zombies` (PUT /connectors/{name}/fence), offsets altered or reset fence the
connector's tasks first, and a `preparing` worker fences for others while its own
tasks run without transactions."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from connect.api import ConnectError
from connect.herder import fencing
from connect.herder.api import BadRequestError
from connect.herder.fencing import fence_zombies
from connect.storage import ConfigStore, LogTable, OffsetStore
from connect.storage.offsets import encode_offsets, partition_key
from connect.worker.exactly_once_config import sink_isolation_level, transactional_id
from log import FileLog, ProducerFencedError, partition_for_key
from tests.waiting import wait_until

EOS = {"exactly.once.source.support": "enabled", "group.id": "g"}


def _tasks(n: int, tag: str = "") -> list[dict[str, str]]:
    return [{"id": str(i), "tag": tag} for i in range(n)]


@pytest.fixture
def configs(file_log: FileLog) -> ConfigStore:
    store = ConfigStore(LogTable(file_log, "connect-configs"))
    store.start()
    return store


def _round(configs: ConfigStore, log: FileLog) -> int:
    return fence_zombies(configs, log, EOS, worker_id="w", name="c", props={})


def test_the_old_generation_is_fenced_once_and_its_open_transaction_never_shows(
    file_log: FileLog, configs: ConfigStore
) -> None:
    configs.put_task_configs("c", _tasks(3))
    assert configs.fencing_state("c")[:2] == (True, None)
    assert _round(configs, file_log) == 0  # the first generation: only the record
    assert configs.fencing_state("c")[:3] == (False, 3, 3)
    # Task 2 of that generation, alive somewhere, in the middle of a transaction.
    file_log.create_topic("t")
    zombie = file_log.transactional_producer("g-c-2")
    zombie.init_transactions()
    zombie.begin_transaction()
    zombie.append("t", 0, [b"zombie"])
    configs.put_task_configs("c", _tasks(2))
    assert _round(configs, file_log) == 3  # ids 0, 1 and 2 of the old generation
    assert configs.fencing_state("c")[:3] == (False, 2, 2)
    with pytest.raises(ProducerFencedError):
        zombie.append("t", 0, [b"late"])
    assert file_log.read("t", 0, 0, isolation_level="read_committed") == []
    assert file_log.last_stable_offset("t", 0) == file_log.latest_offset("t", 0)
    assert _round(configs, file_log) == 0  # once per generation


def test_one_task_to_one_is_left_to_the_new_tasks_own_init(
    file_log: FileLog, configs: ConfigStore
) -> None:
    configs.put_task_configs("c", _tasks(1, "a"))
    _round(configs, file_log)
    configs.put_task_configs("c", _tasks(1, "b"))
    assert _round(configs, file_log) == 0
    assert configs.fencing_state("c")[:3] == (False, 1, 1)
    configs.put_task_configs("c", _tasks(2, "b"))
    assert _round(configs, file_log) == 1  # 1 → 2: the one old id


def test_a_generation_committed_during_the_round_fails_it(
    file_log: FileLog, configs: ConfigStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    configs.put_task_configs("c", _tasks(2))
    _round(configs, file_log)
    configs.put_task_configs("c", _tasks(3))
    real = fencing.fence_producers

    def racing(*args: Any, **kwargs: Any) -> None:  # another worker writes meanwhile
        real(*args, **kwargs)
        configs.put_task_configs("c", _tasks(4))

    monkeypatch.setattr(fencing, "fence_producers", racing)
    with pytest.raises(ConnectError, match="changed while"):
        _round(configs, file_log)
    assert configs.fencing_state("c")[:2] == (True, 2)  # no record: the next round runs


def test_a_standalone_herder_fences_before_its_tasks_and_on_request(
    tmp_path: Path, start_herder: Any
) -> None:
    herder = start_herder(EOS)
    config = {
        "connector.class": "VerifiableSource",
        "topic": "v",
        "tasks.max": "2",
        "throughput": "50",
    }
    herder.put_connector_config("v", {"name": "v", **config}, allow_replace=False)

    def running() -> bool:
        status = herder.connector_status("v")
        return len(status.tasks) == 2 and all(t.state == "RUNNING" for t in status.tasks)

    wait_until(running, 30, "two tasks running")
    assert herder.configs.fencing_state("v")[:3] == (False, 2, 2)
    herder.put_connector_config("v", {"name": "v", **config, "tasks.max": "3"}, allow_replace=True)
    wait_until(lambda: herder.configs.fencing_state("v")[:3] == (False, 3, 3), 30, "the round")
    herder.fence_zombies("v")  # nothing pending: a no-op, no error
    sink = {"connector.class": "FileStreamSink", "topics": "v", "file": str(tmp_path / "o")}
    herder.put_connector_config("s", {"name": "s", **sink}, allow_replace=False)
    with pytest.raises(BadRequestError, match="not a source"):
        herder.fence_zombies("s")


def test_fencing_needs_exactly_once_on(start_herder: Any) -> None:
    herder = start_herder()
    herder.put_connector_config(
        "v",
        {"name": "v", "connector.class": "VerifiableSource", "topic": "v", "throughput": "1"},
        allow_replace=False,
    )
    with pytest.raises(BadRequestError, match=re.escape("exactly.once.source.support")):
        herder.fence_zombies("v")


def _zombie_offset(log: FileLog, tid: str, task: int, seqno: int) -> Any:
    """A producer of `tid` (a task of the connector still alive somewhere) with an
    open transaction that holds an offset of connector v's task `task`."""
    zombie = log.transactional_producer(tid)
    zombie.init_transactions()
    zombie.begin_transaction()
    partition = {"id": task}
    items, _ = encode_offsets({partition_key("v", partition): (partition, {"seqno": seqno})}, 0)
    ((key, value),) = items
    zombie.append("connect-offsets", partition_for_key(key, 25), [value], keys=[key])
    return zombie


def _stopped_with_offsets(herder: Any, tasks: int) -> None:
    config = {
        "connector.class": "VerifiableSource",
        "topic": "v",
        "tasks.max": str(tasks),
        "throughput": "200",
    }
    herder.put_connector_config("v", {"name": "v", **config}, allow_replace=False)
    wait_until(lambda: len(herder.connector_offsets("v")) == tasks, 30, "every task's offsets")
    herder.stop_connector("v")
    wait_until(lambda: herder.connector_status("v").tasks == [], 30, "the tasks stopped")


def test_offsets_altered_or_reset_fence_the_connectors_tasks_first(start_herder: Any) -> None:
    """KIP-875 on an exactly-once source: a task of the connector still alive
    somewhere (a zombie, mid-transaction) can no longer commit its offsets over the
    operator's, once PATCH or DELETE /connectors/{name}/offsets has answered."""
    herder = start_herder(EOS)
    _stopped_with_offsets(herder, 2)
    ids = [transactional_id(herder.config, "w1", "v", i) for i in range(2)]
    zombie = _zombie_offset(herder.log, ids[1], 1, 10**6)
    herder.alter_connector_offsets("v", [{"partition": {"id": 0}, "offset": {"seqno": 5}}])
    with pytest.raises(ProducerFencedError):
        zombie.commit_transaction()
    offsets = {p["id"]: o["seqno"] for p, o in herder.offsets.get_all("v")}
    assert offsets[0] == 5 and offsets[1] < 10**6
    zombie = _zombie_offset(herder.log, ids[0], 0, 10**6)
    herder.reset_connector_offsets("v")
    with pytest.raises(ProducerFencedError):
        zombie.commit_transaction()
    assert herder.connector_offsets("v") == []


def test_a_preparing_worker_fences_for_others_but_runs_its_tasks_without_transactions(
    start_herder: Any,
) -> None:
    """`exactly.once.source.support=preparing`, Kafka's first step of a rolling
    upgrade: rounds run (the task-count record, PUT /fence, offsets changes), sinks
    read committed, yet the source tasks take no transactional producer."""
    preparing = {"exactly.once.source.support": "preparing"}
    assert sink_isolation_level(preparing, {}) == "read_committed"
    herder = start_herder(preparing)
    _stopped_with_offsets(herder, 2)
    assert herder.configs.fencing_state("v")[1] == 2, "the round ran before the tasks"
    ids = [transactional_id(herder.config, "w1", "v", i) for i in range(2)]
    assert [herder.log.transactions.describe(t) for t in ids] == [None, None], "no producer"
    assert not herder.log.partition("v", 0).is_transactional()
    zombie = _zombie_offset(herder.log, ids[0], 0, 10**6)  # an enabled worker's task
    herder.reset_connector_offsets("v")
    with pytest.raises(ProducerFencedError):
        zombie.commit_transaction()
    assert herder.connector_offsets("v") == []
    herder.fence_zombies("v")  # accepted (the stop's generation of no tasks)
    assert herder.configs.fencing_state("v")[:2] == (False, 0)


def test_offsets_of_a_connector_with_its_own_offsets_topic_are_changed_there(
    start_herder: Any,
) -> None:
    """An exactly-once task reads its own `offsets.storage.topic` first: an offset
    altered or reset in the worker's topic alone would be shadowed there."""
    herder = start_herder(EOS)
    config = {
        "connector.class": "VerifiableSource",
        "topic": "v",
        "throughput": "200",
        "offsets.storage.topic": "v-offsets",
    }
    herder.put_connector_config("v", {"name": "v", **config}, allow_replace=False)
    own = OffsetStore(LogTable(herder.log, "v-offsets", partitions=25))
    wait_until(lambda: herder.connector_offsets("v") != [], 30, "the task's offsets")
    herder.stop_connector("v")
    wait_until(lambda: herder.connector_status("v").tasks == [], 30, "the task stopped")
    own.start()
    herder.alter_connector_offsets("v", [{"partition": {"id": 0}, "offset": {"seqno": 3}}])
    assert own.get_all("v") == [({"id": 0}, {"seqno": 3})]
    assert herder.offsets.get_all("v") == [({"id": 0}, {"seqno": 3})]
    assert herder.connector_offsets("v") == [{"partition": {"id": 0}, "offset": {"seqno": 3}}]
    herder.reset_connector_offsets("v")
    assert own.get_all("v") == [] and herder.connector_offsets("v") == []
