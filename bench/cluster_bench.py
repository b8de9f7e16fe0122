"""Benchmark of distributed mode; prints one JSON object.

Three `connect distributed` worker processes on one embedded log (real processes, real
HTTP), tasks as threads (300 task processes would not fit the machine):

1. create 100 VerifiableSource connectors of 3 tasks each, round-robin over the
   workers' REST APIs, and time until every connector and task is RUNNING
   (`create_100_connectors_s`); then the spread of tasks over workers
   (`task_spread_max_minus_min`) and the most times any task was started
   (`max_task_restarts`: RUNNING writes of a task in the status topic, minus one);
2. kill -9 one worker and time until all of its tasks are RUNNING elsewhere
   (`failover_s`, against `failover_budget_s` = session timeout + scheduled rebalance
   delay + 2 s);
3. throughout, a client thread sends GET requests to every worker in turn (status of a
   connector, the connector list) and `rest_p99_ms` is their p99 latency while the
   cluster rebalances (phases 1 and 2).

    python bench/cluster_bench.py [--connectors 100] [--tasks 3] [--session-ms 5000]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from log import FileLog  # noqa: E402

STRING = "org.apache.kafka.connect.storage.StringConverter"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Worker:
    def __init__(self, directory: Path, config: dict[str, str]) -> None:
        self.port = int(config["listeners"].rsplit(":", 1)[1])
        self.id = f"127.0.0.1:{self.port}"
        self.url = f"http://{self.id}"
        path = directory / f"worker-{self.port}.json"
        path.write_text(json.dumps(config))
        self.err = open(directory / f"worker-{self.port}.err", "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "connect.cli.main", "distributed", str(path)],
            cwd=directory,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
            stdout=subprocess.DEVNULL,
            stderr=self.err,
            start_new_session=True,
        )

    def wait_ready(self, client: httpx.Client, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"worker {self.id} exited with {self.proc.returncode}")
            with contextlib.suppress(httpx.HTTPError):
                if client.get(self.url + "/").status_code == 200:
                    return
            time.sleep(0.1)
        raise SystemExit(f"worker {self.id} not ready in {timeout_s} s")

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.kill()
        self.err.close()


class Prober(threading.Thread):
    """GETs against every worker in turn, recording latencies while `recording`."""

    def __init__(self, workers: list[Worker], names: list[str]) -> None:
        super().__init__(daemon=True)
        self.workers = workers
        self.names = names
        self.recording = threading.Event()
        self.done = threading.Event()
        self.latencies_ms: list[float] = []
        self.errors = 0

    def run(self) -> None:
        client = httpx.Client(timeout=10)
        i = 0
        while not self.done.is_set():
            live = [w for w in self.workers if w.proc.poll() is None]
            if not live:
                break
            worker = live[i % len(live)]
            path = (
                "/connectors" if i % 2 else f"/connectors/{self.names[i % len(self.names)]}/status"
            )
            i += 1
            started = time.perf_counter()
            try:
                client.get(worker.url + path)
            except httpx.HTTPError:
                self.errors += 1
                continue
            if self.recording.is_set():
                self.latencies_ms.append((time.perf_counter() - started) * 1000)
            time.sleep(0.01)
        client.close()


def _statuses(client: httpx.Client, worker: Worker) -> dict[str, Any]:
    response = client.get(worker.url + "/connectors", params={"expand": "status"})
    response.raise_for_status()
    return response.json()


def _all_running(statuses: dict[str, Any], names: list[str], tasks: int, live: set[str]) -> bool:
    for name in names:
        entry = statuses.get(name)
        if entry is None:
            return False
        status = entry["status"]
        if (
            status["connector"]["state"] != "RUNNING"
            or status["connector"]["worker_id"] not in live
        ):
            return False
        if len(status["tasks"]) != tasks:
            return False
        for task in status["tasks"]:
            if task["state"] != "RUNNING" or task["worker_id"] not in live:
                return False
    return True


def _wait_running(
    client: httpx.Client, workers: list[Worker], names: list[str], tasks: int, timeout_s: float
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    live = [w for w in workers if w.proc.poll() is None]
    ids = {w.id for w in live}
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            statuses = _statuses(client, live[0])
            if _all_running(statuses, names, tasks, ids):
                return statuses
        time.sleep(0.1)
    raise SystemExit(f"not all RUNNING within {timeout_s} s")


def _task_starts(log_dir: Path, topic: str) -> Counter[str]:
    """RUNNING writes per task key in the status topic (uncompacted in a short run)."""
    log = FileLog(log_dir, background=False)
    counts: Counter[str] = Counter()
    try:
        for p in range(log.partition_count(topic)):
            offset, end = log.earliest_offset(topic, p), log.latest_offset(topic, p)
            while offset < end:
                records = log.read(topic, p, offset)
                for r in records:
                    key = (r.key or b"").decode()
                    running = r.value is not None and json.loads(r.value).get("state") == "RUNNING"
                    if key.startswith("status-task-") and running:
                        counts[key] += 1
                offset = records[-1].offset + 1
    finally:
        log.close()
    return counts


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--connectors", type=int, default=100)
    parser.add_argument("--tasks", type=int, default=3)
    parser.add_argument("--session-ms", type=int, default=5000)
    parser.add_argument("--heartbeat-ms", type=int, default=1000)
    parser.add_argument("--delay-ms", type=int, default=3000)
    return parser.parse_args()


def _start_workers(directory: Path, args: argparse.Namespace, out: list[Worker]) -> None:
    """Three distributed workers on one log, appended to `out` as each starts (so the
    caller stops those that did even when a later one fails)."""
    for _ in range(3):
        port = free_port()
        config = {
            "log.dir": str(directory / "log"),
            "listeners": f"http://127.0.0.1:{port}",
            "group.id": "bench",
            "key.converter": STRING,
            "value.converter": STRING,
            "task.isolation": "thread",
            "session.timeout.ms": str(args.session_ms),
            "heartbeat.interval.ms": str(args.heartbeat_ms),
            "scheduled.rebalance.max.delay.ms": str(args.delay_ms),
            "offset.flush.interval.ms": "5000",
        }
        out.append(Worker(directory, config))


def _create_connectors(
    client: httpx.Client,
    workers: list[Worker],
    names: list[str],
    args: argparse.Namespace,
    directory: Path,
) -> tuple[float, Counter[str], int, int | None]:
    """Phase 1: (seconds until all run, tasks per worker, their spread, most restarts)."""
    started = time.monotonic()
    for i, name in enumerate(names):
        config = {
            "connector.class": "VerifiableSource",
            "tasks.max": str(args.tasks),
            "topic": f"t{i % 10}",
            "throughput": "1",
            "report.file": os.devnull,
        }
        response = client.put(f"{workers[i % 3].url}/connectors/{name}/config", json=config)
        response.raise_for_status()
    statuses = _wait_running(client, workers, names, args.tasks, 120)
    create_s = time.monotonic() - started
    per_worker = Counter(
        t["worker_id"] for entry in statuses.values() for t in entry["status"]["tasks"]
    )
    spread = max(per_worker.values()) - min(per_worker.get(w.id, 0) for w in workers)
    starts = _task_starts(directory / "log", "connect-status")
    max_restarts = max(starts.values()) - 1 if starts else None
    return create_s, per_worker, spread, max_restarts


def _fail_over(
    client: httpx.Client, workers: list[Worker], names: list[str], args: argparse.Namespace
) -> float:
    """Phase 2: kill -9 the second worker; seconds until its tasks run elsewhere."""
    started = time.monotonic()
    workers[1].kill()
    _wait_running(client, workers, names, args.tasks, 120)
    return time.monotonic() - started


def main() -> None:
    args = _parse_args()
    directory = Path(tempfile.mkdtemp(prefix="cluster-bench-"))
    workers: list[Worker] = []
    prober: Prober | None = None
    try:
        client = httpx.Client(timeout=30)
        _start_workers(directory, args, workers)
        for worker in workers:
            worker.wait_ready(client)
        names = [f"src{i:03d}" for i in range(args.connectors)]
        prober = Prober(workers, names)
        prober.start()
        prober.recording.set()
        # Phase 1
        create_s, per_worker, spread, max_restarts = _create_connectors(
            client, workers, names, args, directory
        )
        victim_tasks = per_worker[workers[1].id]
        # Phase 2
        failover_s = _fail_over(client, workers, names, args)
        prober.recording.clear()

        latencies = sorted(prober.latencies_ms)
        p99 = latencies[int(len(latencies) * 0.99) - 1] if latencies else None
        print(
            json.dumps(
                {
                    "failover_s": round(failover_s, 2),
                    "failover_budget_s": (args.session_ms + args.delay_ms) / 1000 + 2,
                    "create_100_connectors_s": round(create_s, 2),
                    "task_spread_max_minus_min": spread,
                    "max_task_restarts": max_restarts,
                    "rest_p99_ms": round(p99, 1) if p99 is not None else None,
                    "rest_p50_ms": round(statistics.median(latencies), 1) if latencies else None,
                    "rest_requests": len(latencies),
                    "rest_errors": prober.errors,
                    "connectors": args.connectors,
                    "tasks_per_connector": args.tasks,
                    "tasks_on_killed_worker": victim_tasks,
                    "tasks_per_worker": dict(sorted(per_worker.items())),
                    "session_timeout_ms": args.session_ms,
                    "scheduled_rebalance_max_delay_ms": args.delay_ms,
                }
            )
        )
    finally:
        if prober is not None:
            prober.done.set()
        for worker in workers:
            worker.stop()
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
