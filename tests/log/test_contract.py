"""The `Log` contract, run against every implementation: FileLog (a directory) and
KafkaLog, on librdkafka's mock Kafka cluster (a fresh one per test) and on a real Apache
Kafka broker (one per session, emptied before each test: tests/kafka_broker.py).

Only what the interface promises is asserted here; what one backend adds (FileLog's
segments, sizes and files; KafkaLog's handling of counts the broker chose) is tested
beside that backend. `make` opens another log on the same storage, which is how a
second process sees it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from log import (
    Consumer,
    InvalidConfigError,
    InvalidRecordError,
    InvalidTopicError,
    Log,
    OffsetAndMetadata,
    OffsetOutOfRangeError,
    Producer,
    TopicConfig,
    TopicExistsError,
    TopicPartition,
    UnknownTopicOrPartitionError,
    partition_for_key,
)

MakeLog = Callable[[], Log]


@pytest.fixture(params=["file", "kafka", "kafka-broker"])
def make(request: pytest.FixtureRequest) -> MakeLog:
    """Open logs over one storage: a directory, one mock Kafka cluster, or the real
    broker."""
    if request.param == "file":
        make_log = request.getfixturevalue("make_log")
        return lambda: make_log()
    if request.param == "kafka-broker":
        make_broker_log = request.getfixturevalue("make_broker_log")
        return lambda: make_broker_log()
    make_kafka_log = request.getfixturevalue("make_kafka_log")
    return lambda: make_kafka_log()


@pytest.fixture
def log(make: MakeLog) -> Log:
    return make()


def _drain(consumer: Consumer, want: int, timeout_s: float = 10.0) -> list:
    out: list = []
    deadline = time.monotonic() + timeout_s
    while len(out) < want and time.monotonic() < deadline:
        out.extend(consumer.poll(0.2))
    return out


def test_logs_making_one_topic_side_by_side_each_use_it_at_once(
    make: MakeLog, request: pytest.FixtureRequest
) -> None:
    """Workers starting together on a new cluster each make the internal topics and
    tolerate another having made one first (connect.storage.table.LogTable): the one
    refused must find the topic at once. On the real broker the refusal came before
    the broker's metadata showed the topic, and a worker exited with "topic
    'connect-configs' does not exist" (three distributed workers started at once)."""
    logs = [make() for _ in range(3)]
    for log in logs:
        log.list_topics()  # each client's metadata from before the topic exists
    go = threading.Barrier(len(logs))
    outcomes: list[object] = [None] * len(logs)

    def create(i: int) -> None:
        go.wait()
        try:
            logs[i].create_topic("connect-configs", 1, config={"cleanup.policy": "compact"})
            outcomes[i] = "made"
        except TopicExistsError:
            outcomes[i] = "existed"
        try:
            outcomes[i] = (outcomes[i], logs[i].partition_count("connect-configs"))
        except Exception as exc:  # the failure this test is about
            outcomes[i] = (outcomes[i], repr(exc))

    threads = [threading.Thread(target=create, args=(i,)) for i in range(len(logs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert all(isinstance(o, tuple) and isinstance(o[1], int) for o in outcomes), outcomes
    if request.node.callspec.params["make"] == "kafka":
        # The mock has no admin API: each log's metadata request auto-creates the
        # topic, so more than one may say it made it, and the registry's count
        # follows the first record of it.
        assert "made" in [o[0] for o in outcomes], outcomes
        return
    assert sorted(o[0] for o in outcomes) == ["existed", "existed", "made"], outcomes
    assert [o[1] for o in outcomes] == [1, 1, 1], outcomes


def test_implements_the_log_protocol(log: Log) -> None:
    assert isinstance(log, Log)


def test_create_describe_list(log: Log) -> None:
    desc = log.create_topic("orders", 3, config={"retention.ms": "1000"})
    assert [p.partition for p in desc.partitions] == [0, 1, 2]
    assert desc.config["retention.ms"] == 1000
    assert all(p.earliest_offset == p.latest_offset == 0 for p in desc.partitions)
    assert log.append("orders", 1, [b"a", b"b"]) == range(0, 2)
    assert log.describe_topic("orders").partitions[1].latest_offset == 2
    assert log.list_topics() == ["orders"]
    assert log.partition_count("orders") == 3
    with pytest.raises(TopicExistsError):
        log.create_topic("orders", 1)
    with pytest.raises(UnknownTopicOrPartitionError):
        log.describe_topic("missing")
    with pytest.raises(UnknownTopicOrPartitionError):
        log.partition_count("missing")
    with pytest.raises(UnknownTopicOrPartitionError):
        log.append("missing", 0, [b"x"])
    with pytest.raises(UnknownTopicOrPartitionError):
        log.append("orders", 3, [b"x"])
    assert log.list_topics() == ["orders"]  # nothing was created by those calls


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "../x", "a b", "é", "x" * 250])
def test_bad_topic_names(log: Log, name: str) -> None:
    with pytest.raises(InvalidTopicError) as info:
        log.create_topic(name, 1)
    assert info.value.name == name
    with pytest.raises(InvalidTopicError):
        log.append(name, 0, [b"x"])
    assert log.list_topics() == []


@pytest.mark.parametrize(
    ("config", "key"),
    [({"retention.ms": "soon"}, "retention.ms"), ({"no.such.key": 1}, "no.such.key")],
)
def test_bad_config_names_the_key(log: Log, config: dict, key: str) -> None:
    with pytest.raises(InvalidConfigError) as info:
        log.create_topic("t", 1, config=config)
    assert info.value.key == key
    assert log.list_topics() == []


def test_bad_partition_counts(log: Log) -> None:
    for bad in (0, -1):
        with pytest.raises(InvalidConfigError) as info:
            log.create_topic("t", bad)
        assert info.value.key == "partitions"
    assert log.list_topics() == []


def test_append_returns_offsets_and_read_bounds(log: Log) -> None:
    log.create_topic("t", 1)
    assert log.append("t", 0, [b"a", b"b", b"c"]) == range(0, 3)
    assert log.append("t", 0, [b"d"], keys=[b"k"], headers=[[("h", b"v")]]) == range(3, 4)
    recs = log.read("t", 0, 1)
    assert [(r.offset, r.value) for r in recs] == [(1, b"b"), (2, b"c"), (3, b"d")]
    assert recs[-1].key == b"k" and recs[-1].headers == (("h", b"v"),)
    assert [r.offset for r in log.read("t", 0, 0, max_records=2)] == [0, 1]
    # max_bytes never stops a read before its first record (a reader must progress).
    assert [r.offset for r in log.read("t", 0, 0, max_bytes=1)][:1] == [0]
    assert log.read("t", 0, 4) == []
    with pytest.raises(OffsetOutOfRangeError) as info:
        log.read("t", 0, 5)
    assert (info.value.offset, info.value.start, info.value.end) == (5, 0, 4)
    with pytest.raises(OffsetOutOfRangeError):
        log.read("t", 0, -1)
    assert (log.earliest_offset("t", 0), log.latest_offset("t", 0)) == (0, 4)


def test_reads_jump_back_and_forth(log: Log) -> None:
    log.create_topic("t", 2)
    log.append("t", 0, [b"%d" % i for i in range(100)])
    log.append("t", 1, [b"x"])
    assert [r.offset for r in log.read("t", 0, 90)] == list(range(90, 100))
    assert [r.offset for r in log.read("t", 0, 10, max_records=3)] == [10, 11, 12]
    assert [r.offset for r in log.read("t", 0, 13, max_records=2)] == [13, 14]
    assert log.read("t", 1, 0)[0].value == b"x"
    assert [r.value for r in log.read("t", 0, 0, max_records=1)] == [b"0"]


def test_null_values_keys_timestamps_headers(log: Log) -> None:
    log.create_topic("t", 1)
    log.append(
        "t",
        0,
        [None, b"v"],
        keys=[b"k", None],
        timestamps=[1_000, 2_000],
        headers=[[("a", b"1"), ("n", None)], []],
    )
    first, second = log.read("t", 0, 0)
    assert (first.key, first.value, first.timestamp) == (b"k", None, 1_000)
    assert first.headers == (("a", b"1"), ("n", None))
    assert (second.key, second.value, second.timestamp, second.headers) == (None, b"v", 2_000, ())


def test_compacted_topics_refuse_null_keys(log: Log) -> None:
    log.create_topic("c", 1, config={"cleanup.policy": "compact"})
    with pytest.raises(InvalidRecordError):
        log.append("c", 0, [b"v"])
    with pytest.raises(InvalidRecordError):
        log.append("c", 0, [b"v", b"w"], keys=[b"k", None])
    assert log.latest_offset("c", 0) == 0
    assert log.append("c", 0, [b"v"], keys=[b"k"]) == range(0, 1)


def test_max_message_bytes(log: Log) -> None:
    log.create_topic("t", 1, config={"max.message.bytes": 1000})
    with pytest.raises(InvalidRecordError, match=r"max\.message\.bytes"):
        log.append("t", 0, [b"x" * 2000])
    assert log.append("t", 0, [b"x" * 100]) == range(0, 1)


@pytest.mark.parametrize("codec", ["gzip", "lz4", "zstd", "none"])
def test_compressed_round_trip(make: MakeLog, codec: str) -> None:
    log = make()
    log.create_topic("z", 1, config={"compression.type": codec})
    values = [b"%d-" % i + b"payload" * 20 for i in range(500)]
    log.append("z", 0, values)
    log.append("z", 0, [b"other codec"], compression="gzip")
    assert [r.value for r in log.read("z", 0, 0, max_bytes=16 << 20)] == [*values, b"other codec"]
    assert [r.value for r in make().read("z", 0, 0, max_bytes=16 << 20)][:2] == values[:2]


def test_offset_for_timestamp(log: Log) -> None:
    log.create_topic("t", 1)
    for i in range(50):
        log.append("t", 0, [b"v%d" % i], timestamps=[1000 + 10 * i])
    assert log.offset_for_timestamp("t", 0, 0) == 0
    assert log.offset_for_timestamp("t", 0, 1000) == 0
    assert log.offset_for_timestamp("t", 0, 1001) == 1
    assert log.offset_for_timestamp("t", 0, 1250) == 25
    assert log.offset_for_timestamp("t", 0, 1490) == 49
    assert log.offset_for_timestamp("t", 0, 1491) is None


def test_another_log_sees_topics_records_and_changes(log: Log, make: MakeLog) -> None:
    log.create_topic("t", 2)
    other = make()
    assert other.partition_count("t") == 2
    log.append("t", 1, [b"x"])
    assert other.read("t", 1, 0)[0].value == b"x"
    log.create_partitions("t", 3)
    assert log.partition_count("t") == 3
    assert log.append("t", 2, [b"y"]) == range(0, 1)
    assert other.read("t", 2, 0)[0].value == b"y"
    with pytest.raises(InvalidConfigError):
        log.create_partitions("t", 2)  # never shrinks


def test_alter_topic_config(log: Log) -> None:
    log.create_topic("t", 1)
    log.alter_topic_config("t", {"retention.ms": 5000})
    assert log.describe_topic("t").config["retention.ms"] == 5000
    log.alter_topic_config("t", {"retention.ms": None})
    assert log.describe_topic("t").config["retention.ms"] == TopicConfig().retention_ms
    with pytest.raises(InvalidConfigError):
        log.alter_topic_config("t", {"segment.bytes": "x"})


def test_closed_log_refuses_calls(make: MakeLog) -> None:
    log = make()
    log.create_topic("t", 1)
    log.close()
    with pytest.raises(Exception, match="closed"):
        log.append("t", 0, [b"x"])
    log.close()  # twice is fine


def test_commit_and_fetch_group_offsets(log: Log, make: MakeLog) -> None:
    log.create_topic("t", 2)
    tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)
    assert log.committed_offsets("g") == {}
    log.commit_offsets("g", {tp0: 5, tp1: OffsetAndMetadata(7, "note")})
    log.commit_offsets("g", {tp0: 6})
    log.commit_offsets("h", {tp0: 1})
    other = make()
    for view in (log, other):
        got = view.committed_offsets("g")
        assert {tp: o.offset for tp, o in got.items()} == {tp0: 6, tp1: 7}
        assert got[tp1].metadata == "note"
        assert {tp: o.offset for tp, o in view.committed_offsets("g", [tp1]).items()} == {tp1: 7}
        assert view.committed_offsets("h", [tp1]) == {}
    with pytest.raises(ValueError, match="negative"):
        log.commit_offsets("g", {tp0: -1})


def test_producer_places_keys_by_murmur2(log: Log) -> None:
    log.create_topic("t", 3)
    keys = [b"key-%d" % i for i in range(30)]
    with Producer(log, linger_ms=1) as producer:
        for key in keys:
            producer.send("t", b"v", key)
    placed = {r.key: p for p in range(3) for r in log.read("t", p, 0)}
    assert placed == {key: partition_for_key(key, 3) for key in keys}


def test_consumer_assign_seek_poll_commit_resume(log: Log, make: MakeLog) -> None:
    log.create_topic("t", 2)
    log.append("t", 0, [b"a%d" % i for i in range(10)])
    log.append("t", 1, [b"b%d" % i for i in range(5)])
    tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)
    consumer = Consumer(log, group_id="g", auto_offset_reset="earliest", enable_auto_commit=False)
    consumer.assign([tp0, tp1])
    got = _drain(consumer, 15)
    assert sorted((r.partition, r.offset) for r in got) == (
        [(0, i) for i in range(10)] + [(1, i) for i in range(5)]
    )
    consumer.seek(tp0, 7)
    assert [r.offset for r in _drain(consumer, 3) if r.partition == 0] == [7, 8, 9]
    consumer.commit({tp0: 8, tp1: 3})
    consumer.close()
    again = Consumer(make(), group_id="g", enable_auto_commit=False)
    again.assign([tp0, tp1])
    got = _drain(again, 4)
    assert sorted((r.partition, r.offset) for r in got) == [(0, 8), (0, 9), (1, 3), (1, 4)]
    again.close()


def test_group_members_share_partitions_and_take_over(make: MakeLog) -> None:
    """Two members of one group, each on a log of its own (as two processes are) and
    polled by a thread of its own, as sink tasks are: every record is read once.

    On a real broker the first member may read everything before the second joins;
    the partitions it then hands over are committed inside the coordinator's revoke,
    before they move (log.kafka.groups), so the new owner starts after them. Each
    member learns of a move at its next poll, so the split is checked once both
    have."""
    logs = {m: make() for m in ("a", "b")}
    logs["a"].create_topic("t", 4)
    for p in range(4):
        logs["a"].append("t", p, [b"p%d-%d" % (p, i) for i in range(5)])
    seen: dict[str, list] = {"a": [], "b": []}
    assigned: dict[str, set] = {"a": set(), "b": set()}
    stop = {m: threading.Event() for m in logs}

    def member(name: str) -> None:
        consumer = Consumer(
            logs[name],
            group_id="g",
            auto_offset_reset="earliest",
            member_id=name,
            heartbeat_interval_ms=0,
        )
        consumer.subscribe(["t"])
        while not stop[name].is_set():
            seen[name].extend(consumer.poll(0.05))
            assigned[name] = set(consumer.assignment())
        consumer.close()  # commits and leaves

    threads = {m: threading.Thread(target=member, args=(m,), daemon=True) for m in logs}
    for thread in threads.values():
        thread.start()

    every = sorted(b"p%d-%d" % (p, i) for p in range(4) for i in range(5))

    def shared() -> bool:
        a, b = assigned["a"], assigned["b"]
        split = bool(a) and bool(b) and a.isdisjoint(b) and len(a | b) == 4
        return split and len(seen["a"]) + len(seen["b"]) >= 20

    _wait(shared, 30, lambda: f"seen a={len(seen['a'])} b={len(seen['b'])}, {assigned}")
    assert sorted(r.value for r in seen["a"] + seen["b"]) == every
    stop["a"].set()
    threads["a"].join(30)
    assert not threads["a"].is_alive()
    for p in range(4):
        logs["b"].append("t", p, [b"late-%d" % p])
    _wait(
        lambda: (
            sorted(r.value for r in seen["b"] if r.value.startswith(b"late"))
            == [b"late-%d" % p for p in range(4)]
            and len(assigned["b"]) == 4
        ),
        30,
    )
    stop["b"].set()
    threads["b"].join(30)
    late = [b"late-%d" % p for p in range(4)]
    assert sorted(r.value for r in seen["a"] + seen["b"]) == sorted(every + late)
    committed = logs["a"].committed_offsets("g")
    assert {tp.partition: o.offset for tp, o in committed.items()} == {p: 6 for p in range(4)}


def _wait(
    predicate: Callable[[], bool], timeout_s: float, state: Callable[[], str] = lambda: ""
) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"condition not met in time {state()}"
        time.sleep(0.05)


# ------------------------------------------------------- what the real broker holds
# Beyond the contract: on a real Apache Kafka broker the topic config KafkaLog records
# is also the broker's own, changed key by key.


def test_real_broker_takes_config_changes_key_by_key(make_broker_log, kafka_broker) -> None:
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

    log = make_broker_log()
    log.create_topic("t", 1, config={"cleanup.policy": "compact", "compression.type": "none"})
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap})
    resource = ConfigResource("topic", "t")

    def broker_config() -> dict:
        return admin.describe_configs([resource], request_timeout=10)[resource].result(11)

    # Someone else sets a key on the broker that KafkaLog never recorded.
    entry = ConfigEntry("segment.ms", "3600000", incremental_operation=AlterConfigOpType.SET)
    outside = ConfigResource("topic", "t", incremental_configs=[entry])
    admin.incremental_alter_configs([outside], request_timeout=10)[outside].result(11)

    log.alter_topic_config("t", {"retention.ms": 5000})
    got = broker_config()
    assert got["retention.ms"].value == "5000"
    assert got["compression.type"].value == "uncompressed"  # Kafka's word for none
    assert got["cleanup.policy"].value == "compact"
    assert got["segment.ms"].value == "3600000"  # a change of one key keeps the others

    log.alter_topic_config("t", {"retention.ms": None})
    got = broker_config()
    assert got["retention.ms"].is_default
    assert got["segment.ms"].value == "3600000"
    assert log.describe_topic("t").config["retention.ms"] == TopicConfig().retention_ms


def test_appends_to_a_topic_made_by_another_client_read_the_registry_once(
    make_broker_log, kafka_broker, monkeypatch
) -> None:
    """A topic made by another Kafka client is never registered: each append looked it
    up twice, each miss a round trip for the registry's end. A miss now stands for
    MISS_TTL_S; a registration another log makes after it is seen once it lapses."""
    from confluent_kafka.admin import AdminClient, NewTopic

    from log.kafka.registry import MISS_TTL_S
    from tests.waiting import wait_until

    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap})
    admin.create_topics([NewTopic("outside", 1)])["outside"].result(11)
    log = make_broker_log()
    registry = log._topics.registry
    reads: list[float] = []
    real = registry.catch_up

    def counted() -> None:
        reads.append(time.monotonic())
        real()

    monkeypatch.setattr(registry, "catch_up", counted)
    began = time.monotonic()
    for i in range(20):
        assert log.append("outside", 0, [b"%d" % i]) == range(i, i + 1)
    elapsed = time.monotonic() - began
    assert 1 <= len(reads) <= 2 * (1 + int(elapsed / MISS_TTL_S))
    make_broker_log().alter_topic_config("outside", {"retention.ms": 5000})  # registers it
    wait_until(
        lambda: log.describe_topic("outside").config["retention.ms"] == 5000,
        MISS_TTL_S + 10,
        "the other log's registration seen",
    )


@pytest.mark.parametrize(
    "queue", [{"queue.buffering.max.messages": 8}, {"queue.buffering.max.kbytes": 1}]
)
def test_appends_through_a_small_producer_queue_keep_every_record_in_order(
    make_broker_log, queue
) -> None:
    """Records without timestamps go to librdkafka a slice at a time (log.kafka.writer):
    a slice waits for room in the producer's queue (a message limit), and the records
    the queue refuses past a byte limit go again, in order, once deliveries made room."""
    log = make_broker_log(client_config=queue)
    log.create_topic("q", 1)
    values = [b"%03d-" % i + b"x" * 300 for i in range(60)]
    keys = [None if i % 7 == 0 else b"k%d" % i for i in range(60)]
    assert log.append("q", 0, values, keys=keys) == range(0, 60)
    got = log.read("q", 0, 0, max_bytes=1 << 20)
    assert [(r.key, r.value) for r in got] == list(zip(keys, values, strict=True))
