"""The server itself: basic auth, the listener from the worker config, start and stop,
and the standalone worker serving its REST API."""

from __future__ import annotations

import base64
import threading
from pathlib import Path

import httpx
import pytest

from connect.api import ConfigError
from connect.rest import BasicAuth, ListenError, RestServer, listener_from_config
from connect.standalone import StandaloneWorker
from tests.connect.rest.live import LiveServers, assert_error, source_config, worker_config

# ------------------------------------------------------------------ basic auth


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def _users_file(tmp_path: Path) -> Path:
    path = tmp_path / "users.properties"
    path.write_text(
        "# Kafka's PropertyFileLoginModule format\n"
        "! another comment\n"
        "\n"
        "alice: s3cret:with:colons\n"
        "bob=hunter2\n"
        "carol  pass word\n"
    )
    return path


def test_users_file_formats(tmp_path: Path):
    auth = BasicAuth.from_file(_users_file(tmp_path))
    assert auth.check(_basic("alice", "s3cret:with:colons"))
    assert auth.check(_basic("bob", "hunter2"))
    assert auth.check(_basic("carol", "pass word"))
    assert not auth.check(_basic("bob", "hunter3"))
    assert not auth.check(_basic("mallory", "hunter2"))
    assert not auth.check(None)
    assert not auth.check("Bearer abc")
    assert not auth.check("Basic !!!not-base64")


def test_users_file_errors_name_the_key(tmp_path: Path):
    with pytest.raises(ConfigError, match=r"rest\.basic\.auth\.users\.file"):
        BasicAuth.from_file(tmp_path / "missing")
    empty = tmp_path / "empty"
    empty.write_text("# nobody\n")
    with pytest.raises(ConfigError, match="names no user"):
        BasicAuth.from_file(empty)
    no_password = tmp_path / "nopass"
    no_password.write_text("alice:\n")
    with pytest.raises(ConfigError, match="line 1"):
        BasicAuth.from_file(no_password)


def test_basic_auth_guards_every_path(start_rest: LiveServers, tmp_path: Path):
    live = start_rest(auth=BasicAuth.from_file(_users_file(tmp_path)))
    for path in ("/", "/connectors", "/openapi.json", "/nope", "/health"):
        response = live.client.get(path)
        assert_error(response, 401, "User cannot access the resource.")
        assert response.headers["www-authenticate"].startswith('Basic realm="Connect"')
    wrong = live.client.get("/connectors", auth=("bob", "wrong"))
    assert_error(wrong, 401)
    ok = live.client.get("/connectors", auth=("bob", "hunter2"))
    assert ok.status_code == 200 and ok.json() == []
    created = live.client.post(
        "/connectors",
        json={"name": "src", "config": source_config(tmp_path / "in.txt")},
        auth=("alice", "s3cret:with:colons"),
    )
    assert created.status_code == 201
    assert_error(live.client.get("/nope", auth=("bob", "hunter2")), 404)


# ------------------------------------------------------------------ listeners


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({}, ("127.0.0.1", 8083)),
        ({"listeners": ["http://127.0.0.1:8083"]}, ("127.0.0.1", 8083)),
        ({"listeners": "http://localhost:9000"}, ("localhost", 9000)),
        ({"listeners": ["http://:8084"]}, ("0.0.0.0", 8084)),
        ({"listeners": "http://[::1]:8085, http://127.0.0.1:1"}, ("::1", 8085)),
        ({"listeners": ["http://127.0.0.1:0"]}, ("127.0.0.1", 0)),
        ({"rest.port": 9100}, ("127.0.0.1", 9100)),
        ({"rest.port": "9101", "rest.host.name": "localhost"}, ("localhost", 9101)),
        ({"listeners": ["http://127.0.0.1:8083"], "rest.port": None}, ("127.0.0.1", 8083)),
    ],
)
def test_listener_from_config(config: dict, expected: tuple[str, int]):
    assert listener_from_config(config) == expected


@pytest.mark.parametrize(
    "config",
    [
        {"listeners": ["https://127.0.0.1:8443"]},
        {"listeners": ["http://127.0.0.1"]},
        {"listeners": ["http://127.0.0.1:99999"]},
        {"rest.port": "eighty"},
    ],
)
def test_bad_listeners_name_the_key(config: dict):
    with pytest.raises(ConfigError, match=r"listeners|rest\.port"):
        listener_from_config(config)


# ------------------------------------------------------------------ start, stop


def test_port_zero_picks_a_real_port_and_stop_is_clean(start_rest: LiveServers):
    live = start_rest()
    assert live.server.port > 0 and live.url == f"http://127.0.0.1:{live.server.port}"
    assert live.client.get("/").status_code == 200
    port = live.server.port
    live.server.stop()
    live.server.stop()  # idempotent
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/", timeout=5)
    assert not [t for t in threading.enumerate() if t.name == "connect-rest"]


def test_a_taken_port_fails_at_start(start_rest: LiveServers):
    live = start_rest()
    other = RestServer(live.herder, host="127.0.0.1", port=live.server.port)
    with pytest.raises(ListenError, match=f"^127.0.0.1:{live.server.port} is in use"):
        other.start()


def test_requests_in_flight_finish_on_stop(start_rest: LiveServers, tmp_path: Path):
    live = start_rest()
    results: list[int] = []
    gate = threading.Event()
    original = live.herder.connectors

    def slow_connectors() -> list[str]:
        gate.set()
        threading.Event().wait(0.5)
        return original()

    live.herder.connectors = slow_connectors  # type: ignore[method-assign]
    thread = threading.Thread(
        target=lambda: results.append(live.client.get("/connectors").status_code)
    )
    thread.start()
    assert gate.wait(10)
    live.server.stop()
    thread.join(10)
    assert results == [200]


def test_standalone_worker_serves_rest_with_auth(tmp_path: Path):
    users = _users_file(tmp_path)
    config = worker_config(
        tmp_path / "log",
        listeners="http://127.0.0.1:0",
        **{"rest.basic.auth.users.file": str(users)},
    )
    connector = ("src", {**source_config(tmp_path / "in.txt"), "name": "src"})
    worker = StandaloneWorker(config, [connector])
    worker.start()
    try:
        url = worker.rest.url
        assert_error(httpx.get(f"{url}/connectors"), 401)
        response = httpx.get(f"{url}/connectors", auth=("bob", "hunter2"))
        assert response.json() == ["src"]
    finally:
        worker.stop()
