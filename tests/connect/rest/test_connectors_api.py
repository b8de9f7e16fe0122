"""`/connectors`: create, read, update, delete, status, tasks, restarts and states,
over real HTTP against a standalone herder on a real log."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from tests.connect.rest.live import (
    FAILING,
    Live,
    LiveServers,
    assert_error,
    sink_config,
    source_config,
)
from tests.waiting import wait_until


def _create(client: httpx.Client, name: str, config: dict, **extra: object) -> httpx.Response:
    return client.post("/connectors", json={"name": name, "config": config, **extra})


def _state(client: httpx.Client, name: str) -> tuple[str, list[str]]:
    body = client.get(f"/connectors/{name}/status").json()
    return body["connector"]["state"], [t["state"] for t in body["tasks"]]


def _failed_task(client: httpx.Client, name: str = "bad") -> None:
    assert _create(client, name, {"connector.class": FAILING}).status_code == 201
    wait_until(lambda: _state(client, name)[1] == ["FAILED"])


# ------------------------------------------------------------------ create, read


def test_create_returns_201_location_and_connector_info(rest: Live, tmp_path: Path):
    client = rest.client
    config = source_config(tmp_path / "in.txt", **{"tasks.max": "1"})
    response = _create(client, "src", config)
    assert response.status_code == 201
    assert response.headers["location"] == f"{rest.url}/connectors/src"
    assert response.json() == {
        "name": "src",
        "config": {**config, "name": "src"},
        "tasks": [{"connector": "src", "task": 0}],
        "type": "source",
    }
    assert client.get("/connectors").json() == ["src"]
    assert client.get("/connectors/src").json() == response.json()
    assert client.get("/connectors/src/config").json() == {**config, "name": "src"}


def test_create_twice_is_409(client: httpx.Client, tmp_path: Path):
    config = source_config(tmp_path / "in.txt")
    assert _create(client, "src", config).status_code == 201
    assert_error(_create(client, "src", config), 409, "src", "already exists")


def test_create_with_invalid_config_is_400_naming_the_key(client: httpx.Client, tmp_path: Path):
    message = assert_error(
        _create(client, "src", {"connector.class": "FileStreamSource", "tasks.max": "zero"}),
        400,
        "Connector configuration is invalid and contains the following 2 error(s)",
    )
    assert "\ntopic: " in message and "\ntasks.max: " in message
    assert_error(_create(client, "s", {"connector.class": "no.such.Connector"}), 400)
    assert_error(_create(client, "s", {"topic": "t"}), 400, "contains no connector type")
    assert_error(client.post("/connectors", json={"name": "s"}), 400, "config")
    assert client.get("/connectors").json() == []


def test_create_coerces_json_scalars_like_jackson(client: httpx.Client, tmp_path: Path):
    config = {"connector.class": "FileStreamSource", "file": str(tmp_path / "in.txt")}
    config |= {"topic": "t", "tasks.max": 1, "batch.size": 10, "errors.log.enable": False}
    info = _create(client, "src", config).json()
    assert info["config"]["tasks.max"] == "1"
    assert info["config"]["errors.log.enable"] == "false"


def test_create_name_must_match_config_name(client: httpx.Client, tmp_path: Path):
    config = source_config(tmp_path / "in.txt", name="other")
    assert_error(_create(client, "src", config), 400, "doesn't match connector name")


@pytest.mark.parametrize(
    ("name", "fragment"),
    [("", "empty"), ("a/b", "slash"), ("bell\x07", "control character")],
)
def test_create_refuses_unusable_names(client: httpx.Client, tmp_path: Path, name, fragment):
    message = assert_error(_create(client, name, source_config(tmp_path / "in.txt")), 400, fragment)
    assert "following 1 error(s)" in message  # one problem, counted once (as Kafka does)


def test_names_with_spaces_and_unicode_are_path_segments(rest: Live, tmp_path: Path):
    client = rest.client
    name = "my source é"
    response = _create(client, f"  {name} ", source_config(tmp_path / "in.txt"))
    assert response.status_code == 201, response.text  # trimmed, as Kafka does
    assert response.headers["location"] == f"{rest.url}/connectors/" + quote(name, safe="")
    assert client.get(response.headers["location"]).json()["name"] == name
    assert client.get(f"/connectors/{quote(name)}/status").status_code == 200


@pytest.mark.parametrize("state", ["PAUSED", "STOPPED", "running"])
def test_create_with_initial_state(client: httpx.Client, tmp_path: Path, state: str):
    response = _create(client, "src", source_config(tmp_path / "in.txt"), initial_state=state)
    assert response.status_code == 201
    wait_until(lambda: _state(client, "src")[0] == state.upper())


def test_create_with_unknown_initial_state_is_400(client: httpx.Client, tmp_path: Path):
    response = _create(client, "src", source_config(tmp_path / "in.txt"), initial_state="DEAD")
    assert_error(response, 400, "DEAD")


def test_unknown_connector_is_404_everywhere(client: httpx.Client):
    for method, path in [
        ("GET", "/connectors/nope"),
        ("GET", "/connectors/nope/config"),
        ("GET", "/connectors/nope/status"),
        ("GET", "/connectors/nope/tasks"),
        ("GET", "/connectors/nope/tasks/0/status"),
        ("POST", "/connectors/nope/tasks/0/restart"),
        ("POST", "/connectors/nope/restart"),
        ("PUT", "/connectors/nope/pause"),
        ("PUT", "/connectors/nope/resume"),
        ("PUT", "/connectors/nope/stop"),
        ("DELETE", "/connectors/nope"),
        ("GET", "/connectors/nope/topics"),
        ("PUT", "/connectors/nope/topics/reset"),
        ("GET", "/connectors/nope/offsets"),
        ("DELETE", "/connectors/nope/offsets"),
    ]:
        assert_error(client.request(method, path), 404, "nope")
    assert_error(client.patch("/connectors/nope/config", json={"a": "b"}), 404, "nope")


# ------------------------------------------------------------------ config


def test_put_config_creates_201_then_updates_200(rest: Live, tmp_path: Path):
    client = rest.client
    config = source_config(tmp_path / "in.txt")
    created = client.put("/connectors/src/config", json=config)
    assert created.status_code == 201
    assert created.headers["location"] == f"{rest.url}/connectors/src"
    assert created.json()["config"] == {**config, "name": "src"}
    updated = client.put("/connectors/src/config", json={**config, "topic": "other"})
    assert updated.status_code == 200 and "location" not in updated.headers
    assert client.get("/connectors/src/config").json()["topic"] == "other"


def test_put_config_errors(client: httpx.Client, tmp_path: Path):
    config = source_config(tmp_path / "in.txt")
    assert_error(
        client.put("/connectors/src/config", json={**config, "name": "x"}),
        400,
        "Connector name configuration (x) doesn't match connector name in the URL (src)",
    )
    assert_error(client.put("/connectors/src/config", json={**config, "topic": ""}), 400, "topic")
    assert_error(client.put("/connectors/src/config", json=[config]), 400, "JSON object")
    assert_error(
        client.put("/connectors/src/config", json={**config, "topic": {"nested": 1}}), 400, "topic"
    )
    assert client.get("/connectors").json() == []


def test_patch_config_merges_and_null_removes(client: httpx.Client, tmp_path: Path):
    config = source_config(tmp_path / "in.txt", **{"batch.size": "5"})
    _create(client, "src", config)
    response = client.patch("/connectors/src/config", json={"topic": "t2", "batch.size": None})
    assert response.status_code == 200
    expected = {**config, "name": "src", "topic": "t2"}
    del expected["batch.size"]
    assert response.json()["config"] == expected
    assert client.get("/connectors/src/config").json() == expected
    assert_error(client.patch("/connectors/src/config", json={"topic": None}), 400, "topic")
    assert_error(client.patch("/connectors/src/config", json={"name": "x"}), 400, "match")


def test_config_provider_placeholders_stay_unresolved(
    start_rest: LiveServers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("REST_TEST_TOPIC", "secret-topic")
    live = start_rest(
        **{
            "config.providers": "env",
            "config.providers.env.class": (
                "org.apache.kafka.common.config.provider.EnvVarConfigProvider"
            ),
        }
    )
    client = live.client
    (tmp_path / "in.txt").write_text("one\ntwo\n")
    config = source_config(tmp_path / "in.txt", topic="${env:REST_TEST_TOPIC}")
    info = _create(client, "src", config).json()
    assert info["config"]["topic"] == "${env:REST_TEST_TOPIC}"
    assert client.get("/connectors/src/config").json()["topic"] == "${env:REST_TEST_TOPIC}"
    tasks = client.get("/connectors/src/tasks").json()
    assert tasks[0]["config"]["topic"] == "${env:REST_TEST_TOPIC}"
    expanded = client.get("/connectors", params={"expand": "info"}).json()
    assert expanded["src"]["info"]["config"]["topic"] == "${env:REST_TEST_TOPIC}"
    # …while the running task used the resolved value
    topics = wait_until(lambda: client.get("/connectors/src/topics").json()["src"]["topics"])
    assert topics == ["secret-topic"]
    assert "secret-topic" not in client.get("/connectors/src").text


# ------------------------------------------------------------------ listing


def test_list_with_expand(client: httpx.Client, tmp_path: Path):
    _create(client, "src", source_config(tmp_path / "in.txt"))
    _create(client, "sink", sink_config(tmp_path / "out.txt"))
    wait_until(lambda: _state(client, "src") == ("RUNNING", ["RUNNING"]))
    wait_until(lambda: _state(client, "sink") == ("RUNNING", ["RUNNING"]))
    assert client.get("/connectors").json() == ["sink", "src"]
    status = client.get("/connectors?expand=status").json()
    assert set(status) == {"src", "sink"} and set(status["src"]) == {"status"}
    assert status["src"]["status"] == client.get("/connectors/src/status").json()
    both = client.get("/connectors?expand=status&expand=info").json()
    assert set(both["sink"]) == {"status", "info"}
    assert both["sink"]["info"] == client.get("/connectors/sink").json()
    assert both["sink"]["info"]["type"] == "sink"
    assert client.get("/connectors?expand=bogus").json() == {"sink": {}, "src": {}}


# ------------------------------------------------------------------ status, tasks


def test_status_and_tasks(client: httpx.Client, tmp_path: Path):
    config = source_config(tmp_path / "in.txt")
    _create(client, "src", config)
    wait_until(lambda: _state(client, "src") == ("RUNNING", ["RUNNING"]))
    assert client.get("/connectors/src/status").json() == {  # the plugin's version: Kafka 4's
        "name": "src",
        "connector": {"state": "RUNNING", "worker_id": "w1", "version": "0.1.0"},
        "tasks": [{"id": 0, "state": "RUNNING", "worker_id": "w1", "version": "0.1.0"}],
        "type": "source",
    }
    tasks = client.get("/connectors/src/tasks").json()
    assert tasks[0]["id"] == {"connector": "src", "task": 0}
    assert tasks[0]["config"]["file"] == config["file"]
    assert client.get("/connectors/src/tasks-config").json() == {"src-0": tasks[0]["config"]}
    task = client.get("/connectors/src/tasks/0/status")
    assert task.json() == {"id": 0, "state": "RUNNING", "worker_id": "w1", "version": "0.1.0"}
    assert_error(client.get("/connectors/src/tasks/7/status"), 404, "src-7")
    assert_error(client.get("/connectors/src/tasks/zero/status"), 404, "HTTP 404 Not Found")


def test_failed_task_shows_its_trace(client: httpx.Client):
    _failed_task(client)
    task = client.get("/connectors/bad/tasks/0/status").json()
    assert task["state"] == "FAILED" and "boom from poll" in task["trace"]
    status = client.get("/connectors/bad/status").json()
    assert "trace" not in status["connector"]
    assert "boom from poll" in status["tasks"][0]["trace"]


# ------------------------------------------------------------------ restarts


def test_plain_restart_is_204_without_body(client: httpx.Client):
    _failed_task(client)
    response = client.post("/connectors/bad/restart")
    assert response.status_code == 204 and response.content == b""
    response = client.post("/connectors/bad/restart?includeTasks=false&onlyFailed=false")
    assert response.status_code == 204


def test_restart_only_failed_tasks_is_202_with_planned_states(client: httpx.Client):
    _failed_task(client)
    response = client.post("/connectors/bad/restart?includeTasks=true&onlyFailed=true")
    assert response.status_code == 202
    planned = response.json()
    assert planned["name"] == "bad" and planned["type"] == "source"
    assert planned["connector"]["state"] == "RUNNING"  # not failed: not restarted
    assert [t["state"] for t in planned["tasks"]] == ["RESTARTING"]
    wait_until(lambda: _state(client, "bad")[1] == ["FAILED"])  # and it fails again


def test_restart_with_tasks_restarts_everything(client: httpx.Client):
    _failed_task(client)
    planned = client.post("/connectors/bad/restart", params={"includeTasks": "TRUE"}).json()
    assert planned["connector"]["state"] == "RESTARTING"
    assert [t["state"] for t in planned["tasks"]] == ["RESTARTING"]


def test_restart_only_failed_without_tasks_leaves_a_running_connector(client: httpx.Client):
    _failed_task(client)
    response = client.post("/connectors/bad/restart?onlyFailed=true")
    assert response.status_code == 202
    planned = response.json()
    assert planned["connector"]["state"] == "RUNNING"
    assert [t["state"] for t in planned["tasks"]] == ["FAILED"]


def test_restart_task(client: httpx.Client):
    _failed_task(client)
    response = client.post("/connectors/bad/tasks/0/restart")
    assert response.status_code == 204 and response.content == b""
    assert_error(client.post("/connectors/bad/tasks/3/restart"), 404, "bad-3")
    assert_error(client.post("/connectors/bad/tasks/x/restart"), 404)


# ------------------------------------------------------------------ states


def test_pause_resume_stop_and_delete(client: httpx.Client, tmp_path: Path):
    _create(client, "src", source_config(tmp_path / "in.txt"))
    wait_until(lambda: _state(client, "src") == ("RUNNING", ["RUNNING"]))
    for _ in range(2):  # idempotent
        response = client.put("/connectors/src/pause")
        assert response.status_code == 202 and response.content == b""
    wait_until(lambda: _state(client, "src") == ("PAUSED", ["PAUSED"]))
    assert client.put("/connectors/src/resume").status_code == 202
    wait_until(lambda: _state(client, "src") == ("RUNNING", ["RUNNING"]))
    for _ in range(2):
        response = client.put("/connectors/src/stop")
        assert response.status_code == 204 and response.content == b""
    wait_until(lambda: _state(client, "src") == ("STOPPED", []))
    assert client.get("/connectors/src/tasks").json() == []
    assert client.get("/connectors/src").json()["tasks"] == []
    # A stopped connector: a restart is accepted and restarts nothing (Kafka's answers);
    # its former task has no status any more
    assert client.post("/connectors/src/restart").status_code == 204
    planned = client.post("/connectors/src/restart?includeTasks=true")
    assert planned.status_code == 202 and planned.json()["connector"]["state"] == "RESTARTING"
    assert planned.json()["tasks"] == []
    assert_error(client.get("/connectors/src/tasks/0/status"), 404, "src-0")
    assert _state(client, "src") == ("STOPPED", [])
    assert client.put("/connectors/src/pause").status_code == 202  # Kafka: stopped → paused
    wait_until(lambda: _state(client, "src") == ("PAUSED", ["PAUSED"]))
    assert client.put("/connectors/src/resume").status_code == 202
    wait_until(lambda: _state(client, "src") == ("RUNNING", ["RUNNING"]))
    response = client.delete("/connectors/src")
    assert response.status_code == 204 and response.content == b""
    assert client.get("/connectors").json() == []
    assert_error(client.get("/connectors/src"), 404, "src")
    assert_error(client.delete("/connectors/src"), 404, "src")


def test_pause_survives_a_restart_of_the_worker(start_rest: LiveServers, tmp_path: Path):
    first: Live = start_rest()
    _create(first.client, "src", source_config(tmp_path / "in.txt"))
    first.client.put("/connectors/src/pause")
    wait_until(lambda: _state(first.client, "src") == ("PAUSED", ["PAUSED"]))
    start_rest.close()
    second: Live = start_rest()
    wait_until(lambda: _state(second.client, "src") == ("PAUSED", ["PAUSED"]))
