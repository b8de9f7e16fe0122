"""A Spark standalone cluster for tests (a pytest plugin): one master and one worker,
started from the pip installation of PySpark (`spark_cluster`, session-scoped).

PySpark's wheel has the jars and `bin/spark-class` but not the `sbin/start-*.sh`
scripts, so the daemons are started by their classes, `spark-class
org.apache.spark.deploy.master.Master` and `...worker.Worker`, in the foreground as
our own child processes (stopped at the end of the session, logs in files).

A session that runs no test asking for it starts nothing; one that does starts it on
a thread when the session starts (tests/prestart.py), beside the tests before. A
cluster that cannot start fails the tests that need it (with the daemon's log tail),
never skips them.

`spark_kafka_jars` (session) is the `spark.jars` value for Spark's own Kafka source
(`format("kafka")`): the `spark-sql-kafka-0-10` jars pom.xml pins, copied into
`.jvm/spark-packages/` by `scripts/ensure-jvm` (Maven, once; a no-op when cached).

A SparkSession that uses the cluster cannot share a Python process with the suite's
local session (`tests/spark.py`): a process has one SparkContext, and
`SparkSession.builder.getOrCreate()` hands back the running local one whatever master
it is asked for. Tests therefore drive the cluster from a child process.

How it runs:
1. Ports are free ports on 127.0.0.1 (master RPC, master and worker web UIs), the
   master's REST submission server (6066) is off, and every daemon binds 127.0.0.1
   only (`SPARK_LOCAL_IP`), so parallel sessions on one machine never collide.
2. The master is up when its JSON API (`<web_url>/json/`) says ALIVE.
3. The worker offers 2 cores and 1 GB (the machine has 2 cores; an executor asks for
   512 MB, see `EXECUTOR_CONF`), keeps its applications' directories under the
   session's temporary directory, and is up when the master counts it alive.
4. Stop: SIGTERM to each daemon's process group (its executors go with it), SIGKILL
   after a grace period.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.prestart import Prestarted, register
from tests.waiting import wait_until

__all__ = ["EXECUTOR_CONF", "SparkCluster", "spark_cluster", "spark_kafka_jars"]

#: Settings an application on this cluster needs here: small executors, C1 only (the
#: JIT costs more than it saves in short test jobs), one attempt per task so a broken
#: job fails in seconds instead of after four retries.
EXECUTOR_CONF = {
    "spark.executor.memory": "512m",
    "spark.cores.max": "2",
    "spark.task.maxFailures": "1",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
    "spark.executor.extraJavaOptions": "-XX:TieredStopAtLevel=1",
    "spark.sql.shuffle.partitions": "2",
}


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class SparkCluster:
    """One standalone master and one worker in `directory` (see the module docstring)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.work_dir = directory / "work"
        self.port = _free_port()
        self.web_port = _free_port()
        self.worker_web_port = _free_port()
        self.master_url = f"spark://127.0.0.1:{self.port}"
        self.web_url = f"http://127.0.0.1:{self.web_port}"
        self._procs: dict[str, subprocess.Popen[bytes]] = {}

    # ------------------------------------------------------------- processes

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            SPARK_HOME=str(_spark_home()),
            SPARK_LOCAL_IP="127.0.0.1",
            PYSPARK_PYTHON=sys.executable,
            SPARK_DAEMON_MEMORY="256m",
            SPARK_DAEMON_JAVA_OPTS="-XX:TieredStopAtLevel=1",
        )
        return env

    def _start(self, name: str, cls: str, *args: str) -> None:
        props = self.directory / f"{name}.properties"
        props.write_text("spark.master.rest.enabled false\nspark.ui.showConsoleProgress false\n")
        command = [
            str(_spark_home() / "bin" / "spark-class"),
            cls,
            "--host",
            "127.0.0.1",
            "--properties-file",
            str(props),
            *args,
        ]
        with open(self.log_path(name), "ab") as log:
            self._procs[name] = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self._env(),
                cwd=self.directory,
                start_new_session=True,
            )

    def log_path(self, name: str) -> Path:
        return self.directory / f"{name}.log"

    def log_tail(self, name: str, lines: int = 30) -> str:
        try:
            text = self.log_path(name).read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def _wait(self, name: str, ready: Any, timeout_s: float) -> None:
        def check() -> Any:
            proc = self._procs[name]
            if proc.poll() is not None:
                raise RuntimeError(
                    f"the Spark {name} exited ({proc.returncode}):\n{self.log_tail(name)}"
                )
            with contextlib.suppress(OSError, ValueError):
                return ready()
            return None

        try:
            wait_until(check, timeout_s, f"the Spark {name} ready", interval_s=0.2)
        except AssertionError as exc:
            raise RuntimeError(f"{exc}:\n{self.log_tail(name)}") from None

    def start(self, timeout_s: float = 90.0) -> SparkCluster:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        try:
            # Step 1, 2
            self._start(
                "master",
                "org.apache.spark.deploy.master.Master",
                "--port",
                str(self.port),
                "--webui-port",
                str(self.web_port),
            )
            self._wait("master", lambda: self.state()["status"] == "ALIVE", timeout_s)
            # The URL the master bound (Spark moves to the next port if ours was taken
            # since we picked it).
            self.master_url = str(self.state()["url"])
            # Step 3
            self._start(
                "worker",
                "org.apache.spark.deploy.worker.Worker",
                "--port",
                "0",
                "--webui-port",
                str(self.worker_web_port),
                "--cores",
                "2",
                "--memory",
                "1g",
                "--work-dir",
                str(self.work_dir),
                self.master_url,
            )
            self._wait("worker", lambda: self.state()["aliveworkers"] >= 1, timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        # Step 4: the worker first, so the master never sees it as lost and waits.
        for name in ("worker", "master"):
            proc = self._procs.pop(name, None)
            if proc is None or proc.poll() is not None:
                continue
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(20)

    # ------------------------------------------------------------ inspection

    def state(self) -> dict[str, Any]:
        """The master's JSON API: workers, cores, active and completed applications."""
        with urllib.request.urlopen(f"{self.web_url}/json/", timeout=5) as answer:
            return dict(json.load(answer))

    def application(self, app_id: str) -> dict[str, Any] | None:
        """The master's record of an application (active or completed), by id."""
        state = self.state()
        for app in [*state["activeapps"], *state["completedapps"]]:
            if app["id"] == app_id:
                return dict(app)
        return None

    def executor_logs(self, app_id: str) -> str:
        """What the executors of an application wrote to stderr on the worker."""
        return "".join(
            path.read_text(errors="replace")
            for path in sorted((self.work_dir / app_id).glob("*/stderr"))
        )


def _start_cluster(tmp_path_factory: pytest.TempPathFactory) -> SparkCluster:
    return SparkCluster(tmp_path_factory.mktemp("spark-cluster")).start()


@pytest.fixture(scope="session")
def spark_cluster(
    tmp_path_factory: pytest.TempPathFactory, prestarted: Prestarted
) -> Iterator[SparkCluster]:
    cluster = prestarted.take("spark_cluster", lambda: _start_cluster(tmp_path_factory))
    yield cluster
    cluster.stop()


register("spark_cluster", _start_cluster, SparkCluster.stop)


@pytest.fixture(scope="session")
def spark_kafka_jars() -> str:
    done = subprocess.run(
        [str(ROOT / "scripts" / "ensure-jvm"), "spark-packages"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"Spark's Kafka jars are missing: {done.stderr.strip()}", pytrace=False)
    jars = sorted((ROOT / ".jvm" / "spark-packages").glob("*.jar"))
    assert any(j.name.startswith("spark-sql-kafka-0-10_") for j in jars), jars
    return ",".join(str(j) for j in jars)
