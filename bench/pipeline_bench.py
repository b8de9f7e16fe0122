"""Benchmark of the Connect runtime end to end; prints one JSON object.

One standalone worker process runs FileStreamSource → log → FileStreamSink over a file
of N lines of 100 bytes (99 characters and a newline). The clock starts when the
worker process is spawned and stops when the sink's output file holds every input
byte, so start-up, polling, conversion, the log, the consumer group and the sink's
writes are all inside the figure. Run once with StringConverter and once with
JsonConverter with schemas (the envelope costs a JSON encode and decode per record).

    python bench/pipeline_bench.py [--lines N] [--dir DIR]

Keys: file_pipeline_string_lps, file_pipeline_json_lps (lines per second),
worker_peak_rss_mb (largest of the runs, sampled every 20 ms: the worker process
and its task processes together), rest_ready_s (worker
spawn to the first 200 from `GET /`, with no connectors configured), and the settings.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
STRING = "org.apache.kafka.connect.storage.StringConverter"
JSON = "org.apache.kafka.connect.json.JsonConverter"
LINE = 100
TIMEOUT_S = 300.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _write_input(path: Path, lines: int) -> int:
    """N distinct 100-byte lines; returns the file size."""
    body = b"x" * (LINE - 1 - 12)
    with open(path, "wb") as f:
        for start in range(0, lines, 10_000):
            f.write(
                b"".join(
                    b"%012d%s\n" % (i, body) for i in range(start, min(lines, start + 10_000))
                )
            )
    return path.stat().st_size


class Worker:
    """A `connect standalone` child process, with RSS sampling and a clean stop."""

    def __init__(
        self,
        directory: Path,
        converter: str,
        connectors: list[Path],
        extra: dict[str, str] | None = None,
    ) -> None:
        self.port = _free_port()
        config = {
            "log.dir": str(directory / "log"),
            "listeners": f"http://127.0.0.1:{self.port}",
            "key.converter": converter,
            "value.converter": converter,
            "key.converter.schemas.enable": "true",
            "value.converter.schemas.enable": "true",
            "offset.flush.interval.ms": "10000",
            **(extra or {}),
        }
        worker_json = directory / "worker.json"
        worker_json.write_text(json.dumps(config))
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "connect.cli.main", "standalone", str(worker_json)]
            + [str(c) for c in connectors]
            + ["--log-level", os.environ.get("BENCH_LOG_LEVEL", "WARNING")],
            cwd=directory,
            env=env,
            stderr=open(directory / "worker.err", "wb"),  # noqa: SIM115 - lives as long as the child
        )
        self.ps = psutil.Process(self.proc.pid)
        self.peak_rss = 0

    def sample(self) -> None:
        # The worker and its task processes together (task.isolation=process).
        total = 0
        for proc in [self.ps, *self.ps.children(recursive=True)]:
            with contextlib.suppress(psutil.NoSuchProcess):
                total += proc.memory_info().rss
        self.peak_rss = max(self.peak_rss, total)
        if self.proc.poll() is not None:
            raise RuntimeError(f"worker exited with {self.proc.returncode}")

    def rest_ready(self) -> float:
        url = f"http://127.0.0.1:{self.port}/"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            self.sample()
            try:
                with urllib.request.urlopen(url, timeout=1) as response:
                    if response.status == 200:
                        return time.perf_counter() - self.started
            except OSError:
                time.sleep(0.005)
        raise RuntimeError("the REST API did not come up in 60 s")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def run_pipeline(
    base: Path, converter: str, lines: int, extra: dict[str, str] | None = None
) -> tuple[float, int]:
    """(lines per second, peak RSS bytes) of one pipeline run."""
    directory = base / converter.rsplit(".", 1)[-1]
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    source, sink = directory / "in.txt", directory / "out.txt"
    size = _write_input(source, lines)
    topic = "bench-lines"
    (directory / "source.json").write_text(
        json.dumps(
            {
                "name": "bench-source",
                "config": {
                    "connector.class": "FileStreamSource",
                    "file": str(source),
                    "topic": topic,
                },
            }
        )
    )
    (directory / "sink.json").write_text(
        json.dumps(
            {
                "name": "bench-sink",
                "config": {
                    "connector.class": "FileStreamSink",
                    "file": str(sink),
                    "topics": topic,
                },
            }
        )
    )
    worker = Worker(
        directory, converter, [directory / "source.json", directory / "sink.json"], extra
    )
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            worker.sample()
            if sink.exists() and sink.stat().st_size >= size:
                elapsed = time.perf_counter() - worker.started
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the output was incomplete after {TIMEOUT_S} s")
            time.sleep(0.02)
    finally:
        worker.stop()
    if sink.read_bytes() != source.read_bytes():
        raise RuntimeError("the output file differs from the input")
    return lines / elapsed, worker.peak_rss


def run_rest_ready(base: Path) -> tuple[float, int]:
    directory = base / "rest"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    worker = Worker(directory, STRING, [])
    try:
        return worker.rest_ready(), worker.peak_rss
    finally:
        worker.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    base = args.dir or Path(tempfile.mkdtemp(prefix="tributary-pipeline-bench-"))
    try:
        ready_s, rss0 = run_rest_ready(base)
        string_lps, rss1 = run_pipeline(base, STRING, args.lines)
        json_lps, rss2 = run_pipeline(base, JSON, args.lines)
    finally:
        if args.dir is None:
            shutil.rmtree(base, ignore_errors=True)
    print(
        json.dumps(
            {
                "file_pipeline_string_lps": round(string_lps),
                "file_pipeline_json_lps": round(json_lps),
                "worker_peak_rss_mb": round(max(rss0, rss1, rss2) / 2**20, 1),
                "rest_ready_s": round(ready_s, 3),
                "lines": args.lines,
                "line_bytes": LINE,
            }
        )
    )


if __name__ == "__main__":
    main()
