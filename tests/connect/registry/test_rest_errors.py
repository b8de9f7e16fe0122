"""The registry's error contract over real HTTP: an error of ours is a 500 with
Confluent's body (`{"error_code": 50001, "message": …}`) naming only the exception's
type, the traceback goes to the registry log once, and the keep-alive connection goes
on serving (no "Exception in ASGI application" from uvicorn). Faults no request can
cause (a bug, a failing `_schemas` log) are injected into the real registry."""

from __future__ import annotations

import logging

import httpx
import pytest

from connect.registry.core import StoreError
from tests.connect.registry.conftest import Live

_LEAKS = ('File "', "Traceback", ".py", "/srv", "/tmp", "\n")


def _client_port(response: httpx.Response) -> int:
    """The local port of the connection that carried `response`."""
    return response.extensions["network_stream"].get_extra_info("client_addr")[1]


def _clean_500(response: httpx.Response) -> str:
    assert response.status_code == 500, response.text
    assert response.headers["content-type"] == "application/vnd.schemaregistry.v1+json"
    body = response.json()
    assert body["error_code"] == 50001, body
    for leak in _LEAKS:
        assert leak not in body["message"], body
    return body["message"]


@pytest.mark.parametrize(
    "fault",
    [
        FileNotFoundError(2, "No such file", "/srv/secret/registry.key"),
        StoreError("cannot open topic _schemas: [Errno 13] Permission denied: '/srv/log'"),
    ],
    ids=["bug", "store"],
)
def test_an_internal_error_is_50001_naming_its_type_only_and_keeps_the_connection(
    live: Live,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    fault: Exception,
) -> None:
    client = live.client
    before = client.get("/subjects")
    assert before.json() == []

    def broken(**_: object) -> list[str]:
        raise fault

    monkeypatch.setattr(live.registry, "subjects", broken)
    with caplog.at_level(logging.INFO):
        response = client.get("/subjects")
    message = _clean_500(response)
    assert type(fault).__name__ in message
    assert "registry log" in message
    # Once, from the registry, with the traceback; uvicorn logged nothing.
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [(r.name, r.exc_info is not None) for r in errors] == [("connect.registry", True)]
    monkeypatch.undo()
    after = client.get("/subjects")
    assert after.json() == []
    # Was: uvicorn closed the connection after the 500, so the client opened another.
    assert _client_port(before) == _client_port(response) == _client_port(after)


def test_malformed_and_invalid_bodies_are_4xx_in_confluents_shape(live: Live) -> None:
    client = live.client
    for body in (b"{bad", b"", b"[1]", b"\xff"):
        response = client.post("/subjects/s/versions", content=body)
        assert response.status_code == 400, response.text
        assert response.json()["error_code"] == 400
    response = client.post("/subjects/s/versions", json={"schema": '{"type": "nope"}'})
    assert response.status_code == 422, response.text
    assert response.json()["error_code"] == 42201
    assert client.get("/subjects").json() == []  # the same connection serves on
