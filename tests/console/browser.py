"""Debian's headless Chromium driven through its chromedriver (Selenium), for the web
console's tests and benchmark. Nothing is downloaded: the browser and the driver are
the system's (scripts/ensure-chromium installs them), and Selenium is given their
paths, so its driver manager never runs.

The flags keep a test browser quiet and self-contained: no sandbox (tests run as
root), no GPU, no QUIC, no first-run pages, no background network or component
updates, no sync, and a fresh profile directory each launch.
"""

from __future__ import annotations

import time
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

__all__ = ["CHROMEDRIVER", "CHROMIUM", "first_render_ms", "launch"]

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)

#: What the connector list marks once its first rows are painted
#: (connect/rest/ui/assets/js/views/connectors.js).
PAINTED_MARK = "tributary:connectors-painted"


def launch(profile: Path, *, width: int = 1440, height: int = 900) -> webdriver.Chrome:
    """A headless Chromium with a fresh profile under `profile`."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not path.exists():
            raise RuntimeError(f"{path} is missing: run scripts/ensure-chromium (make test does)")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
    driver.set_page_load_timeout(30)
    driver.set_script_timeout(30)
    return driver


def first_render_ms(
    driver: webdriver.Chrome, url: str, *, rows: int, timeout_s: float = 30
) -> float:
    """Load `url` (the console) and return the milliseconds from navigation start until
    the connector list showed `rows` rows painted (the page's own performance mark)."""
    driver.get("about:blank")
    driver.get(url)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = driver.execute_script(
            "const m = performance.getEntriesByName(arguments[0]);"
            "return m.length ? [m[0].startTime, document.body.dataset.connectorRows] : null;",
            PAINTED_MARK,
        )
        if got is not None:
            start_ms, shown = got
            if int(shown) != rows:
                raise AssertionError(f"the first render showed {shown} rows, not {rows}")
            return float(start_ms)
        time.sleep(0.02)
    raise AssertionError(f"the connector list did not render within {timeout_s} s")
