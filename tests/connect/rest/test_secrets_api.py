"""No REST answer, status trace, validation message, log line or CLI output shows a
password: neither a PASSWORD-typed key's value nor the password inside a URL, in each
form published configs carry it (`user:pass@`, `?password=`, `;password=`). A config
read back masked and PUT again keeps the stored secrets (connect.herder.secrets).

A real herder, a real log and real HTTP (tests/connect/rest/live.py); the failing task
is LeakySource's, whose error quotes its URL and password as a driver's may."""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest

from connect.cli.main import main
from connect.herder.secrets import mask_text, restore_secrets, secret_spans
from tests.connect.rest.live import Live, assert_error
from tests.waiting import wait_until

LEAKY = "tests.connect.plugins_for_tests.LeakySource"
PASSWORD = "Pw-9f3k-key-secret"

#: The forms a password takes inside a URL, each with its own password.
URLS = {
    "userinfo": ("postgresql://app:Url-userinfo-77@db.example:5432/shop", "Url-userinfo-77"),
    "query": ("jdbc:postgresql://db:5432/shop?user=app&password=Url-query-78", "Url-query-78"),
    "semicolon": (
        "jdbc:sqlserver://db:1433;databaseName=shop;user=app;password=Url-semi-79",
        "Url-semi-79",
    ),
}


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (
            "postgresql+psycopg2://u:p%40ss@h:5432/db",
            "postgresql+psycopg2://u:[hidden]@h:5432/db",
        ),
        ("jdbc:mysql://u:pw1@h/db?ssl=true", "jdbc:mysql://u:[hidden]@h/db?ssl=true"),
        (
            "jdbc:postgresql://h/db?user=u&password=pw2&currentSchema=s",
            "jdbc:postgresql://h/db?user=u&password=[hidden]&currentSchema=s",
        ),
        (
            "jdbc:sqlserver://h;user=u;password={a;b};encrypt=true",
            "jdbc:sqlserver://h;user=u;password=[hidden];encrypt=true",
        ),
        ("jdbc:oracle:thin:scott/tiger@h:1521:orcl", "jdbc:oracle:thin:scott/[hidden]@h:1521:orcl"),
        ("libpq says host=h PASSWORD=pw3 dbname=d", "libpq says host=h PASSWORD=[hidden] dbname=d"),
        ("config {'connection.password': 'pw4'}", "config {'connection.password': '[hidden]'}"),
        ('{"ssl.key.password": "pw5"}', '{"ssl.key.password": "[hidden]"}'),
        # Not secrets: a port, a placeholder, prose.
        ("http://127.0.0.1:8083/connectors", "http://127.0.0.1:8083/connectors"),
        ("jdbc:postgresql://h/db?password=${file:/s.properties:pw}", None),
        ("password authentication failed for user app", None),
    ],
)
def test_every_form_of_a_password_in_text_is_masked(text: str, shown: str | None) -> None:
    assert mask_text(text) == (text if shown is None else shown)


def test_a_masked_url_sent_back_gets_its_stored_passwords_in_place() -> None:
    stored = {"connection.url": "postgresql://u:pw1@h1/db?password=pw2", "k.password": "pw3"}
    edited = {"connection.url": "postgresql://u:[hidden]@h2/db?password=[hidden]"}
    edited["k.password"] = "[hidden]"
    assert restore_secrets(edited, stored, set()) == {
        "connection.url": "postgresql://u:pw1@h2/db?password=pw2",
        "k.password": "pw3",
    }
    # A value rewritten with fewer masks than secrets is the user's, as sent.
    rewritten = {"connection.url": "postgresql://u:[hidden]@h2/db"}
    assert restore_secrets(rewritten, stored, set()) == rewritten
    assert secret_spans("no secret here") == []


def _leaky(url: str) -> dict[str, str]:
    return {"connector.class": LEAKY, "connection.url": url, "connection.password": PASSWORD}


def _answers(client: httpx.Client, name: str) -> list[str]:
    """Every answer of the REST API that carries the connector's config or status."""
    paths = [
        f"/connectors/{name}",
        f"/connectors/{name}/config",
        f"/connectors/{name}/status",
        f"/connectors/{name}/tasks",
        f"/connectors/{name}/tasks-config",
        f"/connectors/{name}/tasks/0/status",
        "/connectors?expand=info&expand=status",
        "/ops/connectors",  # the console's list, traces included
    ]
    out = []
    for path in paths:
        response = client.get(path)
        assert response.status_code == 200, (path, response.text)
        out.append(response.text)
    return out


@pytest.mark.parametrize("form", sorted(URLS))
def test_no_answer_trace_log_or_cli_line_shows_a_password(
    rest: Live,
    client: httpx.Client,
    form: str,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url, url_password = URLS[form]
    secrets = (PASSWORD, url_password)
    caplog.set_level(logging.INFO)
    seen: list[str] = []

    created = client.post("/connectors", json={"name": "db", "config": _leaky(url)})
    assert created.status_code == 201, created.text
    seen.append(created.text)
    assert created.json()["config"]["connection.password"] == "[hidden]"
    assert "[hidden]" in created.json()["config"]["connection.url"]

    def failed() -> dict[str, Any] | None:
        status = client.get("/connectors/db/status").json()
        tasks = status["tasks"]
        return status if tasks and tasks[0]["state"] == "FAILED" else None

    status = wait_until(failed, 30, "the task failed")
    trace = status["tasks"][0]["trace"]
    # The trace says what failed, with the URL, masked.
    assert "cannot connect to" in trace and "[hidden]" in trace, trace
    seen += _answers(client, "db")
    ops = client.get("/ops/connectors").json()
    (listed,) = [c for c in ops["connectors"] if c["name"] == "db"]
    assert "cannot connect to" in listed["tasks"][0]["trace"]

    # PUT .../config answers with the config too (masked); so does a rejected one.
    config = client.get("/connectors/db/config").json()
    replaced = client.put("/connectors/db/config", json={**config, "topic": "other"})
    assert replaced.status_code == 200, replaced.text
    seen.append(replaced.text)
    refused = client.put("/connectors/db/config", json={**config, "tasks.max": url})
    assert_error(refused, 400, "tasks.max")
    seen.append(refused.text)
    validated = client.put(
        "/connector-plugins/LeakySource/config/validate",
        json={**_leaky(url), "name": "db", "tasks.max": url},
    )
    assert validated.status_code == 200 and validated.json()["error_count"] == 1
    seen.append(validated.text)
    nameless = client.put(
        "/connector-plugins/LeakySource/config/validate",
        json={"connection.url": url, "connection.password": PASSWORD},
    )
    assert_error(nameless, 400, "contains no connector type")
    seen.append(nameless.text)

    # The CLI prints traces and configs from those answers.
    for argv in (["status"], ["status", "--json"], ["ps"], ["ps", "--json"]):
        assert main([*argv, "--url", rest.url]) == 0
    out = capsys.readouterr()
    assert "FAILED" in out.out
    seen += [out.out, out.err]

    # The worker logged the failure, its traceback included.
    assert "cannot connect to" in caplog.text
    seen.append(caplog.text)
    for text in seen:
        for secret in secrets:
            assert secret not in text, (secret, text)

    # Masked and sent back, the config keeps the stored secrets.
    stored = rest.herder.configs.snapshot().connectors["db"]
    assert stored["connection.password"] == PASSWORD
    assert stored["connection.url"] == url and stored["topic"] == "other"


def test_a_url_edited_around_its_mask_keeps_the_stored_password(client: httpx.Client) -> None:
    url, password = URLS["userinfo"]
    assert client.post("/connectors", json={"name": "db", "config": _leaky(url)}).status_code == 201
    config = client.get("/connectors/db/config").json()
    config["connection.url"] = config["connection.url"].replace("db.example", "db2.example")
    assert client.put("/connectors/db/config", json=config).status_code == 200
    edited = client.get("/connectors/db/tasks").json()[0]["config"]["connection.url"]
    assert edited == "postgresql://app:[hidden]@db2.example:5432/shop"
    patched = client.patch("/connectors/db/config", json={"topic": "t2"})
    assert patched.status_code == 200 and password not in patched.text


def test_a_plugin_whose_validate_raises_is_refused_at_the_door(client: httpx.Client) -> None:
    """A 400 naming connector.class and the failure, not a 500; nothing is created."""
    config = {
        "connector.class": "tests.connect.plugins_for_tests.UnvalidatableSource",
        "connection.password": PASSWORD,
    }
    refused = client.post("/connectors", json={"name": "u", "config": config})
    message = assert_error(refused, 400, "connector.class", "RuntimeError: validation crashed")
    assert PASSWORD not in message
    assert client.get("/connectors").json() == []


def test_a_masked_config_copied_to_a_new_connector_is_refused(client: httpx.Client) -> None:
    """The masks would become its passwords, and it would fail to log in on every
    start: refused at the door, naming each key (validate, which takes a config read
    back as it is, does not count them as errors)."""
    url, _ = URLS["query"]
    assert client.post("/connectors", json={"name": "db", "config": _leaky(url)}).status_code == 201
    masked = client.get("/connectors/db/config").json()
    del masked["name"]
    refused = client.post("/connectors", json={"name": "copy", "config": masked})
    message = assert_error(refused, 400, "contains the following 2 error(s)")
    for key in ("connection.password", "connection.url"):
        assert (
            f"{key}: the value holds [hidden], the mask shown in place of a secret, and "
            "connector copy has no stored secret there to keep; send the secret itself"
        ) in message
    assert client.get("/connectors").json() == ["db"]
    checked = client.put(
        "/connector-plugins/LeakySource/config/validate", json=masked | {"name": "x"}
    )
    assert checked.status_code == 200 and checked.json()["error_count"] == 0


def test_the_api_description_says_how_configs_are_masked(client: httpx.Client) -> None:
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    for model in ("ConnectorInfo", "TaskInfo"):
        description = schemas[model]["properties"]["config"]["description"]
        assert "[hidden]" in description and "stored secrets are kept" in description
