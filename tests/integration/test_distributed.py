"""Clusters of real `connect distributed` processes on one embedded log.

Short timeouts keep the suite quick: a worker silent for 3 s is declared dead and its
work waits 2 s more for it, so a kill -9 moves work within 3 + 2 + 2 s.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import time
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from log import FileLog, Log, UnknownTopicOrPartitionError
from log.kafka import KafkaLog
from tests.conftest import ROOT
from tests.integration.conftest import STRING, WorkerProcess, free_port
from tests.kafka import MockKafkaCluster
from tests.waiting import wait_until

SESSION_MS = 3000
DELAY_MS = 2000
BUDGET_S = (SESSION_MS + DELAY_MS) / 1000 + 2

pytestmark = [pytest.mark.integration, pytest.mark.slow]


class Cluster:
    """Distributed workers sharing `directory/log`; each worker keeps its port (and so
    its worker id) across restarts."""

    def __init__(self, directory: Path, **overrides: str) -> None:
        self.directory = directory
        self.overrides = overrides
        self.workers: dict[int, WorkerProcess] = {}

    def config(self, port: int) -> dict[str, str]:
        return {
            "log.dir": str(self.directory / "log"),
            "listeners": f"http://127.0.0.1:{port}",
            "group.id": "test-cluster",
            "key.converter": STRING,
            "value.converter": STRING,
            "offset.flush.interval.ms": "500",
            "task.shutdown.graceful.timeout.ms": "10000",
            "session.timeout.ms": str(SESSION_MS),
            "heartbeat.interval.ms": "300",
            "scheduled.rebalance.max.delay.ms": str(DELAY_MS),
            "task.isolation": "thread",
            "num.partitions": "3",
            **self.overrides,
        }

    def start(self, port: int | None = None, *, ready: bool = True) -> WorkerProcess:
        port = port or free_port()
        worker = WorkerProcess(self.directory, self.config(port), [], mode="distributed")
        self.workers[port] = worker
        return worker.wait_ready() if ready else worker

    def start_many(self, count: int) -> list[int]:
        """Start `count` workers; their ports, to restart them as the same workers.

        The first starts alone and makes the cluster's internal topics; the others then
        start side by side (on Kafka a worker takes seconds to open its log and join,
        mostly waiting on the broker). Why not all at once: on a fresh Kafka cluster a
        worker whose creation of `connect-configs` raced another's exited with "topic
        'connect-configs' does not exist" (a race of the product's, reported)."""
        ports = [free_port() for _ in range(count)]
        self.start(ports[0])
        for worker in [self.start(port, ready=False) for port in ports[1:]]:
            worker.wait_ready(60)
        return ports

    def live(self) -> list[WorkerProcess]:
        return [w for w in self.workers.values() if w.proc.poll() is None]

    def any(self) -> WorkerProcess:
        return self.live()[0]

    def create(self, name: str, config: dict[str, str]) -> None:
        code, body = self.any().request("PUT", f"/connectors/{name}/config", config)
        assert code in (200, 201), body

    def running(self, name: str, tasks: int, *, on: WorkerProcess | None = None) -> Any:
        """The status once the connector and `tasks` tasks are RUNNING on live workers."""
        status = (on or self.any()).status(name)
        if not status or status["connector"]["state"] != "RUNNING":
            return None
        live = {f"127.0.0.1:{w.port}" for w in self.live()}
        states = [(t["state"], t["worker_id"]) for t in status["tasks"]]
        if len(states) != tasks or status["connector"]["worker_id"] not in live:
            return None
        if all(s == "RUNNING" and w in live for s, w in states):
            return status
        return None

    def placement(self, names: list[str]) -> dict[str, str]:
        """'<connector>' / '<connector>-<task>' → worker id, from the status API."""
        out: dict[str, str] = {}
        for name in names:
            status = self.any().status(name)
            assert status is not None
            out[name] = status["connector"]["worker_id"]
            for task in status["tasks"]:
                out[f"{name}-{task['id']}"] = task["worker_id"]
        return out

    def stop_all(self) -> None:
        for worker in self.live():
            worker.proc.send_signal(signal.SIGTERM)
        for worker in self.workers.values():
            with contextlib.suppress(Exception):
                worker.proc.wait(60)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Callable[..., Cluster]]:
    made: list[Cluster] = []

    def factory(**overrides: str) -> Cluster:
        c = Cluster(tmp_path, **overrides)
        made.append(c)
        return c

    yield factory
    for c in made:
        for worker in c.workers.values():
            if worker.proc.poll() is None:
                with contextlib.suppress(Exception):
                    os.killpg(worker.proc.pid, signal.SIGCONT)
                worker.kill()


def source(topic: str, report: Path, *, tasks: int = 3, throughput: int = 200) -> dict[str, str]:
    return {
        "connector.class": "org.apache.kafka.connect.tools.VerifiableSourceConnector",
        "tasks.max": str(tasks),
        "topic": topic,
        "throughput": str(throughput),
        "report.file": str(report),
    }


def sink(topic: str, report: Path, *, tasks: int = 3) -> dict[str, str]:
    return {
        "connector.class": "org.apache.kafka.connect.tools.VerifiableSinkConnector",
        "tasks.max": str(tasks),
        "topics": topic,
        "report.file": str(report),
    }


def read_lines(path: Path) -> list[dict[str, Any]]:
    """A verifiable report's events. A last line without its newline is a write still
    under way (a reader can see a write half done) and is left for the next read; a
    line a SIGKILL cut short has the next process's whole line glued after it (O_APPEND),
    which is kept, the fragment dropped (Kafka's system tests keep the lines that
    parse)."""
    if not path.exists():
        return []
    text = path.read_text()
    text = text[: text.rfind("\n") + 1]
    return [_event(line) for line in text.splitlines() if line.strip()]


def _event(line: str) -> dict[str, Any]:
    try:
        return json.loads(line)
    except json.JSONDecodeError:
        start = line.find('{"', 1)
        while start != -1:
            with contextlib.suppress(json.JSONDecodeError):
                return json.loads(line[start:])
            start = line.find('{"', start + 1)
        raise


def seqnos(path: Path, flag: str | None = None) -> dict[int, list[int]]:
    """Seqnos per source task in report order: sent lines, or only lines with `flag`."""
    out: dict[int, list[int]] = defaultdict(list)
    for line in read_lines(path):
        marked = "committed" in line or "flushed" in line
        if (flag is None and marked) or (flag is not None and not line.get(flag)):
            continue
        # Why int(): through StringConverter the sink sees the key and value as text.
        out[int(line["task"])].append(int(line["seqno"]))
    return dict(out)


def topic_seqnos(where: Path | str, topic: str) -> dict[int, list[int]]:
    """Seqnos per source task in the topic, in offset order per partition; `where` is
    the embedded log's directory or a Kafka bootstrap address. No topic yet (its source
    task runs but has not written: a real broker creates the topic on the first write)
    reads as no records."""
    log: Log = FileLog(where, background=False) if isinstance(where, Path) else KafkaLog(where)
    try:
        out: dict[int, list[int]] = defaultdict(list)
        try:
            partitions = log.partition_count(topic)
        except UnknownTopicOrPartitionError:
            return {}
        for p in range(partitions):
            offset = log.earliest_offset(topic, p)
            end = log.latest_offset(topic, p)
            while offset < end:
                records = log.read(topic, p, offset)
                for r in records:
                    out[int(r.key or b"-1")].append(int(r.value or b"-1"))
                offset = records[-1].offset + 1
        return dict(out)
    finally:
        log.close()


# ----------------------------------------------------------------------------- tests


def test_connectors_created_on_one_worker_run_across_the_cluster(
    cluster: Callable[..., Cluster], tmp_path: Path
) -> None:
    c = cluster()
    a, b, w3 = c.start(), c.start(), c.start()
    c.create("src", source("numbers", tmp_path / "src.jsonl"))
    status = wait_until(lambda: c.running("src", 3, on=b), 30, "src running")
    # Every worker answers from the same replicated state.
    for worker in (a, b, w3):
        assert worker.request("GET", "/connectors")[1] == ["src"]
        assert wait_until(lambda w=worker: c.running("src", 3, on=w), 10) == status
    # Three tasks on three workers: one each.
    assert len({t["worker_id"] for t in status["tasks"]}) == 3
    # The same name created on another worker is refused by the log's order.
    code, _ = w3.request("POST", "/connectors", {"name": "src", "config": source("x", tmp_path)})
    assert code == 409
    # A config change made through a third worker reaches the tasks wherever they run.
    config = source("numbers", tmp_path / "src.jsonl", tasks=2)
    assert w3.request("PUT", "/connectors/src/config", config)[0] == 200
    wait_until(lambda: c.running("src", 2, on=a), 30, "two tasks after the change")
    assert w3.request("DELETE", "/connectors/src")[0] == 204
    wait_until(lambda: a.request("GET", "/connectors")[1] == [], 10, "deleted everywhere")
    wait_until(lambda: a.status("src") is None, 10)


def test_kill_9_moves_the_work_within_the_budget(
    cluster: Callable[..., Cluster], tmp_path: Path
) -> None:
    c = cluster()
    workers = [c.start(), c.start(), c.start()]
    c.create("src", source("numbers", tmp_path / "src.jsonl"))
    wait_until(lambda: c.running("src", 3), 30, "src running")
    placement = c.placement(["src"])
    victim = next(w for w in workers if f"127.0.0.1:{w.port}" == placement["src-0"])
    started = time.monotonic()
    victim.kill()
    survivor = next(w for w in workers if w is not victim)
    wait_until(lambda: c.running("src", 3, on=survivor), BUDGET_S + 5, "work moved")
    elapsed = time.monotonic() - started
    assert elapsed <= BUDGET_S, f"failover took {elapsed:.1f} s, budget {BUDGET_S} s"
    moved = c.placement(["src"])
    assert f"127.0.0.1:{victim.port}" not in moved.values()
    # Only the victim's work moved.
    for item, worker in placement.items():
        if worker != f"127.0.0.1:{victim.port}":
            assert moved[item] == worker, item


def test_a_new_worker_gets_a_fair_share_and_nothing_else_moves(
    cluster: Callable[..., Cluster], tmp_path: Path
) -> None:
    c = cluster()
    c.start()
    c.start()
    names = [f"src{i}" for i in range(3)]
    for name in names:
        c.create(name, source(name, tmp_path / f"{name}.jsonl", throughput=20))
    for name in names:
        wait_until(lambda name=name: c.running(name, 3), 30, f"{name} running")
    before = c.placement(names)
    newcomer = c.start()
    new_id = f"127.0.0.1:{newcomer.port}"

    def settled() -> dict[str, str] | None:
        if not all(c.running(name, 3) for name in names):
            return None
        placement = c.placement(names)
        tasks = Counter(w for item, w in placement.items() if item[-1].isdigit() and "-" in item)
        return placement if tasks[new_id] == 3 else None

    after = wait_until(settled, 30, "the new worker's share")
    tasks_per_worker = Counter(w for item, w in after.items() if "-" in item)
    assert sorted(tasks_per_worker.values()) == [3, 3, 3]
    connectors_per_worker = Counter(after[name] for name in names)
    assert max(connectors_per_worker.values()) == 1
    for item, worker in after.items():
        if worker != new_id:
            assert before[item] == worker, f"{item} moved between old workers"


def _pipeline(c: Cluster, tmp_path: Path) -> tuple[Path, Path]:
    sent, received = tmp_path / "source.jsonl", tmp_path / "sink.jsonl"
    c.create("vsrc", source("verifiable", sent))
    c.create("vsink", sink("verifiable", received))
    wait_until(lambda: c.running("vsrc", 3) and c.running("vsink", 3), 60, "pipeline running")
    return sent, received


def _drain(c: Cluster, sent: Path, received: Path) -> None:
    """Pause the source and wait until the sink has flushed everything sent."""
    assert c.any().request("PUT", "/connectors/vsrc/pause")[0] == 202

    def paused() -> bool:
        status = c.any().status("vsrc")
        return bool(status) and all(t["state"] == "PAUSED" for t in status["tasks"])

    wait_until(paused, 30, "source paused")
    time.sleep(0.5)  # a poll under way at the pause may still add a batch

    def caught_up() -> bool:
        flushed = seqnos(received, "flushed")
        committed = seqnos(sent, "committed")
        return all(set(flushed.get(t, ())) >= set(s) for t, s in committed.items())

    wait_until(caught_up, 60, "sink caught up")


def _bounce_cluster(
    cluster: Callable[..., Cluster], tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> tuple[Cluster, Path | str]:
    """A cluster on the embedded log, or on the session's real Kafka broker (emptied
    first; its sink consumers' session at 6 s, the least a real coordinator takes);
    with where its data topic is read back from."""
    if backend == "file":
        return cluster(), tmp_path / "log"
    broker = request.getfixturevalue("kafka_broker")
    broker.empty()
    c = cluster(
        **{
            "bootstrap.servers": broker.bootstrap,
            "consumer.session.timeout.ms": "6000",
            "consumer.heartbeat.interval.ms": "500",
        }
    )
    return c, broker.bootstrap


@pytest.mark.parametrize("backend", ["file", "broker"])
def test_rolling_clean_restarts_lose_and_repeat_nothing_then_rolling_kill_9s_lose_nothing(
    cluster: Callable[..., Cluster], tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    """Both rolling bounces on one cluster and pipeline, each checked once drained (on
    Kafka, starting a cluster and its pipeline cost about as much as a bounce)."""
    c, where = _bounce_cluster(cluster, tmp_path, backend, request)
    ports = c.start_many(3)
    sent, received = _pipeline(c, tmp_path)
    # Clean restarts: nothing lost, nothing repeated.
    for _round in range(2 if backend == "file" else 1):  # one round on the broker: time
        for port in ports:
            before = len(read_lines(received))
            assert c.workers[port].stop() == 0
            c.start(port)
            wait_until(lambda: c.running("vsrc", 3) and c.running("vsink", 3), 60, "running")
            wait_until(lambda b=before: len(read_lines(received)) > b + 50, 30, "progress")
    _drain(c, sent, received)
    for task, numbers in seqnos(sent, "committed").items():
        assert sorted(numbers) == list(range(len(numbers))), f"source task {task}"
    flushed = seqnos(received, "flushed")
    for task, numbers in seqnos(sent, "committed").items():
        got = sorted(flushed[task])
        # On Kafka too: a sink task commits what it hands over inside the coordinator's
        # revoke, before the partitions move (log.kafka.groups).
        assert got == sorted(set(got)), f"duplicates for source task {task}"
        assert set(numbers) <= set(got), f"missing for source task {task}"
    # Kill -9s, the source running again: nothing lost (a redelivery is allowed).
    assert c.any().request("PUT", "/connectors/vsrc/resume")[0] == 202
    for port in ports:
        before = len(read_lines(received))
        c.workers[port].kill()
        c.start(port)
        wait_until(lambda: c.running("vsrc", 3) and c.running("vsink", 3), 60, "running")
        wait_until(lambda b=before: len(read_lines(received)) > b + 50, 30, "progress")
    _drain(c, sent, received)
    in_topic = topic_seqnos(where, "verifiable")
    flushed = seqnos(received, "flushed")
    for task, numbers in in_topic.items():
        top = max(numbers)
        assert set(numbers) == set(range(top + 1)), f"gap in the topic for task {task}"
        assert set(flushed[task]) >= set(numbers), f"sink missed records of task {task}"


def test_pause_is_cluster_wide_and_survives_a_full_restart(
    cluster: Callable[..., Cluster], tmp_path: Path
) -> None:
    c = cluster()
    ports = c.start_many(3)
    c.create("src", source("numbers", tmp_path / "src.jsonl"))
    wait_until(lambda: c.running("src", 3), 30, "src running")
    assert c.workers[ports[1]].request("PUT", "/connectors/src/pause")[0] == 202

    def paused_everywhere() -> bool:
        for worker in c.live():
            status = worker.status("src")
            states = [status["connector"]["state"]] + [t["state"] for t in status["tasks"]]
            if states != ["PAUSED"] * 4:
                return False
        return True

    wait_until(paused_everywhere, 30, "paused on every worker")
    c.stop_all()
    for port in ports:
        c.start(port)
    wait_until(paused_everywhere, 30, "still paused after a full restart")
    written = sum(len(s) for s in topic_seqnos(tmp_path / "log", "numbers").values())
    time.sleep(1)
    assert sum(len(s) for s in topic_seqnos(tmp_path / "log", "numbers").values()) == written
    assert c.any().request("PUT", "/connectors/src/resume")[0] == 202
    wait_until(lambda: c.running("src", 3), 30, "resumed")


def test_a_stalled_worker_is_fenced_and_writes_nothing_after_it_wakes(
    cluster: Callable[..., Cluster], tmp_path: Path
) -> None:
    c = cluster(**{"task.isolation": "process"})
    workers = [c.start(), c.start(), c.start()]
    c.create("src", source("numbers", tmp_path / "src.jsonl", throughput=100))
    wait_until(lambda: c.running("src", 3), 60, "src running")
    placement = c.placement(["src"])
    victim = next(w for w in workers if f"127.0.0.1:{w.port}" == placement["src-0"])
    os.killpg(victim.proc.pid, signal.SIGSTOP)  # the worker and its task processes
    try:
        survivor = next(w for w in workers if w is not victim)

        def moved() -> bool:
            status = c.running("src", 3, on=survivor)
            live = {t["worker_id"] for t in status["tasks"]} if status else set()
            return bool(status) and f"127.0.0.1:{victim.port}" not in live

        wait_until(moved, BUDGET_S + 10, "work moved off the stalled worker")
        time.sleep(1)
    finally:
        os.killpg(victim.proc.pid, signal.SIGCONT)
    woke = time.monotonic()
    # It learns of its eviction, rejoins, and may get a share back later; meanwhile
    # nothing it wrote for the old generation may land.
    wait_until(lambda: c.running("src", 3), 30, "running after the wake-up")
    time.sleep(max(0.0, 3 - (time.monotonic() - woke)))
    assert c.any().request("PUT", "/connectors/src/pause")[0] == 202
    wait_until(
        lambda: all(
            t["state"] == "PAUSED" for t in (c.any().status("src") or {"tasks": []})["tasks"]
        ),
        30,
        "paused",
    )
    for task, numbers in topic_seqnos(tmp_path / "log", "numbers").items():
        # One rewind at most per hand-over (the new owner resumes from the last
        # committed offset); a zombie writing after the wake-up would add another run
        # of old numbers after the new owner's.
        rewinds = sum(1 for x, y in itertools.pairwise(numbers) if y <= x)
        assert rewinds <= 1, f"task {task}: {rewinds} rewinds"
        assert set(numbers) == set(range(max(numbers) + 1)), f"task {task} has a gap"


def test_restarts_and_cluster_logger_levels_reach_the_owner_from_any_worker(
    cluster: Callable[..., Cluster],
) -> None:
    c = cluster()
    workers = [c.start(), c.start()]
    c.create(
        "mock",
        {
            "connector.class": "org.apache.kafka.connect.tools.MockSourceConnector",
            "mock_mode": "task-failure",
            "delay_ms": "300",
        },
    )

    def task_state(worker: WorkerProcess) -> str | None:
        status = worker.status("mock")
        return status["tasks"][0]["state"] if status and status["tasks"] else None

    wait_until(lambda: task_state(workers[0]) == "FAILED", 30, "the task failed")
    status = workers[1].status("mock")
    assert "MockFailure" in status["tasks"][0]["trace"]
    owner = status["tasks"][0]["worker_id"]
    other = next(w for w in workers if f"127.0.0.1:{w.port}" != owner)
    # Restart through the worker that does not run the task.
    code, body = other.request("POST", "/connectors/mock/restart?includeTasks=true&onlyFailed=true")
    assert code == 202 and body["tasks"][0]["state"] == "RESTARTING"
    wait_until(lambda: task_state(other) == "RUNNING", 30, "restarted by its owner")
    wait_until(lambda: task_state(other) == "FAILED", 30, "failed again")
    assert other.request("POST", "/connectors/mock/tasks/0/restart")[0] == 204
    wait_until(lambda: task_state(other) == "RUNNING", 30, "task restart")
    assert other.request("POST", "/connectors/mock/tasks/7/restart")[0] == 404

    # A cluster-scope level applies on every worker; a worker-scope one only on its own.
    def level(worker: WorkerProcess, logger: str) -> str | None:
        code, body = worker.request("GET", f"/admin/loggers/{logger}")
        return body["level"] if code == 200 else None  # 404: not set explicitly

    code, _ = other.request(
        "PUT", "/admin/loggers/connect.herder?scope=cluster", {"level": "DEBUG"}
    )
    assert code == 204
    for worker in workers:
        wait_until(lambda w=worker: level(w, "connect.herder") == "DEBUG", 10, "cluster level")
    assert workers[0].request("PUT", "/admin/loggers/connect.worker", {"level": "ERROR"})[0] == 200
    assert level(workers[0], "connect.worker") == "ERROR"
    assert level(workers[1], "connect.worker") != "ERROR"


@pytest.mark.parametrize("backend", ["mock", "broker"])
def test_on_kafka_a_pipeline_survives_a_clean_restart_and_a_kill_9(
    cluster: Callable[..., Cluster], tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    """On librdkafka's mock (this test's own: topic names are the defaults) and on the
    session's real Apache Kafka broker (emptied first)."""
    kafka = MockKafkaCluster() if backend == "mock" else None
    overrides = {}
    if kafka is not None:
        bootstrap = kafka.bootstrap
    else:
        broker = request.getfixturevalue("kafka_broker")
        broker.empty()
        bootstrap = broker.bootstrap
        # A real coordinator refuses a consumer session under 6 s (the cluster's is 3 s,
        # which the sink tasks' consumers would take by default).
        overrides = {"consumer.session.timeout.ms": "6000", "consumer.heartbeat.interval.ms": "500"}
    c = None
    try:
        # The mock auto-creates topics with 4 partitions: the internal topics ask for fewer.
        c = cluster(
            **{
                "bootstrap.servers": bootstrap,
                "offset.storage.partitions": "1",
                "status.storage.partitions": "1",
                **overrides,
            }
        )
        ports = [free_port(), free_port()]
        for port in ports:
            c.start(port)
        if kafka is None:  # GET / names the real cluster
            assert c.any().request("GET", "/")[1]["kafka_cluster_id"] == broker.cluster_id
        sent, received = tmp_path / "source.jsonl", tmp_path / "sink.jsonl"
        c.create("vsrc", source("verifiable", sent, tasks=2))
        c.create("vsink", sink("verifiable", received, tasks=2))
        wait_until(lambda: c.running("vsrc", 2) and c.running("vsink", 2), 60, "running")
        wait_until(lambda: len(read_lines(received)) > 100, 30, "progress")
        assert c.workers[ports[0]].stop() == 0  # clean: final commits, LEAVE
        c.start(ports[0])
        wait_until(lambda: c.running("vsrc", 2) and c.running("vsink", 2), 60, "back")
        before = len(read_lines(received))
        wait_until(lambda: len(read_lines(received)) > before + 100, 30, "progress again")
        started = time.monotonic()
        c.workers[ports[1]].kill()
        wait_until(lambda: c.running("vsrc", 2) and c.running("vsink", 2), 60, "failover")
        assert time.monotonic() - started <= BUDGET_S
        before = len(read_lines(received))
        wait_until(lambda: len(read_lines(received)) > before + 100, 30, "progress after")
        _drain(c, sent, received)
        in_topic = topic_seqnos(bootstrap, "verifiable")
        flushed = seqnos(received, "flushed")
        assert sorted(in_topic) == [0, 1]
        for task, numbers in in_topic.items():
            assert set(numbers) == set(range(max(numbers) + 1)), f"gap in task {task}"
            assert set(flushed[task]) >= set(numbers), f"sink missed records of task {task}"
    finally:
        for worker in c.live() if c is not None else ():
            worker.kill()
        if kafka is not None:
            kafka.stop()


def test_the_shipped_distributed_config_runs_a_cluster(tmp_path: Path) -> None:
    """configs/connect-distributed.json as shipped, from a checkout-like directory;
    only the listener differs between the two workers of one machine."""
    shipped = json.loads((ROOT / "configs" / "connect-distributed.json").read_text())
    assert shipped["log.dir"] == "data/log" and shipped["group.id"]
    workers = []
    try:
        for _ in range(2):
            config = {k: str(v) for k, v in shipped.items() if k != "listeners"} | {
                "listeners": f"http://127.0.0.1:{free_port()}"
            }
            workers.append(WorkerProcess(tmp_path, config, [], mode="distributed").wait_ready())
        config = source("numbers", tmp_path / "src.jsonl", tasks=2)
        assert workers[0].request("PUT", "/connectors/src/config", config)[0] == 201
        status = wait_until(
            lambda: (
                (s := workers[1].status("src"))
                and [t["state"] for t in s["tasks"]] == ["RUNNING"] * 2
                and s
            ),
            60,
            "running",
        )
        assert len({t["worker_id"] for t in status["tasks"]}) == 2
        assert (tmp_path / "data" / "log").is_dir()
    finally:
        for worker in workers:
            worker.stop()


def test_the_shipped_kafka_config_runs_a_cluster_on_a_real_broker(
    tmp_path: Path, kafka_broker
) -> None:
    """configs/connect-distributed-kafka.json as shipped, for a broker on this machine
    (`scripts/kafka start`); only the ports differ: the broker's (9092 as shipped) and
    each worker's listener. Its state lives in Kafka's topics, none on local disk."""
    shipped = json.loads((ROOT / "configs" / "connect-distributed-kafka.json").read_text())
    assert shipped["bootstrap.servers"] == "127.0.0.1:9092" and "log.dir" not in shipped
    kafka_broker.empty()
    workers = []
    try:
        for _ in range(2):
            config = {k: str(v) for k, v in shipped.items()} | {
                "bootstrap.servers": f"127.0.0.1:{kafka_broker.port}",
                "listeners": f"http://127.0.0.1:{free_port()}",
            }
            workers.append(WorkerProcess(tmp_path, config, [], mode="distributed").wait_ready())
        assert workers[0].request("GET", "/")[1]["kafka_cluster_id"] == kafka_broker.cluster_id
        config = source("numbers", tmp_path / "src.jsonl", tasks=2)
        assert workers[0].request("PUT", "/connectors/src/config", config)[0] == 201
        status = wait_until(
            lambda: (
                (s := workers[1].status("src"))
                and [t["state"] for t in s["tasks"]] == ["RUNNING"] * 2
                and s
            ),
            60,
            "running",
        )
        assert len({t["worker_id"] for t in status["tasks"]}) == 2
        wait_until(
            lambda: len(topic_seqnos(kafka_broker.bootstrap, "numbers")) == 2, 30, "records"
        )
        with KafkaLog(kafka_broker.bootstrap) as log:
            internal = {"connect-configs", "connect-offsets", "connect-status", "connect-group"}
            assert internal <= set(log.list_topics())
        assert not (tmp_path / "data").exists()
    finally:
        for worker in workers:
            worker.stop()


def test_offsets_edited_through_one_worker_apply_where_the_task_runs(
    cluster: Callable[..., Cluster], tmp_path: Path
) -> None:
    c = cluster()
    a, b = c.start(), c.start()
    c.create("src", source("numbers", tmp_path / "src.jsonl", tasks=1))
    wait_until(lambda: c.running("src", 1), 30, "running")
    assert a.request("PUT", "/connectors/src/stop")[0] == 204
    wait_until(lambda: (a.status("src") or {}).get("connector", {}).get("state") == "STOPPED", 30)
    body = {"offsets": [{"partition": {"id": 0}, "offset": {"seqno": 1000}}]}
    for worker in (a, b):  # every worker sees the same offsets, whichever wrote them
        assert b.request("PATCH", "/connectors/src/offsets", body)[0] == 200
        assert worker.request("GET", "/connectors/src/offsets")[1]["offsets"] == body["offsets"]
    assert a.request("PUT", "/connectors/src/resume")[0] == 202
    wait_until(lambda: c.running("src", 1), 30, "running again")
    wait_until(lambda: 1001 in topic_seqnos(tmp_path / "log", "numbers").get(0, []), 30, "resumed")
    numbers = topic_seqnos(tmp_path / "log", "numbers")[0]
    resumed = numbers.index(1001)
    assert numbers[resumed:] == list(range(1001, 1001 + len(numbers) - resumed))


def test_rebalance_metrics_follow_the_generations(
    cluster: Callable[..., Cluster], tmp_path: Path
) -> None:
    c = cluster()
    a = c.start()
    c.create("src", source("numbers", tmp_path / "src.jsonl", tasks=2))
    wait_until(lambda: c.running("src", 2), 30, "running")
    b = c.start()
    wait_until(lambda: c.running("src", 2) and len(c.placement(["src"]).values()) > 1, 30)

    def metrics(worker: WorkerProcess) -> dict[str, float]:
        req = urllib.request.Request(worker.url + "/metrics")
        with urllib.request.urlopen(req, timeout=10) as response:
            text = response.read().decode()
        return {
            line.rsplit(" ", 1)[0].removesuffix("{}"): float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith("tributary_worker_")
        }

    def settled() -> dict[str, float] | None:
        ma, mb = metrics(a), metrics(b)
        same = ma["tributary_worker_rebalance_epoch"] == mb["tributary_worker_rebalance_epoch"]
        tasks = ma["tributary_worker_assigned_tasks"] + mb["tributary_worker_assigned_tasks"]
        return ma if same and tasks == 2 and mb["tributary_worker_group_members"] == 2 else None

    ma = wait_until(settled, 30, "both workers on one generation")
    assert ma["tributary_worker_rebalance_completed_total"] >= 2  # alone, then with b
    assert ma["tributary_worker_rebalance_epoch"] >= 2
    assert ma["tributary_worker_rebalance_rebalancing"] == 0
    leader = f'tributary_worker_rebalance_leader{{leader="127.0.0.1:{a.port}"}}'
    assert ma[leader] == 1  # the first to join leads
    assert ma["tributary_worker_rebalance_seconds_count"] >= 2
    assert ma["tributary_worker_rebalance_time_since_last_rebalance_seconds"] >= 0
