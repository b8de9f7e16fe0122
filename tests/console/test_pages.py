"""The other pages: a sink's lag and offsets (and changing them), topics, schemas and
workers — each checked against what the REST API or the registry says."""

from __future__ import annotations

import json

import httpx
import pytest
from selenium.common.exceptions import StaleElementReferenceException

from tests.console.conftest import LINES, Console, ConsolePage
from tests.waiting import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.integration]


def _lag_cells(page: ConsolePage) -> list[str]:
    """Topic, partition, log end, committed, lag — or [] until the row is there."""
    return page.cells('#lag-table tr[data-topic="lines"][data-partition="0"]') or [""] * 5


def _committed(console: Console) -> list[int]:
    offsets = console.client.get("/connectors/lines-archive/offsets").json()["offsets"]
    return [o["offset"]["kafka_offset"] for o in offsets if o["offset"] is not None]


def test_lag_and_offsets_of_a_stopped_sink(page: ConsolePage, console: Console):
    page.open("#/connectors/lines-archive/offsets")
    wait_until(lambda: _lag_cells(page)[2:5] == [str(LINES), "—", str(LINES)], 20, "lag 50")
    assert page.wait("#offsets-table, .empty", text="No offsets yet")

    # Alter: move partition 0 to offset 20 (the dialog starts from the current offsets).
    page.click("[data-action=alter-offsets]")
    body = {
        "offsets": [
            {
                "partition": {"kafka_topic": "lines", "kafka_partition": 0},
                "offset": {"kafka_offset": 20},
            }
        ]
    }
    page.set_text(".modal textarea", json.dumps(body))
    page.click("[data-action=save-offsets]")
    wait_until(lambda: _committed(console) == [20], 20, "offset 20 through the REST API")
    wait_until(lambda: _lag_cells(page)[2:5] == [str(LINES), "20", str(LINES - 20)], 20, "lag 30")
    assert page.wait("#offsets-table td.num", text="20")

    # Reset, after confirming: nothing committed, the whole topic behind again.
    page.click("[data-action=reset-offsets]")
    page.click('.modal [data-action="confirm"]')
    wait_until(lambda: _committed(console) == [], 20, "offsets reset through the REST API")
    wait_until(lambda: _lag_cells(page)[4] == str(LINES), 20, "lag 50 again")


def test_a_running_sink_asks_to_be_stopped_before_offsets_change(
    page: ConsolePage, console: Console
):
    console.create(
        "lines-copy",
        {
            "connector.class": "FileStreamSink",
            "topics": "lines",
            "file": str(console.directory / "lines-copy.txt"),
        },
    )
    try:
        console.wait_state("lines-copy", "RUNNING", tasks=1)
        page.open("#/connectors/lines-copy/offsets")
        page.wait(".alert-info", text="only while the connector is stopped")
        assert not page.find("[data-action=reset-offsets]")
        # It reads the topic to its end: no lag left, and the offset committed shows.
        wait_until(lambda: _lag_cells(page)[2:5] == [str(LINES)] * 2 + ["0"], 30, "lag 0")
        page.click("[data-action=stop-for-offsets]")
        console.wait_state("lines-copy", "STOPPED", tasks=0)
        page.wait("[data-action=reset-offsets]")
    finally:
        console.client.delete("/connectors/lines-copy")


def test_topics_with_partitions_offsets_and_size(page: ConsolePage, console: Console):
    page.open("#/topics")
    cells = wait_until(lambda: page.cells('#topic-table tr[data-topic="lines"]'), 20, "lines")
    assert cells[1:5] == ["1", str(LINES), "0", str(LINES)]
    assert cells[5].endswith(("B", "KiB"))
    # Internal topics only when asked for.
    assert not page.find('tr[data-topic="connect-configs"]')
    page.click("#show-internal")
    assert "internal" in page.read('tr[data-topic="connect-configs"]')
    # A topic opens to its partitions.
    page.click('#topic-table tr[data-topic="lines"]')
    partition = page.read('tr[data-partition-of="lines"]')
    assert "partition 0" in partition and str(LINES) in partition

    # Every topic the API lists is on the page (internal ones too, now).
    def same() -> bool:
        listed = {t["name"] for t in console.client.get("/ops/topics").json()["topics"]}
        try:
            rows = page.find("#topic-table tr[data-topic]")
            return listed == {r.get_attribute("data-topic") for r in rows}
        except StaleElementReferenceException:
            return False  # re-rendered meanwhile: look again

    wait_until(same, 10, "the page's topics equal the API's")
    page.click("#show-internal")  # as it was, for the next test


def test_schema_registry_subjects_versions_and_schemas(page: ConsolePage, console: Console):
    for fields in (
        [{"name": "id", "type": "long"}],
        [
            {"name": "id", "type": "long"},
            {"name": "memo", "type": ["null", "string"], "default": None},
        ],
    ):
        schema = json.dumps({"type": "record", "name": "Payment", "fields": fields})
        response = httpx.post(
            f"{console.registry_url}/subjects/payments-value/versions",
            json={"schema": schema},
            timeout=10,
        )
        assert response.status_code == 200, response.text
    page.open("#/schemas")
    assert "v2" in page.read('.subject[data-subject="payments-value"]')
    page.click('.subject[data-subject="payments-value"]')
    assert '"memo"' in page.read("#schema-text", text="memo")
    page.click('.versions [data-version="1"]')
    wait_until(lambda: "memo" not in page.read("#schema-text"), 10, "version 1's schema")
    assert '"id"' in page.read("#schema-text")


def test_workers(page: ConsolePage, console: Console):
    page.open("#/workers")
    worker_id = console.client.get("/ops/workers").json()["workers"][0]["id"]
    card = page.read(f'.worker[data-worker="{worker_id}"]')
    assert "this worker" in card and "healthy" in card
    assert console.url in card
