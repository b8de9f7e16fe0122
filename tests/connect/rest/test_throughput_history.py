"""The console's throughput history: rates between readings of cumulative counters,
on a clock the test moves by hand."""

from __future__ import annotations

from connect.rest.ui.history import ThroughputHistory


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def test_no_rate_before_two_readings():
    history = ThroughputHistory(clock=Clock())
    assert history.series() == [] and history.current() == {}
    history.record({"a": (10, 5)})
    assert history.series() == [] and history.current() == {}


def test_rates_between_readings_per_connector_and_summed():
    clock = Clock()
    history = ThroughputHistory(clock=clock)
    history.record({"a": (0, 0), "b": (100, 100)})
    clock.now += 2
    history.record({"a": (20, 10), "b": (140, 100)})
    rates = history.current()
    assert (rates["a"].records_in, rates["a"].records_out) == (10.0, 5.0)
    assert (rates["b"].records_in, rates["b"].records_out) == (20.0, 0.0)
    (total,) = history.series()
    assert (total.records_in, total.records_out, total.at_ms) == (30.0, 5.0, 1_002_000)
    assert [r.to_json() for r in history.series("a")] == [{"t": 1_002_000, "in": 10.0, "out": 5.0}]


def test_readings_closer_than_the_interval_are_dropped():
    clock = Clock()
    history = ThroughputHistory(min_interval_s=1.5, clock=clock)
    history.record({"a": (0, 0)})
    clock.now += 1
    history.record({"a": (999, 999)})  # too soon: ignored
    clock.now += 1
    history.record({"a": (20, 20)})
    assert [r.records_in for r in history.series()] == [10.0]


def test_a_restarted_task_counts_from_zero():
    clock = Clock()
    history = ThroughputHistory(clock=clock)
    history.record({"a": (500, 500)})
    clock.now += 2
    history.record({"a": (30, 30)})  # lower than before: counters restarted
    assert history.current()["a"].records_in == 15.0


def test_the_window_keeps_recent_readings_only():
    clock = Clock()
    history = ThroughputHistory(window_s=10, min_interval_s=1, clock=clock)
    for i in range(30):
        history.record({"a": (i * 2, i)})
        clock.now += 1
    series = history.series()
    assert len(series) == 10 and all(r.records_in == 2.0 for r in series)
    assert series[0].at_ms == (clock.now - 10) * 1000


def test_connectors_come_and_go():
    clock = Clock()
    history = ThroughputHistory(clock=clock)
    history.record({"old": (10, 10)})
    clock.now += 2
    history.record({"new": (8, 4)})  # old deleted, new created in between
    assert [(r.records_in, r.records_out) for r in history.series()] == [(4.0, 2.0)]
    assert [(r.records_in, r.records_out) for r in history.series("old")] == [(0.0, 0.0)]
    assert set(history.current()) == {"new"}
