"""Sink offsets outside a partition's range [log start, log end] are refused at every
door that sets them (REST PATCH: 400 in Kafka's error shape; `connect offsets set`:
one line, exit 1), nothing is changed, and `--to-earliest` / `--to-latest` move a
sink to either end explicitly. A real `connect standalone` worker, over HTTP."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.cli.test_ops_cli import AUTH, Setup, setup  # noqa: F401  (the worker fixture)
from tests.waiting import wait_until

pytestmark = pytest.mark.integration


def _entry(offset: int, partition: int = 0, topic: str = "lines") -> dict:
    return {
        "partition": {"kafka_topic": topic, "kafka_partition": partition},
        "offset": {"kafka_offset": offset},
    }


def _http(setup: Setup, method: str, path: str, offsets: Any = None) -> httpx.Response:  # noqa: F811
    body = None if offsets is None else {"offsets": offsets}
    return httpx.request(method, setup.worker.url + path, json=body, auth=AUTH, timeout=30)


def _one_line_error(result) -> str:
    assert result.returncode == 1, result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


@pytest.fixture(scope="module")
def stopped(setup: Setup) -> Setup:  # noqa: F811
    assert setup.http("PUT", "/connectors/sink/stop").status_code == 204
    wait_until(
        lambda: (
            setup.http("GET", "/connectors/sink/status").json()["connector"]["state"] == "STOPPED"
        ),
        30,
        "sink stopped",
    )
    assert setup.lag()["committed_offset"] == 200
    return setup


def test_rest_refuses_an_offset_outside_the_partition_with_the_valid_range(
    stopped: Setup,
) -> None:
    for offset in (201, 10_000):
        response = _http(stopped, "PATCH", "/connectors/sink/offsets", [_entry(offset)])
        assert response.status_code == 400
        body = response.json()
        assert body["error_code"] == 400 and set(body) == {"error_code", "message"}
        assert f"{offset} for lines-0" in body["message"] and "0..200" in body["message"]
    assert stopped.lag()["committed_offset"] == 200  # nothing changed
    # A partition the topic does not have is refused too, naming it.
    response = _http(stopped, "PATCH", "/connectors/sink/offsets", [_entry(0, 3)])
    assert response.status_code == 400 and "lines-3" in response.json()["message"]
    # Both ends are valid: the log end means nothing to replay.
    for offset in (0, 200):
        response = _http(stopped, "PATCH", "/connectors/sink/offsets", [_entry(offset)])
        assert response.status_code == 200, response.text
        assert stopped.lag()["committed_offset"] == offset


def test_cli_refuses_an_offset_past_the_end_in_one_line(stopped: Setup) -> None:
    line = _one_line_error(stopped.run("offsets", "set", "sink", "--sink", "lines:0=999"))
    assert "400" in line and "999 for lines-0" in line and "0..200" in line
    body = json.dumps([_entry(500)])
    line = _one_line_error(stopped.run("offsets", "set", "sink", body))
    assert "500 for lines-0" in line and "0..200" in line


@pytest.mark.parametrize("action", ["set", "reset"])
def test_to_earliest_and_to_latest_move_a_sink_to_either_end(stopped: Setup, action) -> None:
    done = stopped.run("offsets", action, "sink", "--to-earliest")
    assert done.returncode == 0, done.stderr
    assert stopped.lag()["committed_offset"] == 0 and stopped.lag()["lag"] == 200
    done = stopped.run("offsets", action, "sink", "--to-latest", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["offsets"] == [_entry(200)]
    assert stopped.lag()["committed_offset"] == 200 and stopped.lag()["lag"] == 0


def test_to_an_end_needs_a_sink_and_one_way_of_giving_offsets(stopped: Setup) -> None:
    line = _one_line_error(stopped.run("offsets", "set", "source", "--to-latest"))
    assert "source connector" in line
    line = _one_line_error(
        stopped.run("offsets", "set", "sink", "--to-latest", "--sink", "lines:0=1")
    )
    assert "one way" in line
    response = _http(stopped, "GET", "/ops/connectors/sink/offsets-at-end?end=middle")
    assert response.status_code == 400
