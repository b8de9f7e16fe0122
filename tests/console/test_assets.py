"""The console's scripts, read as text: rules a browser test would find only by luck."""

from __future__ import annotations

import re

from tests.conftest import ROOT

JS = ROOT / "connect/rest/ui/assets/js"


def test_children_are_replaced_through_fill_only() -> None:
    """The DOM's replaceChildren takes nodes only: an array handed to it becomes one
    text node ("[object HTMLOptionElement],…"), which is how the New connector dialog
    once listed no plugin. dom.js's fill() takes arrays; it alone calls the DOM's."""
    scripts = sorted(JS.rglob("*.js"))
    assert len(scripts) > 5
    callers = {
        path.relative_to(JS).as_posix()
        for path in scripts
        if re.search(r"\.replaceChildren\(", path.read_text())
    }
    assert callers == {"dom.js"}
