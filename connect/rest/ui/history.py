"""Recent throughput of each connector, for the console's charts: records per second
in and out, sampled when someone looks.

Why sampled on request and not by a thread of its own: the worker's counters are
cumulative (they live in the tasks, see connect.metrics.task) and a rate needs two
readings. A sampler thread would read 600 tasks every few seconds for nobody when no
console is open. Here each `/ops/connectors` call (the console polls it every two
seconds while it is visible) records one reading, at most one per `min_interval_s`,
and keeps `window_s` of them; every open console shares them, and a reloaded page
finds the history its predecessor gathered.

A task's counters restart at zero when the task restarts. A reading lower than the
one before is such a restart: the rate counts from zero, as Prometheus' `rate()` does.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass

__all__ = ["Rate", "ThroughputHistory"]

#: Cumulative (records in, records out) per connector, from one reading.
Totals = Mapping[str, tuple[int, int]]


@dataclass(frozen=True, slots=True)
class Rate:
    """Records per second in and out over the interval that ends at `at_ms`."""

    at_ms: int
    records_in: float
    records_out: float

    def to_json(self) -> dict[str, float | int]:
        return {"t": self.at_ms, "in": round(self.records_in, 2), "out": round(self.records_out, 2)}


def _delta(now: int, before: int) -> int:
    return now - before if now >= before else now  # a restarted task counts from zero


class ThroughputHistory:
    """Readings of every connector's counters and the rates between them.

    Thread-safe: FastAPI runs the endpoints that call it in its threadpool."""

    def __init__(
        self,
        *,
        window_s: float = 300.0,
        min_interval_s: float = 1.5,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.window_s = window_s
        self.min_interval_s = min_interval_s
        self._clock = clock
        self._lock = threading.Lock()
        self._readings: deque[tuple[float, dict[str, tuple[int, int]]]] = deque()

    def record(self, totals: Totals) -> None:
        """Keep this reading unless the last one is younger than `min_interval_s`."""
        now = self._clock()
        with self._lock:
            if self._readings and now - self._readings[-1][0] < self.min_interval_s:
                return
            self._readings.append((now, dict(totals)))
            while self._readings and now - self._readings[0][0] > self.window_s:
                self._readings.popleft()

    def series(self, connector: str | None = None) -> list[Rate]:
        """The rates between consecutive readings: of one connector, or of all summed."""
        with self._lock:
            readings = list(self._readings)
        out = []
        for (t0, before), (t1, after) in itertools.pairwise(readings):
            span = t1 - t0
            if span <= 0:
                continue
            names = [connector] if connector is not None else list(after)
            got_in = got_out = 0
            for name in names:
                now = after.get(name)
                if now is None:
                    continue  # deleted (or not created yet) at the later reading
                then = before.get(name, (0, 0))
                got_in += _delta(now[0], then[0])
                got_out += _delta(now[1], then[1])
            out.append(Rate(int(t1 * 1000), got_in / span, got_out / span))
        return out

    def current(self) -> dict[str, Rate]:
        """Each connector's rate over the last interval (none before two readings)."""
        with self._lock:
            if len(self._readings) < 2:
                return {}
            (t0, before), (t1, after) = self._readings[-2], self._readings[-1]
        span = max(t1 - t0, 1e-9)
        out = {}
        for name, now in after.items():
            then = before.get(name, (0, 0))
            out[name] = Rate(
                int(t1 * 1000), _delta(now[0], then[0]) / span, _delta(now[1], then[1]) / span
            )
        return out
