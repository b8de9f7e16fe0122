"""Tributary beside Apache Kafka Connect and Debezium, measured in one run; prints one
JSON line.

One run starts one Kafka broker (`scripts/kafka`), one private PostgreSQL server (tests/
pg.py's, through bench/cdc_bench.py) and one Kafka Connect worker (`scripts/kafka-connect`,
Debezium's PostgreSQL connector on its plugin path), then sends the same work through
both systems, one system at a time, by the same REST calls with the same connector
configs (Tributary takes Kafka Connect's and Debezium's class names):

1. file → topic → file, `--lines` lines of 100 bytes (pipeline_bench's input), through
   FileStreamSource and FileStreamSink with JsonConverter, schemas.enable=false:
   Tributary on the embedded log (its default task processes), Tributary on KafkaLog
   (`bootstrap.servers`: tasks as threads), Kafka Connect. The clock starts at the
   first POST /connectors and stops when the sink file holds every input byte; the
   file is then compared with the input.
2. PostgreSQL (bench/peers_cdc.py): a table of `--rows` rows, `--changes` changes to
   it in transactions of 1,000 held back by a slot per system, Debezium's envelope as
   JSON: the snapshot (`snapshot.mode=initial_only`), the stream of the backlog
   (`snapshot.mode=no_data` on the slot made before the changes), and commit→topic
   latency at a fixed 5,000 changes/s. Completion is read from the topic's high
   watermark; latency is the record's Kafka timestamp minus a clock_timestamp()
   column, the topics created with message.timestamp.type=LogAppendTime so that the
   broker, not either system, stamps the time of the append.

    python bench/peers_bench.py [--lines N] [--rows N] [--changes N]
                                [--latency-s S] [--connect-heap 1g] [--dir DIR]

Fair settings (identical where both systems have the key):
- Kafka Connect 4.x standalone (Tributary's worker is standalone too), heap -Xms256m
  -Xmx1g with G1 (`--connect-heap`; the job's largest batch is a few MB), its producer
  and consumer as shipped (no linger.ms, batch.size or fetch override), the file
  connectors' own batch.size (2,000 lines per poll), offset.flush.interval.ms as
  shipped (60 s, Tributary's default as well).
- Debezium 3.x, keys from its PostgreSQL connector documentation: plugin.name=pgoutput;
  max.batch.size=8192 and max.queue.size=32768 (four times the defaults 2,048 and
  8,192, the queue kept four batches deep as shipped: the documented way to raise
  throughput); snapshot.fetch.size=10240 (the default); poll.interval.ms=100 (default
  500; lower favours Debezium's latency). Tributary gets the same config (it has no
  queue: max.queue.size is accepted and unused).
- Same slot and publication set-up for both: the bench creates one publication per
  table (publication.autocreate.mode=disabled) and, for the stream and the latency
  run, each system's pgoutput slot before the changes it must read.
- Topics are created by the bench (one partition, LogAppendTime) for every run on
  Kafka, so neither system's topic creation is in a figure.

Memory: `/proc/PID/status` VmHWM (the kernel's peak resident set) of each worker's
process tree, read every 50 ms (new children looked for every 0.5 s), each process's
peak kept after it exits, and the peaks summed: for Kafka Connect one JVM (its peak
over everything it ran: both file connectors and every CDC run); for Tributary the
worker and its task processes, an upper bound on the tree's peak since they need not
peak at the same moment. `worker_rss_mb` is the larger of the two Tributary workers
(embedded: the worker and its 2 task processes, file pipeline; KafkaLog: one process,
tasks as threads, the file pipeline and every CDC run).

Keys: file_pipeline_{embedded,kafkalog,kafka_connect}_lps and the ratios
file_pipeline_vs_kafka_connect, file_pipeline_kafkalog_vs_kafka_connect;
cdc_snapshot_{tributary,debezium}_rows_per_s, cdc_snapshot_vs_debezium;
cdc_streaming_{tributary,debezium}_changes_per_s, cdc_streaming_vs_debezium;
cdc_p50_ms, cdc_p99_ms, debezium_p50_ms, debezium_p99_ms; worker_rss_mb (and
worker_rss_mb_embedded, worker_rss_mb_kafkalog), kafka_connect_rss_mb; targets_met
(one flag per target of the issue); the sizes and settings.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.pipeline_bench import JSON, Worker, _write_input  # noqa: E402
from tests.kafka_broker import KafkaBroker  # noqa: E402
from tests.kafka_connect import KafkaConnect  # noqa: E402
from tests.waiting import wait_until  # noqa: E402

FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
#: JSON without schemas, both sides (the issue's JsonConverter setting).
SCHEMALESS = {
    "key.converter": JSON,
    "value.converter": JSON,
    "key.converter.schemas.enable": "false",
    "value.converter.schemas.enable": "false",
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000, help="file pipeline lines")
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the CDC table")
    parser.add_argument(
        "--changes", type=int, default=200_000, help="streamed changes (whole thousands)"
    )
    parser.add_argument(
        "--latency-s", type=float, default=10.0, help="seconds of 5,000 changes/s per system"
    )
    parser.add_argument("--connect-heap", default="1g", help="Kafka Connect's -Xmx")
    parser.add_argument("--dir", type=Path, default=None, help="keep the run's files here")
    args = parser.parse_args(argv)
    if args.lines < 1 or args.rows < 1000 or args.changes < 1000 or args.latency_s <= 0:
        parser.error("--lines ≥ 1, --rows ≥ 1000, --changes ≥ 1000, --latency-s > 0")
    return args


# ------------------------------------------------------------------------ memory


def vm_hwm_bytes(pid: int) -> int:
    """The peak resident set of a live process (VmHWM in /proc/PID/status), 0 when it
    is gone: the kernel keeps the peak, so one read after the work is enough for a
    process that lives through it."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return 0
    for line in text.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


class TreePeak:
    """The summed VmHWM of a process and its descendants, each process's peak kept
    after it exits (task processes end when their connector is deleted).

    A thread reads the known processes' VmHWM every 50 ms and looks for new children
    every 0.5 s (psutil's walk of /proc costs ~15 ms here: every 50 ms it would take a
    third of a core from the systems measured); a task process lives for seconds."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peaks: dict[int, int] = {pid: 0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def discover(self) -> None:
        import psutil

        try:
            children = psutil.Process(self.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return
        for child in children:
            self.peaks.setdefault(child.pid, 0)

    def sample(self) -> None:
        for pid in list(self.peaks):
            self.peaks[pid] = max(self.peaks[pid], vm_hwm_bytes(pid))

    def _run(self) -> None:
        last = 0.0
        while not self._stop.wait(0.05):
            if time.monotonic() - last >= 0.5:
                self.discover()
                last = time.monotonic()
            self.sample()

    def __enter__(self) -> TreePeak:
        self.discover()
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    @property
    def total(self) -> int:
        return sum(list(self.peaks.values()))  # the thread may add a pid meanwhile


# ----------------------------------------------------------------------- systems


class System:
    """One worker reached by Kafka Connect's REST API: Tributary's or Kafka Connect's.
    `check()` raises when the worker died; `peak` follows its memory."""

    def __init__(self, name: str, rest: str, check: Callable[[], None], peak: TreePeak) -> None:
        self.name = name
        self.rest = rest
        self.check = check
        self.peak = peak
        self.client = httpx.Client(base_url=rest, timeout=60.0)

    def create(self, name: str, config: dict[str, str]) -> None:
        answer = self.client.post("/connectors", json={"name": name, "config": config})
        if answer.status_code not in (200, 201):
            raise RuntimeError(f"{self.name}: POST {name}: {answer.status_code} {answer.text}")

    def failed(self, name: str) -> str | None:
        """The first FAILED trace of a connector or its tasks, else None."""
        answer = self.client.get(f"/connectors/{name}/status")
        if answer.status_code != 200:
            return None
        status = answer.json()
        for part in [status.get("connector", {}), *status.get("tasks", [])]:
            if part.get("state") == "FAILED":
                return str(part.get("trace", "FAILED"))[:2000]
        return None

    def delete(self, *names: str) -> None:
        for name in names:
            self.client.delete(f"/connectors/{name}")
        wait_until(
            lambda: not set(names) & set(self.client.get("/connectors").json()),
            60, f"{self.name}: {names} deleted",
        )

    def wait(self, done: Callable[[], bool], names: list[str], timeout_s: float,
             what: str) -> float:
        """perf_counter() once `done()`; fails early, with the trace, when a connector
        or task of `names` FAILED or the worker died."""
        last = [0.0]

        def finished() -> bool:
            if done():
                return True
            now = time.monotonic()
            if now - last[0] > 1.0:
                last[0] = now
                self.check()
                for name in names:
                    trace = self.failed(name)
                    if trace:
                        raise RuntimeError(f"{self.name}: {name} failed: {trace}")
            return False

        wait_until(finished, timeout_s, f"{self.name}: {what}", interval_s=0.02)
        return time.perf_counter()

    def close(self) -> None:
        self.client.close()


@contextmanager
def tributary(base: Path, name: str, extra: dict[str, str]) -> Iterator[System]:
    """A `connect standalone` process (pipeline_bench's Worker) with JSON without schemas."""
    directory = base / name
    directory.mkdir(parents=True)
    worker = Worker(directory, JSON, [], extra={**SCHEMALESS, **extra})
    peak = TreePeak(worker.proc.pid)

    def check() -> None:
        if worker.proc.poll() is not None:
            raise RuntimeError(f"{name} exited ({worker.proc.returncode}): "
                               f"{(directory / 'worker.err').read_text()[-2000:]}")

    system = System(name, f"http://127.0.0.1:{worker.port}", check, peak)
    try:
        worker.rest_ready()
        with peak:
            yield system
    finally:
        system.close()
        worker.stop()


class PeerConnect(KafkaConnect):
    """The session fixture's Kafka Connect worker, started standalone with the bench's
    heap and Kafka Connect's shipped defaults (the fixture shortens them for tests)."""

    def start_peer(self, heap: str) -> None:
        done = self._run("start", "--bootstrap", self.broker.bootstrap, "--port",
                         str(self.port), "--standalone", "--heap", heap, timeout_s=300)
        if done.returncode != 0:
            raise RuntimeError(f"Kafka Connect did not start: {done.stderr.strip()}")

    @property
    def pid(self) -> int:
        return int((self.directory / "connect.pid").read_text())


@contextmanager
def kafka_connect(base: Path, broker: KafkaBroker, heap: str) -> Iterator[System]:
    peer = PeerConnect(base / "kafka-connect", broker)
    peer.start_peer(heap)
    pid = peer.pid

    def check() -> None:
        if not vm_hwm_bytes(pid):
            raise RuntimeError(f"Kafka Connect exited (log: {peer.directory / 'connect.log'})")

    system = System("kafka_connect", peer.rest, check, TreePeak(pid))
    try:
        with system.peak:
            yield system
    finally:
        system.close()
        peer.stop()


def create_topics(bootstrap: str, names: list[str]) -> None:
    """One partition each, stamped by the broker at append (LogAppendTime)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})  # errors only
    topics = [NewTopic(n, 1, 1, config={"message.timestamp.type": "LogAppendTime"})
              for n in names]
    for future in admin.create_topics(topics, request_timeout=30).values():
        future.result(timeout=31)


# ------------------------------------------------------------------ file pipeline


def file_pipeline(system: System, base: Path, source: Path, lines: int, topic: str) -> float:
    """Lines per second from the first POST to the sink file holding every byte (the
    connectors' and tasks' start, the consumer group's join and the whole stream)."""
    sink = base / f"{system.name}.out"
    size = source.stat().st_size
    names = [f"{system.name}-sink", f"{system.name}-source"]
    began = time.perf_counter()
    system.create(names[0], {"connector.class": FILE_SINK, "file": str(sink),
                             "topics": topic, "tasks.max": "1"})
    system.create(names[1], {"connector.class": FILE_SOURCE, "file": str(source),
                             "topic": topic, "tasks.max": "1"})
    ended = system.wait(lambda: sink.exists() and sink.stat().st_size >= size, names,
                        max(120.0, lines / 1_000), f"{size} bytes in {sink}")
    system.delete(*names)
    if sink.read_bytes() != source.read_bytes():
        raise RuntimeError(f"{system.name}: the sink file differs from the input")
    sink.unlink()
    return lines / (ended - began)


def ratio(ours: float, theirs: float) -> float:
    return round(ours / theirs, 2) if theirs else float("inf")


def run(args: argparse.Namespace, base: Path) -> dict[str, Any]:
    from bench import peers_cdc
    from bench.cdc_bench import postgres

    out: dict[str, Any] = {}
    source = base / "lines.txt"
    _write_input(source, args.lines)
    with ExitStack() as stack:
        broker = KafkaBroker(base / "broker")
        broker.start()
        stack.callback(broker.stop)
        url = stack.enter_context(postgres(None))
        create_topics(broker.bootstrap, ["lines-kafkalog", "lines-kafka-connect"])

        # Step 1: the file pipeline, the embedded worker alone on the machine.
        with tributary(base, "tributary_embedded", {}) as embedded:
            out["file_pipeline_embedded_lps"] = round(
                file_pipeline(embedded, base, source, args.lines, "lines-embedded"))
        out["worker_rss_mb_embedded"] = round(embedded.peak.total / 2**20, 1)
        kafkalog = stack.enter_context(
            tributary(base, "tributary_kafkalog", {"bootstrap.servers": broker.bootstrap}))
        connect = stack.enter_context(kafka_connect(base, broker, args.connect_heap))
        out["file_pipeline_kafkalog_lps"] = round(
            file_pipeline(kafkalog, base, source, args.lines, "lines-kafkalog"))
        out["file_pipeline_kafka_connect_lps"] = round(
            file_pipeline(connect, base, source, args.lines, "lines-kafka-connect"))
        # Where each peak was reached: after the file pipeline, and at the end.
        out["worker_rss_mb_kafkalog_file"] = round(kafkalog.peak.total / 2**20, 1)
        out["kafka_connect_rss_mb_file"] = round(connect.peak.total / 2**20, 1)

        # Step 2: CDC, the same table and backlog for both systems.
        out.update(peers_cdc.run(url, broker.bootstrap, tributary=kafkalog, debezium=connect,
                                 rows=args.rows, changes=args.changes,
                                 latency_s=args.latency_s, create_topics=create_topics))
        kafkalog.check()
        connect.check()
        out["worker_rss_mb_kafkalog"] = round(kafkalog.peak.total / 2**20, 1)
        out["kafka_connect_rss_mb"] = round(connect.peak.total / 2**20, 1)
    return out


def summarize(out: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """The ratios and target flags of the issue over the raw figures."""
    out["file_pipeline_vs_kafka_connect"] = ratio(
        out["file_pipeline_embedded_lps"], out["file_pipeline_kafka_connect_lps"])
    out["file_pipeline_kafkalog_vs_kafka_connect"] = ratio(
        out["file_pipeline_kafkalog_lps"], out["file_pipeline_kafka_connect_lps"])
    out["cdc_snapshot_vs_debezium"] = ratio(
        out["cdc_snapshot_tributary_rows_per_s"], out["cdc_snapshot_debezium_rows_per_s"])
    out["cdc_streaming_vs_debezium"] = ratio(
        out["cdc_streaming_tributary_changes_per_s"],
        out["cdc_streaming_debezium_changes_per_s"])
    out["worker_rss_mb"] = max(out["worker_rss_mb_embedded"], out["worker_rss_mb_kafkalog"])
    out["targets_met"] = {
        "file_pipeline_vs_kafka_connect": out["file_pipeline_vs_kafka_connect"] >= 2.0,
        "file_pipeline_kafkalog_vs_kafka_connect":
            out["file_pipeline_kafkalog_vs_kafka_connect"] >= 1.0,
        "cdc_snapshot_vs_debezium": out["cdc_snapshot_vs_debezium"] >= 1.5,
        "cdc_streaming_vs_debezium": out["cdc_streaming_vs_debezium"] >= 1.5,
        "cdc_p99_ms": out["cdc_p99_ms"] <= out["debezium_p99_ms"],
        "worker_rss_mb": out["worker_rss_mb"] <= 0.25 * out["kafka_connect_rss_mb"],
    }
    out.update(lines=args.lines, rows=args.rows, changes=args.changes,
               latency_s=args.latency_s, kafka_connect_heap=args.connect_heap)
    return out


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    # A bench stopped by `timeout` or a person still stops its broker, servers and
    # workers: SIGTERM unwinds the context managers as Ctrl-C does.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    base = args.dir or Path(tempfile.mkdtemp(prefix="tributary-peers-bench-"))
    base.mkdir(parents=True, exist_ok=True)
    try:
        out = summarize(run(args, base), args)
    finally:
        if args.dir is None:
            shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
