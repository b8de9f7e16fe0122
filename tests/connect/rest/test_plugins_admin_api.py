"""`/`, `/health`, `/connector-plugins`, `/admin/loggers`, the OpenAPI description, and
what any path answers when it is unknown, used with the wrong method or sent bad JSON."""

from __future__ import annotations

import logging
import time

import httpx
import pytest

from tests.connect.rest.live import LiveServers, assert_error

SOURCE = "connectors.file.source.FileStreamSourceConnector"
KAFKA_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"


# ------------------------------------------------------------------ worker


def test_server_info(client: httpx.Client):
    info = client.get("/").json()
    assert set(info) == {"version", "commit", "kafka_cluster_id"}


def test_health_is_200_when_started(client: httpx.Client):
    response = client.get("/health")
    assert response.status_code == 200 and response.json()["status"] == "healthy"
    assert response.json()["message"]


def test_health_is_503_while_the_herder_starts(start_rest: LiveServers):
    response = start_rest(start_herder=False).client.get("/health")
    assert response.status_code == 503 and response.json()["status"] == "starting"


# ------------------------------------------------------------------ plugins


def test_connector_plugins(client: httpx.Client):
    plugins = client.get("/connector-plugins").json()
    assert {p["type"] for p in plugins} == {"source", "sink"}
    assert all(set(p) == {"class", "type", "version"} for p in plugins)
    assert SOURCE in {p["class"] for p in plugins}
    assert client.get("/connector-plugins/").json() == plugins  # Kafka's ducktape uses this
    assert client.get("/connector-plugins?connectorsOnly=true").json() == plugins
    everything = client.get("/connector-plugins", params={"connectorsOnly": "false"}).json()
    kinds = {p["type"] for p in everything}
    assert {"source", "sink", "transformation"} <= kinds
    assert kinds <= {
        "source",
        "sink",
        "converter",
        "header_converter",
        "transformation",
        "predicate",
    }


def test_plugin_config(client: httpx.Client):
    for plugin in ("FileStreamSource", KAFKA_SOURCE, SOURCE):
        keys = client.get(f"/connector-plugins/{plugin}/config").json()
        names = {k["name"] for k in keys}
        assert {"file", "topic", "connector.class", "tasks.max"} <= names, plugin
        assert set(keys[0]) >= {"name", "type", "required", "default_value", "documentation"}
    assert_error(client.get("/connector-plugins/no.Such/config"), 404, "Unknown plugin")


def test_validate_valid_and_invalid_configs(client: httpx.Client, tmp_path):
    config = {"connector.class": "FileStreamSource", "file": str(tmp_path / "f"), "topic": "t"}
    config["name"] = "src"  # required, as in Kafka
    response = client.put("/connector-plugins/FileStreamSource/config/validate", json=config)
    assert response.status_code == 200
    infos = response.json()
    assert infos["error_count"] == 0 and SOURCE.endswith(infos["name"].rsplit(".", 1)[-1])
    names = {c["definition"]["name"] for c in infos["configs"]}
    assert {"name", "connector.class", "tasks.max", "topic", "file", "transforms"} <= names

    bad = client.put(
        "/connector-plugins/FileStreamSource/config/validate",
        json={"connector.class": "FileStreamSource", "tasks.max": "many"},
    )
    assert bad.status_code == 200  # invalid is still 200, with errors per key
    errors = {c["value"]["name"]: c["value"]["errors"] for c in bad.json()["configs"]}
    assert bad.json()["error_count"] >= 2 and errors["topic"] and errors["tasks.max"]


def test_validate_matches_the_plugin_like_kafka(client: httpx.Client):
    body = {"connector.class": KAFKA_SOURCE, "topic": "t"}
    for plugin in ("FileStreamSource", "FileStreamSourceConnector", KAFKA_SOURCE):
        response = client.put(f"/connector-plugins/{plugin}/config/validate", json=body)
        assert response.status_code == 200, (plugin, response.text)
    assert_error(
        client.put("/connector-plugins/FileStreamSink/config/validate", json=body),
        400,
        f"Included connector type {KAFKA_SOURCE} does not match request type FileStreamSink",
    )
    assert_error(
        client.put("/connector-plugins/FileStreamSource/config/validate", json={"topic": "t"}),
        400,
        "contains no connector type",
    )
    assert_error(
        client.put("/connector-plugins/x/config/validate", json={"connector.class": "x"}), 400
    )


# ------------------------------------------------------------------ loggers


@pytest.mark.usefixtures("restore_logging")
def test_loggers_worker_scope(client: httpx.Client):
    levels = client.get("/admin/loggers").json()
    assert "root" in levels and set(levels["root"]) == {"level", "last_modified"}
    logging.getLogger("tributary.test.rest.child")
    before_ms = int(time.time() * 1000)
    response = client.put("/admin/loggers/tributary.test.rest", json={"level": "DEBUG"})
    assert response.status_code == 200
    affected = response.json()
    assert "tributary.test.rest" in affected and "tributary.test.rest.child" in affected
    assert all(name.startswith("tributary.test.rest") for name in affected)
    level = client.get("/admin/loggers/tributary.test.rest").json()
    assert level["level"] == "DEBUG" and level["last_modified"] >= before_ms
    assert logging.getLogger("tributary.test.rest.child").isEnabledFor(logging.DEBUG)
    assert client.get("/admin/loggers").json()["tributary.test.rest.child"]["level"] == "DEBUG"
    # an unknown scope falls back to the worker
    assert (
        client.put("/admin/loggers/tributary.test.rest?scope=galaxy", json={"level": "warn"}).json()
        == affected
    )
    # a level already set changes nothing and lists nothing (Kafka's answer)
    again = client.put("/admin/loggers/tributary.test.rest", json={"level": "WARN"}).json()
    assert again == []


@pytest.mark.usefixtures("restore_logging")
def test_loggers_cluster_scope_is_204(client: httpx.Client):
    response = client.put("/admin/loggers/tributary.test.c?scope=cluster", json={"level": "ERROR"})
    assert response.status_code == 204 and response.content == b""
    assert client.get("/admin/loggers/tributary.test.c").json()["level"] == "ERROR"


@pytest.mark.usefixtures("restore_logging")
def test_logger_errors(client: httpx.Client):
    assert_error(client.get("/admin/loggers/tributary.never.set"), 404, "not found")
    assert_error(
        client.put("/admin/loggers/tributary.x", json={"lvl": "DEBUG"}),
        400,
        "Desired 'level' parameter was not specified in request.",
    )
    assert_error(client.put("/admin/loggers/tributary.x", json={"level": "LOUD"}), 404, "LOUD")
    assert_error(client.put("/admin/loggers/tributary.x", content=b"{"), 400)


# ------------------------------------------------------------------ any path


def test_unknown_paths_are_404_with_the_error_body(client: httpx.Client):
    assert_error(client.get("/nope"), 404, "HTTP 404 Not Found")
    assert_error(client.get("/connectors/a/b/c/d"), 404)
    assert_error(client.post("/admin"), 404)
    # "/" inside a name cannot be a path segment: such names are refused at creation
    assert_error(client.get("/connectors/a%2Fb"), 404)


def test_wrong_methods_are_405(client: httpx.Client):
    response = client.delete("/connector-plugins")
    assert_error(response, 405, "HTTP 405 Method Not Allowed")
    assert "GET" in response.headers["allow"]
    assert_error(client.post("/connectors/x/config", json={}), 405)
    assert_error(client.get("/connectors/x/pause"), 405)


def test_malformed_bodies_are_400_not_kafkas_500(client: httpx.Client):
    """Kafka's exception mapper turns Jackson's parse errors into 500s; the client has
    a request to fix, so here they are 400."""
    assert_error(client.post("/connectors", content=b"{name: x}"), 400, "not valid JSON")
    assert_error(client.post("/connectors", content=b""), 400, "no body")
    assert_error(client.post("/connectors", content=b"\xff\xfe"), 400)
    assert_error(client.post("/connectors", json=["a"]), 400, "JSON object")
    assert_error(client.put("/connectors/x/config", content=b"[1,"), 400)
    assert_error(client.post("/connectors", json={"name": "x", "config": "a=b"}), 400, "object")


def test_openapi_description_is_served(client: httpx.Client):
    spec = client.get("/openapi.json").json()
    assert spec["openapi"].startswith("3.")
    paths = spec["paths"]
    assert set(paths["/connectors/{name}/offsets"]) == {"get", "patch", "delete"}
    assert set(paths["/connectors/{name}/config"]) == {"get", "put", "patch"}
    assert "/connector-plugins/{plugin}/config/validate" in paths
    assert "/admin/loggers/{logger}" in paths and "/health" in paths
    schemas = spec["components"]["schemas"]
    assert {"ConnectorInfo", "ConnectorStateInfo", "ErrorMessage", "ConfigInfos"} <= set(schemas)
    create = paths["/connectors"]["post"]
    assert "201" in create["responses"] and "409" in create["responses"]
    assert create["requestBody"]["content"]["application/json"]["schema"]["required"] == [
        "name",
        "config",
    ]
