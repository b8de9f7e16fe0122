"""The connector list and one connector's page, driven in the browser: what they show
agrees with the REST API, and what they do (pause, resume, restart, create, edit,
delete) reaches the worker."""

from __future__ import annotations

import json

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.support.select import Select

from tests.console.conftest import Console, ConsolePage
from tests.waiting import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.integration]

FIXTURE_CONNECTORS = {
    "orders-source",
    "lines-source",
    "lines-archive",
    "payments-db",
    "flaky-source",
    "flaky-restart",
}


def test_the_list_shows_every_connector_with_its_state(page: ConsolePage, console: Console):
    rows = page.rows(minimum=len(FIXTURE_CONNECTORS))
    assert set(rows) >= FIXTURE_CONNECTORS
    for name in FIXTURE_CONNECTORS:
        wanted = console.status(name)["connector"]["state"]
        wait_until(lambda n=name, w=wanted: page.rows().get(n) == w, 10, f"{name} shown {wanted}")
    archive = page.read('tr[data-connector="lines-archive"]')
    assert "sink" in archive and "STOPPED" in archive
    orders = page.read('tr[data-connector="orders-source"]')
    assert "VerifiableSource" in orders and "2/2" in orders
    # The summary counts what the list holds.
    assert page.read(".cards .stat-value") == str(len(page.rows()))

    # The state filter narrows the list to the connectors with a failure.
    def failing_through_rest() -> set[str]:
        out = set()
        for name, details in console.client.get("/connectors?expand=status").json().items():
            states = [details["status"]["connector"]["state"]]
            states += [t["state"] for t in details["status"]["tasks"]]
            if "FAILED" in states:
                out.add(name)
        return out

    wait_until(lambda: "flaky-source" in failing_through_rest(), 30, "flaky-source failing")
    page.click('.chip[data-filter="FAILED"]')
    wait_until(
        lambda: set(page.rows()) == failing_through_rest(), 10, "only the failing connectors"
    )
    assert "orders-source" not in page.rows()
    page.click('.chip[data-filter="ALL"]')
    page.rows(minimum=len(FIXTURE_CONNECTORS))


def test_pause_and_resume_from_the_page(page: ConsolePage, console: Console):
    page.open("#/connectors/orders-source")
    page.wait("h1 .state", text="RUNNING")
    page.click("[data-action=pause]")
    console.wait_state("orders-source", "PAUSED", tasks=2)
    page.wait("h1 .state", text="PAUSED")
    page.click("[data-action=resume]")
    console.wait_state("orders-source", "RUNNING", tasks=2)
    page.wait("h1 .state", text="RUNNING")
    # The throughput chart has the history of the polls so far: two lines, in and out.
    chart = page.wait(".chart-svg")
    assert len(chart.find_elements("css selector", "path.line")) == 2


def test_a_failing_task_shows_its_trace(page: ConsolePage, console: Console):
    status = wait_until(
        lambda: (
            (s := console.status("flaky-source"))
            and s["tasks"]
            and s["tasks"][0]["state"] == "FAILED"
            and s
        ),
        30,
        "flaky-source's task FAILED",
    )
    page.open("#/connectors/flaky-source")
    shown = page.read('tr[data-trace-of="0"] pre.trace', text="failing while")
    assert "RuntimeError" in shown
    assert status["tasks"][0]["trace"].strip().splitlines()[-1] in shown
    page.wait('tr[data-task="0"][data-state="FAILED"]')
    page.wait(".alert-error", text="1 task failed")
    page.open("#/connectors")
    assert "1 failed" in page.read('tr[data-connector="flaky-source"]')


def test_restart_failed_tasks_from_the_page(page: ConsolePage, console: Console):
    wait_until(
        lambda: (s := console.status("flaky-restart")) and s["tasks"][0]["state"] == "FAILED",
        30,
        "flaky-restart's task FAILED",
    )
    (console.directory / "flaky-restart.fail").unlink()  # the cause is fixed
    page.open("#/connectors/flaky-restart")
    page.wait('tr[data-task="0"][data-state="FAILED"]')
    page.click("[data-action=restart-menu]")
    page.click("[data-action=restart-failed]")
    console.wait_state("flaky-restart", "RUNNING", tasks=1)
    page.wait('tr[data-task="0"][data-state="RUNNING"]')
    assert not page.find('tr[data-trace-of="0"]')


def test_create_edit_restart_and_delete_from_the_page(page: ConsolePage, console: Console):
    name = "made-in-the-console"
    config = {
        "connector.class": "VerifiableSource",
        "tasks.max": "1",
        "topic": "console-made",
        "throughput": "3",
        "report.file": str(console.directory / "made.jsonl"),
    }
    page.click("[data-action=new-connector]")
    page.wait_visible("#create-name").send_keys(name)
    page.set_text("#create-config", json.dumps(config))
    page.click('.modal [data-action="create"]')
    console.wait_state(name, "RUNNING", tasks=1)
    page.wait("h1 .connector-name", text=name)  # the page moved to the new connector

    # Edit: the config in the dialog, one value changed, saved.
    page.open(f"#/connectors/{name}/config")
    page.click("[data-action=edit-config]")
    shown = json.loads(page.wait("#edit-config").get_attribute("value"))
    assert shown == {**config, "name": name}
    page.set_text("#edit-config", json.dumps({**shown, "throughput": "7"}))
    page.click("[data-action=save-config]")
    wait_until(
        lambda: console.client.get(f"/connectors/{name}/config").json().get("throughput") == "7",
        20,
        "the edited config through the REST API",
    )
    page.wait('tr[data-key="throughput"]', text="7")

    # Restart the connector and its tasks: the new task instance counts from zero again.
    def records_out() -> int:
        response = console.client.get(f"/ops/connectors?connector={name}")
        return response.json()["connectors"][0]["records_out"]

    wait_until(lambda: records_out() >= 6, 20, "the new connector's first records")
    before = records_out()
    page.click("[data-action=restart-menu]")
    page.click("[data-action=restart-all]")
    page.wait(".toast", text=f"Restarting {name} and its tasks")
    wait_until(lambda: records_out() < before, 20, "the restarted task counting from zero")
    console.wait_state(name, "RUNNING", tasks=1)

    # Delete, after confirming.
    page.click("[data-action=delete]")
    page.click('.modal [data-action="confirm"]')
    wait_until(
        lambda: console.client.get(f"/connectors/{name}").status_code == 404,
        20,
        "the connector deleted through the REST API",
    )
    rows = page.rows(minimum=len(FIXTURE_CONNECTORS))
    assert name not in rows


def test_a_refused_config_shows_the_workers_reason(page: ConsolePage, console: Console):
    page.click("[data-action=new-connector]")
    page.wait_visible("#create-name").send_keys("not-a-connector")
    page.set_text("#create-config", json.dumps({"connector.class": "NoSuchConnector"}))
    page.click('.modal [data-action="create"]')
    page.wait_visible(".modal .alert-error")
    error = page.read(".modal .alert-error")
    assert "NoSuchConnector" in error or "connector.class" in error
    assert console.client.get("/connectors/not-a-connector").status_code == 404


def _plugin_options(page: ConsolePage) -> dict[str, str] | None:
    """The New connector dialog's plugin list: option value → text (None until loaded)."""
    try:
        options = page.find('.modal select[aria-label="Connector class"] option')
        shown = {o.get_attribute("value"): o.text for o in options}
    except StaleElementReferenceException:
        return None
    return None if any("Loading" in text for text in shown.values()) else shown


def test_create_a_connector_by_picking_its_plugin(page: ConsolePage, console: Console):
    name = "picked-in-the-dialog"
    plugins = console.client.get("/connector-plugins").json()
    page.click("[data-action=new-connector]")
    options = wait_until(lambda: _plugin_options(page), 20, "the dialog's plugin list")
    # Every installed connector plugin is one option, named and typed; no "[object …]".
    listed = {value: text for value, text in options.items() if value}
    assert set(listed) == {p["class"] for p in plugins}
    assert not any("[object" in text for text in options.values())
    verifiable = next(p["class"] for p in plugins if "VerifiableSource" in p["class"])
    assert listed[verifiable] == f"{verifiable.rsplit('.', 1)[-1]} (source)"

    # Picking the plugin puts its class into the config; the rest is filled in by hand.
    Select(page.wait('.modal select[aria-label="Connector class"]')).select_by_value(verifiable)
    picked = wait_until(
        lambda: (
            (c := json.loads(page.wait("#create-config").get_attribute("value")))
            and c.get("connector.class") == verifiable
            and c
        ),
        10,
        "the picked class in the config",
    )
    # Validate asks the worker: the plugin's required keys not given yet are named.
    page.wait_visible("#create-name").send_keys(name)
    page.click('.modal [data-action="validate"]')
    assert "throughput" in page.read(".modal .problems")
    config = {
        **picked,
        "topic": "picked",
        "throughput": "3",
        "report.file": str(console.directory / "picked.jsonl"),
    }
    config.pop("file", None)
    page.set_text("#create-config", json.dumps(config))
    page.click('.modal [data-action="create"]')
    try:
        page.wait("h1 .connector-name", text=name)  # the page moved to the new connector
        console.wait_state(name, "RUNNING", tasks=1)
        page.open("#/connectors")
        wait_until(lambda: page.rows().get(name) == "RUNNING", 20, f"{name} RUNNING in the list")
        stored = console.client.get(f"/connectors/{name}")
        assert stored.status_code == 200
        assert stored.json()["config"] == {**config, "name": name}
    finally:
        console.client.delete(f"/connectors/{name}")
