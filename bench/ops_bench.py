"""Benchmark of the operator's endpoints; prints one JSON object.

One standalone worker process (`connect standalone`, real HTTP) runs C connectors of
VerifiableSource with T tasks each, every task sending one record a second (a cheap
source, so the figure is the scrape and not the traffic). Once every task is
RUNNING and has shipped counters, `/metrics` is scraped R times over HTTP (httpx,
a fresh request each time) and `/ops/tasks` (what `connect ps` reads) likewise.

Tasks run as threads (`task.isolation=thread`): 600 task processes would not fit this
machine's memory, and a process task's counters are a dict the worker already holds,
so threads are the harder case for the scrape (its reads contend with 600 running
task threads for the interpreter lock).

Then the web console (`/ui`) is loaded L times in a headless Chromium
(tests/console/browser.py: Debian's chromium and chromedriver, a fresh profile, the
HTTP cache off so that every load fetches the page, its scripts and the data as a
first visit does). A load's figure is the time from navigation start until the
connector list has painted all its rows: the page marks that moment in the
Performance API (`tributary:connectors-painted`), and its `startTime` is measured from
the navigation's start.

    python bench/ops_bench.py [--connectors 200] [--tasks 3] [--scrapes 20] [--loads 7]

Keys: metrics_scrape_ms (median over the scrapes), metrics_scrape_p95_ms,
metrics_bytes, metrics_samples, ops_tasks_ms (median), ops_connectors_ms (median of
`GET /ops/connectors`, the one request the console's list needs),
console_first_render_200_ms (median over the loads; named for the default 200
connectors), console_first_render_max_ms, setup_s (create and start every
connector), and the settings. Without Chromium (scripts/ensure-chromium installs it)
the console figures are null and `console_note` says why.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
TIMEOUT_S = 300.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(predicate, what: str, timeout_s: float = TIMEOUT_S):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(0.2)
    raise SystemExit(f"timed out waiting for {what}")


def _timed(client: httpx.Client, path: str, runs: int) -> tuple[list[float], httpx.Response]:
    times, response = [], None
    for _ in range(runs):
        started = time.perf_counter()
        response = client.get(path)
        times.append((time.perf_counter() - started) * 1000)
        response.raise_for_status()
    assert response is not None
    return times, response


def _console_renders(url: str, rows: int, loads: int, work: Path) -> tuple[list[float], str]:
    """Milliseconds of the console's first render, per load ([] and why, without a
    browser)."""
    try:
        from tests.console.browser import first_render_ms, launch
    except ImportError as exc:  # selenium: pip install -e '.[test]'
        return [], f"no browser driver: {exc}"
    try:
        driver = launch(work / "chromium-profile")
    except Exception as exc:  # no Chromium here
        return [], f"no headless Chromium: {exc}"
    try:
        driver.execute_cdp_cmd("Network.enable", {})
        driver.execute_cdp_cmd("Network.setCacheDisabled", {"cacheDisabled": True})
        first_render_ms(driver, f"{url}/ui/", rows=rows)  # warm up the browser process
        return [first_render_ms(driver, f"{url}/ui/", rows=rows) for _ in range(loads)], ""
    finally:
        driver.quit()


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connectors", type=int, default=200)
    parser.add_argument("--tasks", type=int, default=3)
    parser.add_argument("--scrapes", type=int, default=20)
    parser.add_argument("--loads", type=int, default=7, help="console page loads")
    parser.add_argument("--dir", help="work directory (default: a temporary one)")
    return parser.parse_args()


def _start_worker(work: Path, port: int) -> subprocess.Popen:
    """`connect standalone` on a fresh embedded log, its stderr in worker.err."""
    config = {
        "log.dir": str(work / "log"),
        "listeners": f"http://127.0.0.1:{port}",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "task.isolation": "thread",
        "offset.flush.interval.ms": "5000",
    }
    (work / "worker.json").write_text(json.dumps(config))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with open(work / "worker.err", "wb") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "connect.cli.main", "standalone", str(work / "worker.json")],
            cwd=work,
            env=env,
            stdout=subprocess.DEVNULL,  # VerifiableSource reports each record there
            stderr=err,
            start_new_session=True,
        )


def _stop_worker(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(120)
        except subprocess.TimeoutExpired:
            proc.kill()


def _set_up(client: httpx.Client, proc: subprocess.Popen, work: Path, args) -> float:
    """Seconds from the first create until every task runs and has counted records."""

    def ready() -> bool:
        if proc.poll() is not None:
            raise SystemExit((work / "worker.err").read_text(errors="replace")[-3000:])
        try:
            return client.get("/").status_code == 200
        except httpx.TransportError:
            return False

    _wait(ready, "the REST API")
    started = time.perf_counter()
    for i in range(args.connectors):
        response = client.post(
            "/connectors",
            json={
                "name": f"src-{i:03d}",
                "config": {
                    "connector.class": "VerifiableSource",
                    "tasks.max": str(args.tasks),
                    "topic": f"bench-{i:03d}",
                    "throughput": "1",
                },
            },
        )
        response.raise_for_status()
    want = args.connectors * args.tasks

    def all_counting() -> bool:
        tasks = client.get("/ops/tasks").json()["tasks"]
        running = [t for t in tasks if t["state"] == "RUNNING" and t["records_out"]]
        return len(running) == want

    _wait(all_counting, f"{want} running tasks with records")
    return time.perf_counter() - started


def _figures(
    args,
    setup_s: float,
    scrapes: list[float],
    text: str,
    ops: list[float],
    console_ops: list[float],
    renders: list[float],
    note: str,
) -> dict:
    """The JSON object the benchmark prints (keys: the module docstring)."""
    samples = sum(1 for line in text.splitlines() if line and not line.startswith("#"))
    scrapes = sorted(scrapes)
    return {
        "metrics_scrape_ms": round(statistics.median(scrapes), 1),
        "metrics_scrape_p95_ms": round(scrapes[int(0.95 * (len(scrapes) - 1))], 1),
        "metrics_bytes": len(text.encode()),
        "metrics_samples": samples,
        "ops_tasks_ms": round(statistics.median(ops), 1),
        "ops_connectors_ms": round(statistics.median(console_ops), 1),
        "console_first_render_200_ms": round(statistics.median(renders), 1) if renders else None,
        "console_first_render_max_ms": round(max(renders), 1) if renders else None,
        **({"console_note": note} if note else {}),
        "setup_s": round(setup_s, 1),
        "connectors": args.connectors,
        "tasks_per_connector": args.tasks,
        "scrapes": args.scrapes,
        "console_loads": len(renders),
    }


def main() -> None:
    args = _parse_args()
    work = Path(args.dir or tempfile.mkdtemp(prefix="ops-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    proc = _start_worker(work, port)
    url = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=url, timeout=60) as client:
            setup_s = _set_up(client, proc, work, args)
            _timed(client, "/metrics", 2)  # warm up (imports, first describe of topics)
            scrapes, response = _timed(client, "/metrics", args.scrapes)
            text = response.text
            ops, _ = _timed(client, "/ops/tasks", max(3, args.scrapes // 4))
            console_ops, _ = _timed(client, "/ops/connectors", max(3, args.scrapes // 4))
            renders, note = _console_renders(url, args.connectors, args.loads, work)
    finally:
        _stop_worker(proc)
        if not args.dir:
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(_figures(args, setup_s, scrapes, text, ops, console_ops, renders, note)))


if __name__ == "__main__":
    main()
