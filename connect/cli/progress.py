"""A one-line progress bar for CLI work with a known end, on stderr:

    lines  [##########----------]  52%  10,400/20,000  31.2k/s  ETA 0:00:01

Why our own (forty lines) rather than a library: the CLI needs a bar, a count, a rate
and an ETA, redrawn at most ten times a second, and nothing else; a dependency for
that would be the only one of the CLI. It draws only on a terminal (or when forced,
e.g. by `--progress`), so pipes and logs get no carriage returns.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress"]

_WIDTH = 20


class Progress:
    """Progress towards `total` units; `advance(n)` as work is done, `close()` at the end
    (prints the final line and a newline). Usable as a context manager."""

    def __init__(
        self,
        total: int,
        *,
        label: str = "",
        stream: TextIO | None = None,
        enabled: bool | None = None,
        interval_s: float = 0.1,
    ) -> None:
        self.total = max(0, total)
        self.done = 0
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.interval_s = interval_s
        self._started = time.monotonic()
        self._drawn = 0.0
        self._closed = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def advance(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if self.enabled and now - self._drawn >= self.interval_s:
            self._drawn = now
            self._draw(now, end="")

    def close(self) -> None:
        if self.enabled and not self._closed:
            self._draw(time.monotonic(), end="\n")
        self._closed = True

    def line(self, now: float) -> str:
        """The bar's text at `now` (time.monotonic())."""
        fraction = min(1.0, self.done / self.total) if self.total else 1.0
        filled = int(fraction * _WIDTH)
        elapsed = max(now - self._started, 1e-9)
        rate = self.done / elapsed
        remaining = (self.total - self.done) / rate if rate > 0 and self.total > self.done else 0
        eta = time.strftime("%H:%M:%S", time.gmtime(remaining)).removeprefix("0")
        prefix = f"{self.label}  " if self.label else ""
        return (
            f"{prefix}[{'#' * filled}{'-' * (_WIDTH - filled)}]  {fraction:4.0%}  "
            f"{self.done:,}/{self.total:,}  {_rate(rate)}/s  ETA {eta}"
        )

    def _draw(self, now: float, *, end: str) -> None:
        self.stream.write("\r" + self.line(now) + "\x1b[K" + end)
        self.stream.flush()


def _rate(per_s: float) -> str:
    for unit, scale in (("M", 1e6), ("k", 1e3)):
        if per_s >= scale:
            return f"{per_s / scale:.1f}{unit}"
    return f"{per_s:.0f}"
