"""The id-lookup fast path answers exactly as the application would, never without
authentication, and never from a stale cache."""

from __future__ import annotations

from collections.abc import Callable

from tests.connect.registry.conftest import Live, record_schema

V1 = record_schema("User", "id")
V2 = record_schema("User", "id", "name")


def test_fast_answers_equal_the_applications(client) -> None:
    client.post("/subjects/s/versions", json={"schema": V1})
    fast = client.get("/schemas/ids/1")
    # A query string takes the application's path; `subject` of a non-holder adds nothing.
    slow = client.get("/schemas/ids/1", params={"subject": "not-a-holder"})
    assert fast.status_code == slow.status_code == 200
    assert fast.content == slow.content
    assert fast.headers["content-type"] == slow.headers["content-type"]
    assert client.get("/schemas/ids/99").json()["error_code"] == 40403


def test_a_hard_deleted_id_is_not_served_from_the_cache(client) -> None:
    client.post("/subjects/s/versions", json={"schema": V1})
    assert client.post("/subjects/t/versions", json={"schema": V2}).json()["id"] == 2
    assert client.get("/schemas/ids/1").status_code == 200  # cached now
    client.delete("/subjects/s/versions/1")
    assert client.delete("/subjects/s/versions/1?permanent=true").status_code == 200
    assert client.get("/schemas/ids/1").json()["error_code"] == 40403
    assert client.get("/schemas/ids/2").status_code == 200


def test_the_fast_path_needs_authentication(make_live: Callable[..., Live], tmp_path) -> None:
    from connect.rest.auth import BasicAuth

    users = tmp_path / "users"
    users.write_text("alice: secret\n")
    live = make_live(auth=BasicAuth.from_file(users))
    ok = live.client.post("/subjects/s/versions", json={"schema": V1}, auth=("alice", "secret"))
    assert ok.status_code == 200
    assert live.client.get("/schemas/ids/1").status_code == 401
    assert live.client.get("/schemas/ids/1", auth=("alice", "secret")).status_code == 200
