"""The web console's server side on a live REST server over a real herder and log: the
page and its assets, who may read them, and the `/ops` endpoints the page reads.
(The page itself, in a browser against a worker process: tests/console.)"""

from __future__ import annotations

import base64
import itertools
import json
import posixpath
from pathlib import Path

import httpx
import pytest

from connect.herder.standalone import StandaloneHerder
from connect.registry.core import SchemaRegistry, SchemaRequest
from connect.rest import BasicAuth, RestServer
from connect.rest.auth import BasicAuthMiddleware
from connect.rest.ui import PUBLIC_PATHS
from log import FileLog
from tests.connect.rest.live import Live, LiveServers, sink_config, source_config, worker_config
from tests.waiting import wait_until

SECRET = "p4ss-never-shown"


def _auth() -> BasicAuth:
    return BasicAuth({"ops": "pw"})


# ------------------------------------------------------------------ page and assets


def test_the_page_and_its_assets(client: httpx.Client):
    for path in ("/ui", "/ui/"):
        page = client.get(path)
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        assert '<base href="/ui/">' in page.text
        assert "{{base}}" not in page.text
        csp = page.headers["content-security-policy"]
        assert "default-src 'self'" in csp and "script-src 'self'" in csp
    script = client.get("/ui/assets/js/main.js")
    assert script.status_code == 200
    assert script.headers["content-type"] == "text/javascript; charset=utf-8"
    assert script.headers["x-content-type-options"] == "nosniff"
    assert "import" in script.text
    again = client.get("/ui/assets/js/main.js", headers={"If-None-Match": script.headers["etag"]})
    assert again.status_code == 304 and not again.content
    assert client.get("/ui/assets/console.css").headers["content-type"].startswith("text/css")
    missing = client.get("/ui/assets/js/nope.js")
    assert missing.status_code == 404 and missing.json()["error_code"] == 404


def test_every_script_the_page_names_is_served(client: httpx.Client):
    page = client.get("/ui").text
    named = [part.split('"')[0] for part in page.split('href="assets/')[1:]]
    named += [part.split('"')[0] for part in page.split('src="assets/')[1:]]
    assert "js/main.js" in named and "js/prefetch.js" in named
    for asset in named:
        assert client.get(f"/ui/assets/{asset}").status_code == 200, asset
    # Every module a script imports is served too (no build step: the imports are URLs).
    for asset in [a for a in named if a.endswith(".js")]:
        text = client.get(f"/ui/assets/{asset}").text
        base = asset.rsplit("/", 1)[0]
        for line in text.splitlines():
            if line.startswith("import ") and " from " in line:
                target = line.rsplit(" from ", 1)[1].strip(' ";')
                resolved = posixpath.normpath(posixpath.join(base, target))
                assert client.get(f"/ui/assets/{resolved}").status_code == 200, (asset, target)


def test_the_console_is_public_and_its_data_is_not(start_rest: LiveServers):
    rest = start_rest(auth=_auth())
    anonymous = rest.client
    assert anonymous.get("/ui").status_code == 200
    assert anonymous.get("/ui/assets/js/api.js").status_code == 200
    for path in ("/ops/connectors", "/ops/workers", "/ops/topics", "/ops/schemas", "/connectors"):
        refused = anonymous.get(path)
        assert refused.status_code == 401, path
        assert refused.headers["www-authenticate"].startswith("Basic realm=")
    assert anonymous.post("/ui").status_code == 401  # only reads are public
    token = base64.b64encode(b"ops:pw").decode()
    allowed = anonymous.get("/ops/connectors", headers={"Authorization": f"Basic {token}"})
    assert allowed.status_code == 200


def test_public_paths_are_exact_prefixes_without_dot_segments():
    middleware = BasicAuthMiddleware(lambda *a: None, auth=_auth(), public=PUBLIC_PATHS)

    def public(path: str, method: str = "GET") -> bool:
        return middleware._is_public({"type": "http", "method": method, "path": path})

    assert public("/ui") and public("/ui/") and public("/ui/assets/js/main.js")
    assert public("/ui", "HEAD")
    assert not public("/ui", "PUT")
    assert not public("/uix") and not public("/ops/connectors") and not public("/")
    assert not public("/ui/../connectors") and not public("/ui/assets/../../metrics")


# ------------------------------------------------------------------ /ops/connectors


def test_connectors_with_state_tasks_and_counters(rest: Live, tmp_path: Path):
    (tmp_path / "in.txt").write_text("".join(f"line {i}\n" for i in range(300)))
    client = rest.client
    client.post("/connectors", json={"name": "src", "config": source_config(tmp_path / "in.txt")})
    client.post("/connectors", json={"name": "snk", "config": sink_config(tmp_path / "out.txt")})

    def settled() -> dict | None:
        out = {c["name"]: c for c in client.get("/ops/connectors").json()["connectors"]}
        done = out.get("snk", {}).get("records_out") == 300
        return out if done and out["src"]["records_out"] == 300 else None

    found = wait_until(settled, 30, "every line through both connectors")
    src, snk = found["src"], found["snk"]
    assert (src["type"], src["class"], src["state"], src["target"]) == (
        "source",
        "FileStreamSource",
        "RUNNING",
        "STARTED",
    )
    assert snk["type"] == "sink" and snk["worker_id"] == "w1"
    assert [(t["id"], t["state"], t["records_in"]) for t in snk["tasks"]] == [(0, "RUNNING", 300)]
    assert snk["tasks"][0]["trace"] is None and snk["dlq_records"] == 0
    one = client.get("/ops/connectors", params={"connector": "snk"}).json()
    assert [c["name"] for c in one["connectors"]] == ["snk"]
    assert client.get("/ops/connectors", params={"connector": "nope"}).status_code == 404


def test_a_failed_task_carries_its_trace(rest: Live):
    rest.client.post(
        "/connectors",
        json={
            "name": "bad",
            "config": {"connector.class": "tests.connect.plugins_for_tests.FailingSource"},
        },
    )

    def failed() -> dict | None:
        found = rest.client.get("/ops/connectors", params={"connector": "bad"}).json()
        tasks = found["connectors"][0]["tasks"]
        return tasks[0] if tasks and tasks[0]["state"] == "FAILED" else None

    task = wait_until(failed, 30, "the failing task FAILED")
    status = rest.client.get("/connectors/bad/status").json()["tasks"][0]
    assert task["trace"] == status["trace"] and "Traceback" in task["trace"]


def test_rates_and_history_come_from_successive_readings(rest: Live, tmp_path: Path):
    rest.client.post(
        "/connectors",
        json={
            "name": "steady",
            "config": {
                "connector.class": "VerifiableSource",
                "topic": "steady",
                "throughput": "200",
                "report.file": str(tmp_path / "report.jsonl"),
            },
        },
    )

    def flowing() -> dict | None:
        body = rest.client.get("/ops/connectors").json()
        steady = body["connectors"][0]
        samples = body["history"]["samples"]
        return body if steady["out_per_s"] > 50 and samples and samples[-1]["out"] > 50 else None

    body = wait_until(flowing, 30, "a rate from two readings")
    steady = body["connectors"][0]
    assert 50 < steady["in_per_s"] < 1000  # 200/s, give or take a reading's timing
    times = [s["t"] for s in body["history"]["samples"]]
    assert times == sorted(times) and all(b - a >= 1000 for a, b in itertools.pairwise(times))


def test_no_config_and_no_secret_in_the_console_endpoints(rest: Live, tmp_path: Path):
    config = {
        "connector.class": "JdbcSink",
        "topics": "payments",
        "connection.url": f"sqlite:///{tmp_path / 'p.db'}",
        "connection.password": SECRET,
    }
    assert rest.client.post("/connectors", json={"name": "db", "config": config}).status_code == 201
    wait_until(
        lambda: rest.client.get("/ops/connectors").json()["connectors"][0]["tasks"],
        30,
        "the sink's task",
    )
    for path in ("/ops/connectors", "/ops/workers", "/ops/topics", "/ops/schemas"):
        assert SECRET not in rest.client.get(path).text, path
    (db,) = rest.client.get("/ops/connectors").json()["connectors"]
    assert "config" not in db and all("config" not in t for t in db["tasks"])


# ------------------------------------------------------------------ workers, topics, schemas


def test_workers(rest: Live, tmp_path: Path):
    (tmp_path / "in.txt").write_text("x\n")
    rest.client.post(
        "/connectors", json={"name": "src", "config": source_config(tmp_path / "in.txt")}
    )
    rest.client.put("/connectors/src/pause")

    def paused() -> dict | None:
        workers = rest.client.get("/ops/workers").json()["workers"]
        return workers[0] if workers[0]["tasks"] == {"PAUSED": 1} else None

    me = wait_until(paused, 30, "the paused task counted")
    assert me["id"] == "w1" and me["this"] and me["status"] == "healthy"
    assert me["connectors"] == {"PAUSED": 1}
    assert me["url"] == rest.url


def test_topics_with_offsets_and_size(rest: Live, tmp_path: Path):
    (tmp_path / "in.txt").write_text("".join(f"line {i}\n" for i in range(40)))
    rest.client.post(
        "/connectors", json={"name": "src", "config": source_config(tmp_path / "in.txt")}
    )

    def lines() -> dict | None:
        topics = {t["name"]: t for t in rest.client.get("/ops/topics").json()["topics"]}
        return topics if topics.get("lines", {}).get("records") == 40 else None

    topics = wait_until(lines, 30, "40 records in lines")
    assert topics["lines"]["partitions"] == [
        {"partition": 0, "earliest_offset": 0, "latest_offset": 40}
    ]
    assert not topics["lines"]["internal"]
    assert topics["lines"]["segments"] >= 1 and topics["lines"]["size_bytes"] > 40 * len("line 0")
    storage = [rest.herder.config[k] for k in ("config.storage.topic", "status.storage.topic")]
    assert all(topics[name]["internal"] for name in storage)


def test_schemas_without_an_embedded_registry(client: httpx.Client):
    assert client.get("/ops/schemas").json() == {"enabled": False, "subjects": []}
    assert client.get("/ops/schemas/s/versions/1").status_code == 404


@pytest.fixture
def with_registry(tmp_path: Path):
    log = FileLog(tmp_path / "log")
    registry = SchemaRegistry(log)
    registry.start()
    herder = StandaloneHerder(worker_config(tmp_path / "log"), log=log, worker_id="w1")
    herder.start()
    server = RestServer(herder, host="127.0.0.1", port=0, registry=registry)
    server.start()
    client = httpx.Client(base_url=server.url, timeout=30)
    yield registry, client
    client.close()
    server.stop()
    herder.stop()
    registry.close()
    log.close()


def test_schemas_of_the_embedded_registry(with_registry):
    registry, client = with_registry
    fields = [{"name": "id", "type": "long"}]
    for extra in ([], [{"name": "memo", "type": ["null", "string"], "default": None}]):
        schema = json.dumps({"type": "record", "name": "Payment", "fields": fields + extra})
        registry.register("payments-value", SchemaRequest(schema))
    body = client.get("/ops/schemas").json()
    assert body["enabled"] is True
    (subject,) = body["subjects"]
    assert subject["subject"] == "payments-value" and subject["versions"] == [1, 2]
    assert subject["latest"] == {"version": 2, "id": 2, "type": "AVRO"}
    assert subject["compatibility"] == "BACKWARD" and subject["deleted"] is False
    one = client.get("/ops/schemas/payments-value/versions/1").json()
    assert one["version"] == 1 and "memo" not in one["schema"]
    latest = client.get("/ops/schemas/payments-value/versions/latest").json()
    assert latest["id"] == 2 and "memo" in latest["schema"]
    assert client.get("/ops/schemas/payments-value/versions/9").status_code == 404
    assert client.get("/ops/schemas/payments-value/versions/x").status_code == 400
    registry.delete_subject("payments-value")
    gone = client.get("/ops/schemas").json()["subjects"][0]
    assert gone["deleted"] is True and gone["latest"] is None


def test_workers_of_a_distributed_cluster(tmp_path: Path):
    """Two distributed herders on one log: /ops/workers of either lists both members,
    their REST URLs and the leader."""
    from connect.herder.distributed import DistributedHerder

    logs = [FileLog(tmp_path / "log") for _ in range(2)]
    config = worker_config(tmp_path / "log", **{"heartbeat.interval.ms": "100"})
    herders = [
        DistributedHerder(config, log=log, worker_id=f"w{i}", url=f"http://w{i}.example:8083")
        for i, log in enumerate(logs)
    ]
    server = RestServer(herders[0], host="127.0.0.1", port=0)
    try:
        for herder in herders:
            herder.start()
        server.start()
        with httpx.Client(base_url=server.url, timeout=30) as client:

            def both() -> dict | None:
                body = client.get("/ops/workers").json()
                members = [w for w in body["workers"] if w["member"]]
                return body if len(members) == 2 and body["generation"] else None

            body = wait_until(both, 30, "both workers in the group")
    finally:
        server.stop()
        for herder in herders:
            herder.stop()
        for log in logs:
            log.close()
    assert body["mode"] == "distributed"
    by_id = {w["id"]: w for w in body["workers"]}
    assert set(by_id) == {"w0", "w1"}
    assert by_id["w0"]["this"] and not by_id["w1"]["this"]
    assert by_id["w1"]["url"] == "http://w1.example:8083"
    assert [w["id"] for w in body["workers"] if w["leader"]] in (["w0"], ["w1"])
