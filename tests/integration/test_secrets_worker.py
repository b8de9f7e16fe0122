"""A real `connect standalone` process reads a real PostgreSQL table as a role with a
password, given in each form published configs use (`user:pass@` in a SQLAlchemy URL,
`?password=` in a jdbc: URL, `connection.password` beside a URL without one): no REST
answer, status trace, CLI output or line of the worker's stderr (task processes
included) shows the password, and each config read back masked and PUT again still
connects (the new row arrives)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.integration.conftest import WorkerProcess
from tests.pg import PostgresServer
from tests.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PASSWORD = "Db-pw-4t7q-secret"
LEAKY = "tests.connect.plugins_for_tests.LeakySource"
CONNECT = [sys.executable, "-m", "connect.cli.main"]


@pytest.fixture
def database(postgres_server: PostgresServer) -> Iterator[tuple[str, str]]:
    """(database, role): a table `items` with rows 1 and 2 that `role`, which logs in
    with PASSWORD only, may read."""
    role = f"app_{os.getpid()}"
    db = postgres_server.create_database()
    postgres_server.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{PASSWORD}'")
    try:
        postgres_server.execute(
            "CREATE TABLE items (id serial PRIMARY KEY, name text NOT NULL)", database=db
        )
        postgres_server.execute("INSERT INTO items (name) VALUES ('a'), ('b')", database=db)
        postgres_server.execute(f"GRANT SELECT ON items TO {role}", database=db)
        yield db, role
    finally:
        postgres_server.drop_database(db)
        with contextlib.suppress(Exception):
            postgres_server.execute(f"DROP ROLE {role}")


def _configs(server: PostgresServer, db: str, role: str) -> dict[str, dict[str, str]]:
    host = f"127.0.0.1:{server.port}"
    common = {
        "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
        "mode": "incrementing",
        "incrementing.column.name": "id",
        "table.whitelist": "items",
        "poll.interval.ms": "200",
    }
    return {
        "userinfo": {
            **common,
            "connection.url": f"postgresql+psycopg2://{role}:{PASSWORD}@{host}/{db}",
            "topic.prefix": "userinfo-",
        },
        "query": {
            **common,
            "connection.url": f"jdbc:postgresql://{host}/{db}?user={role}&password={PASSWORD}",
            "topic.prefix": "query-",
        },
        "key": {
            **common,
            "connection.url": f"jdbc:postgresql://{host}/{db}",
            "connection.user": role,
            "connection.password": PASSWORD,
            "topic.prefix": "key-",
        },
    }


def _read_up_to(worker: WorkerProcess, name: str, last_id: int) -> None:
    def reached() -> bool:
        code, body = worker.request("GET", f"/connectors/{name}/offsets")
        assert code == 200, body
        return any((o["offset"] or {}).get("incrementing") == last_id for o in body["offsets"])

    wait_until(reached, 60, f"{name} read row {last_id}")


def _cli(worker: WorkerProcess, *args: str) -> str:
    done = subprocess.run(
        [*CONNECT, *args, "--url", worker.url],
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


@pytest.mark.postgres
def test_the_password_is_never_shown_and_a_masked_config_put_back_still_connects(
    start_worker: Callable[..., WorkerProcess],
    postgres_server: PostgresServer,
    database: tuple[str, str],
) -> None:
    db, role = database
    worker = start_worker()
    seen: list[Any] = []
    configs = _configs(postgres_server, db, role)
    for name, config in configs.items():
        code, body = worker.request("POST", "/connectors", {"name": name, "config": config})
        assert code == 201, body
        seen.append(body)
    leaky = {
        "connector.class": LEAKY,
        "connection.url": configs["userinfo"]["connection.url"],
        "connection.password": PASSWORD,
    }
    code, body = worker.request("POST", "/connectors", {"name": "leaky", "config": leaky})
    assert code == 201, body
    for name in configs:
        _read_up_to(worker, name, 2)
    failed = wait_until(
        lambda: (
            (s := worker.status("leaky"))
            and s["tasks"]
            and s["tasks"][0]["state"] == "FAILED"
            and s
        ),
        30,
        "leaky failed",
    )
    assert "cannot connect to" in failed["tasks"][0]["trace"]

    # Every answer that carries a config or a trace, and the CLI's views of them.
    for name in [*configs, "leaky"]:
        for path in ("", "/config", "/status", "/tasks", "/tasks-config", "/offsets"):
            code, body = worker.request("GET", f"/connectors/{name}{path}")
            assert code == 200, (name, path, body)
            seen.append(body)
    seen.append(worker.request("GET", "/connectors?expand=info&expand=status")[1])
    seen += [_cli(worker, "status"), _cli(worker, "status", "--json"), _cli(worker, "ps")]
    seen += [_cli(worker, "offsets", "get", name) for name in configs]
    assert "FAILED" in seen[-len(configs) - 3]

    # Read back masked, changed, PUT again: the stored password is kept and used.
    for name in configs:
        code, config = worker.request("GET", f"/connectors/{name}/config")
        assert code == 200 and "[hidden]" in str(config), config
        code, body = worker.request(
            "PUT", f"/connectors/{name}/config", {**config, "poll.interval.ms": "250"}
        )
        assert code == 200, body
        seen.append(body)
    postgres_server.execute("INSERT INTO items (name) VALUES ('c')", database=db)
    for name in configs:
        _read_up_to(worker, name, 3)
        assert worker.status(name)["tasks"][0]["state"] == "RUNNING"

    assert worker.stop() == 0
    stderr = worker.stderr
    assert "cannot connect to" in stderr  # the task process logged its failure, masked
    seen.append(stderr)
    leaked = [text for text in map(str, seen) if PASSWORD in text]
    assert not leaked, leaked[0]


def test_a_restarted_worker_masks_the_secrets_of_the_configs_it_replays(
    start_worker: Callable[..., WorkerProcess],
) -> None:
    """The task runs in the worker's process (thread isolation) and its error quotes the
    bare password: only a worker that knows the connector's secrets can mask it, and
    after a restart it knows them from the config topic, before the task runs."""
    leaky = {
        "connector.class": LEAKY,
        "connection.url": "jdbc:postgresql://db/shop",
        "connection.password": PASSWORD,
    }
    config = {"task.isolation": "thread"}
    first = start_worker(config=config)
    code, body = first.request("POST", "/connectors", {"name": "leaky", "config": leaky})
    assert code == 201, body
    wait_until(
        lambda: (s := first.status("leaky")) and s["tasks"] and s["tasks"][0]["state"] == "FAILED",
        30,
        "leaky failed",
    )
    assert first.stop() == 0
    second = start_worker(config=config)
    # The replayed connector's task fails again, in this process, and is logged.
    wait_until(lambda: "cannot connect to" in second.stderr, 30, "the failure logged again")
    status = second.status("leaky")
    assert status["tasks"][0]["state"] == "FAILED" and "[hidden]" in status["tasks"][0]["trace"]
    assert second.stop() == 0
    for worker in (first, second):
        assert "cannot connect to" in worker.stderr
        assert PASSWORD not in worker.stderr, worker.stderr
