"""Waiting on a condition with a deadline: how every test that watches another thread
or process waits (never a fixed sleep)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

__all__ = ["wait_until"]


def wait_until(
    predicate: Callable[[], Any],
    timeout_s: float = 60.0,
    what: str = "condition",
    *,
    interval_s: float = 0.05,
) -> Any:
    """The predicate's first truthy result; AssertionError naming `what` at the deadline."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(interval_s)
    raise AssertionError(f"{what} not met within {timeout_s} s")
