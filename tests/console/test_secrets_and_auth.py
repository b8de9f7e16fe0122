"""What the console must never do: show a secret, or show anything to someone who has
not signed in."""

from __future__ import annotations

import httpx
import pytest

from tests.console.conftest import PASSWORD, SECRET, USER, Console, ConsolePage
from tests.waiting import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.integration]


def test_secrets_never_reach_the_page(page: ConsolePage, console: Console):
    seen: list[str] = []
    for route in (
        "#/connectors",
        "#/connectors/payments-db",
        "#/connectors/payments-db/offsets",
        "#/connectors/payments-db/config",
    ):
        page.open(route)
        page.wait("h1", text="payments-db" if "payments-db" in route else "Connectors")
        page.wait("#live", text="updated")  # the view's data has arrived
        seen += [page.source, page.text]
    # The config shows that there is a password, not what it is.
    assert "hidden" in page.read('tr[data-key="connection.password"]')
    page.click("[data-action=edit-config]")
    editor = page.wait("#edit-config")
    assert '"connection.password": "[hidden]"' in editor.get_attribute("value")
    seen += [page.source, editor.get_attribute("value")]
    # A failed task's trace is on the page too: it names the URL, never the password.
    page.open("#/connectors/payments-db")
    page.wait('tr[data-trace-of="0"] pre.trace', text="connection.url")
    seen += [page.source, page.text]
    assert all(SECRET not in text for text in seen)
    # The worker was given the secret: were the masking to fail, the page would show it.
    assert SECRET in (console.directory / "payments-db.json").read_text()


def test_the_page_without_credentials_holds_no_data(console: Console):
    page = httpx.get(f"{console.url}/ui", timeout=10)
    assert page.status_code == 200
    assert "<title>Tributary" in page.text
    assert "orders-source" not in page.text and SECRET not in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    script = httpx.get(f"{console.url}/ui/assets/js/main.js", timeout=10)
    assert script.status_code == 200
    assert script.headers["content-type"].startswith("text/javascript")
    for path in ("/ops/connectors", "/connectors", "/ops/topics", "/ops/schemas", "/metrics"):
        refused = httpx.get(console.url + path, timeout=10)
        assert refused.status_code == 401, path
        assert refused.headers["www-authenticate"].startswith("Basic")


def test_sign_in_is_required_and_sign_out_works(page: ConsolePage):
    page.click("[data-action=sign-out]")
    page.wait_visible("#login")
    # Signed out, a fresh load asks again and shows no connector.
    page.open()
    page.wait_visible("#login")
    assert not page.find("tr[data-connector]")
    page.sign_in(USER, "not-the-password")
    page.wait_visible("#login-error")
    assert "Wrong user name or password" in page.read("#login-error")
    assert not page.find("tr[data-connector]")
    page.sign_in(USER, PASSWORD)
    wait_until(lambda: not page.find("#login")[0].is_displayed(), 10, "the login form gone")
    assert page.rows()
    assert USER in page.read("#account")
