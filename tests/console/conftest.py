"""The web console against a real worker, in a real browser.

One `connect standalone` process serves the whole session (basic auth on, the embedded
schema registry on, tasks as threads so that it starts in a couple of seconds), with
connectors that put every part of the console to work:

| connector | what it shows |
| --- | --- |
| `orders-source` | VerifiableSource, 2 tasks, a few records a second: throughput |
| `lines-source` | FileStreamSource of 50 lines into `lines`: a topic that stays put |
| `lines-archive` | FileStreamSink of `lines`, created STOPPED: lag and offsets |
| `payments-db` | JdbcSink with a `connection.password`: a secret never shown |
| `flaky-source` | a source that fails while a flag file exists: a trace |
| `flaky-restart` | the same, for a test that cures and restarts it |

One headless Chromium serves the session too (tests/console/browser.py); each test
gets a `ConsolePage` over it, signed in, and leaves a screenshot named after itself
in the artifacts directory (`$TRIBUTARY_ARTIFACTS/console`, else
`test-artifacts/console` in the checkout — gitignored).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement

from tests.conftest import ROOT
from tests.console.browser import launch
from tests.integration.conftest import STRING, WorkerProcess, connector_file, free_port
from tests.waiting import wait_until

USER, PASSWORD = "operator", "c0nsole-pass"
#: The JDBC sink's password: it must never reach the page.
SECRET = "hunter2-TOPSECRET-4711"
LINES = 50


def artifacts_dir() -> Path:
    base = os.environ.get("TRIBUTARY_ARTIFACTS")
    path = (Path(base) if base else ROOT / "test-artifacts") / "console"
    path.mkdir(parents=True, exist_ok=True)
    return path


@dataclass
class Console:
    """The session's worker: its URLs, its directory, and an authenticated client."""

    worker: WorkerProcess
    registry_url: str
    directory: Path
    client: httpx.Client

    @property
    def url(self) -> str:
        return self.worker.url

    def status(self, name: str) -> dict[str, Any] | None:
        response = self.client.get(f"/connectors/{name}/status")
        return response.json() if response.status_code == 200 else None

    def wait_state(self, name: str, state: str, *, tasks: int | None = None) -> dict[str, Any]:
        """Wait until the REST API shows the connector (and its tasks) in `state`."""

        def reached() -> dict[str, Any] | None:
            status = self.status(name)
            if not status or status["connector"]["state"] != state:
                return None
            states = [t["state"] for t in status["tasks"]]
            if tasks is not None and len(states) != tasks:
                return None
            return status if all(s == state for s in states) else None

        return wait_until(reached, 30, f"{name} {state} through the REST API")

    def create(self, name: str, config: dict[str, str], **extra: Any) -> None:
        response = self.client.post("/connectors", json={"name": name, "config": config, **extra})
        assert response.status_code == 201, response.text


def _connectors(directory: Path) -> list[Path]:
    (directory / "lines.txt").write_text("".join(f"line {i}\n" for i in range(LINES)))
    for flag in ("flaky.fail", "flaky-restart.fail"):
        (directory / flag).write_text("fail\n")
    configs = {
        "orders-source": {
            "connector.class": "VerifiableSource",
            "tasks.max": "2",
            "topic": "orders",
            "throughput": "5",
            "report.file": str(directory / "orders-report.jsonl"),
        },
        "lines-source": {
            "connector.class": "FileStreamSource",
            "file": str(directory / "lines.txt"),
            "topic": "lines",
        },
        "payments-db": {
            "connector.class": "JdbcSink",
            "topics": "payments",
            "connection.url": f"sqlite:///{directory / 'payments.db'}",
            "connection.password": SECRET,
            "auto.create": "true",
        },
        "flaky-source": {
            "connector.class": "tests.integration.plugins.FlakySource",
            "topic": "flaky",
            "fail.file": str(directory / "flaky.fail"),
        },
        "flaky-restart": {
            "connector.class": "tests.integration.plugins.FlakySource",
            "topic": "flaky-restart",
            "fail.file": str(directory / "flaky-restart.fail"),
        },
    }
    return [connector_file(directory, name, config) for name, config in configs.items()]


@pytest.fixture(scope="session")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    directory = tmp_path_factory.mktemp("console")
    users = directory / "users.properties"
    users.write_text(f"{USER}: {PASSWORD}\n")
    registry_port = free_port()
    config = {
        "log.dir": str(directory / "log"),
        "listeners": f"http://127.0.0.1:{free_port()}",
        "key.converter": STRING,
        "value.converter": STRING,
        "offset.flush.interval.ms": "500",
        "task.isolation": "thread",
        "rest.basic.auth.users.file": str(users),
        "schema.registry.enable": "true",
        "schema.registry.listeners": f"http://127.0.0.1:{registry_port}",
    }
    worker = WorkerProcess(directory, config, _connectors(directory))
    client = httpx.Client(base_url=worker.url, auth=(USER, PASSWORD), timeout=30)
    console = Console(worker, f"http://127.0.0.1:{registry_port}", directory, client)
    try:

        def ready() -> bool:
            assert worker.proc.poll() is None, worker.stderr
            try:
                return client.get("/").status_code == 200
            except httpx.TransportError:
                return False

        wait_until(ready, 60, "the worker's REST API")
        console.create(
            "lines-archive",
            {
                "connector.class": "FileStreamSink",
                "topics": "lines",
                "file": str(directory / "lines-archive.txt"),
            },
            initial_state="STOPPED",
        )

        def lines_written() -> bool:
            topics = client.get("/ops/topics").json()["topics"]
            return any(t["name"] == "lines" and t["records"] == LINES for t in topics)

        wait_until(lines_written, 30, f"{LINES} records in topic lines")
        yield console
    finally:
        client.close()
        if worker.proc.poll() is None:
            worker.stop()


@pytest.fixture(scope="session")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    driver = launch(tmp_path_factory.mktemp("chromium-profile"))
    try:
        yield driver
    finally:
        driver.quit()


class ConsolePage:
    """The console in the session's browser, with waits that name what they wait for."""

    def __init__(self, driver: WebDriver, console: Console) -> None:
        self.driver = driver
        self.console = console

    def open(self, route: str = "#/connectors") -> ConsolePage:
        """Load the console afresh at `route` (a new document: no dialog or state of
        the previous test stays; the sign-in does, in the tab's session storage)."""
        self.driver.get("about:blank")
        self.driver.get(f"{self.console.url}/ui/{route}")
        return self

    def sign_in(self, user: str = USER, password: str = PASSWORD) -> None:
        self.wait_visible("#login")
        for field, value in (("login-user", user), ("login-password", password)):
            element = self.driver.find_element(By.ID, field)
            element.clear()
            element.send_keys(value)
        self.click("[data-action=sign-in]")

    def signed_in(self) -> ConsolePage:
        """Open the console and sign in if it asks (the session stays in the tab)."""
        self.open()
        state = wait_until(self._login_or_rows, 30, "the login form or the connector list")
        if state == "login":
            self.sign_in()
            self.rows()
        return self

    def _login_or_rows(self) -> str | None:
        if self.driver.find_element(By.ID, "login").is_displayed():
            return "login"
        return "rows" if self.driver.find_elements(By.CSS_SELECTOR, "tr[data-connector]") else None

    def find(self, css: str) -> list[WebElement]:
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def wait(self, css: str, *, text: str | None = None, timeout_s: float = 20) -> WebElement:
        """The first element matching `css` (and holding `text`), once there is one."""

        def found() -> WebElement | None:
            for element in self.find(css):
                with contextlib.suppress(StaleElementReferenceException):
                    if text is None or text in element.text:
                        return element
            return None

        what = f"{css!r}" + (f" with {text!r}" if text else "")
        return wait_until(found, timeout_s, what)

    def read(self, css: str, *, text: str | None = None, timeout_s: float = 20) -> str:
        """The text of the first element matching `css` (and holding `text`), read in
        one go: the views re-render every two seconds, so an element found a moment
        ago may be gone by the time its text is asked for."""

        def found() -> str | None:
            for element in self.find(css):
                with contextlib.suppress(StaleElementReferenceException):
                    content = element.text
                    if text is None or text in content:
                        return content
            return None

        what = f"the text of {css!r}" + (f" with {text!r}" if text else "")
        return wait_until(found, timeout_s, what)

    def wait_visible(self, css: str, timeout_s: float = 20) -> WebElement:
        def shown() -> WebElement | None:
            for element in self.find(css):
                with contextlib.suppress(StaleElementReferenceException):
                    if element.is_displayed():
                        return element
            return None

        return wait_until(shown, timeout_s, f"{css!r} visible")

    def click(self, css: str, *, text: str | None = None) -> None:
        """Click the element, retrying when a refresh replaced it under the pointer."""

        def clicked() -> bool:
            try:
                self.wait(css, text=text).click()
                return True
            except (StaleElementReferenceException, WebDriverException):
                return False

        wait_until(clicked, 20, f"a click on {css!r}")

    def rows(self, minimum: int = 1) -> dict[str, str]:
        """Connector name → state badge text of the list's rows."""

        def listed() -> dict[str, str] | None:
            try:
                out = {
                    row.get_attribute("data-connector"): row.get_attribute("data-state")
                    for row in self.find("#connector-table tbody tr[data-connector]")
                }
            except StaleElementReferenceException:
                return None
            return out if len(out) >= minimum else None

        return wait_until(listed, 30, f"at least {minimum} connector rows")

    def cells(self, css: str) -> list[str]:
        """The texts of the cells of the row matching `css` ([] while there is none, or
        while a refresh replaces it)."""
        try:
            rows = self.find(css)
            return [c.text for c in rows[0].find_elements(By.TAG_NAME, "td")] if rows else []
        except StaleElementReferenceException:
            return []

    def set_text(self, css: str, value: str) -> None:
        """Replace a field's text at once (send_keys types a long JSON key by key)."""
        element = self.wait(css)
        self.driver.execute_script(
            "arguments[0].value = arguments[1];"
            "arguments[0].dispatchEvent(new Event('input', {bubbles: true}));",
            element,
            value,
        )

    @property
    def source(self) -> str:
        return self.driver.page_source

    @property
    def text(self) -> str:
        return self.driver.find_element(By.TAG_NAME, "body").text

    def screenshot(self, name: str) -> Path:
        path = artifacts_dir() / f"{name}.png"
        self.driver.save_screenshot(str(path))
        return path


@pytest.fixture
def page(
    browser: WebDriver, console: Console, request: pytest.FixtureRequest
) -> Iterator[ConsolePage]:
    """The console, signed in; a screenshot of where the test left it at the end."""
    console_page = ConsolePage(browser, console).signed_in()
    yield console_page
    with contextlib.suppress(WebDriverException):
        console_page.screenshot(request.node.name)


def registry_schema(fields: list[dict[str, Any]]) -> str:
    return json.dumps({"type": "record", "name": "Payment", "fields": fields})
