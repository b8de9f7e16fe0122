"""A model cluster for assignment tests: workers that obey assignments, a manual clock.

`SimCluster` plays the distributed herder's part around `assign()`: it remembers the
previous assignment, who is a member and what each member owns, and applies each
result the way a worker would (stop what was revoked and acknowledge, start what was
assigned). `check_round` asserts the safety invariants on every round it runs.
"""

from __future__ import annotations

from collections.abc import Iterable

from connect.herder.assignment import assign
from connect.herder.membership import (
    Assignment,
    AssignorConfig,
    Departure,
    Item,
    Member,
    TaskId,
    Work,
)

CONFIG = AssignorConfig(
    scheduled_rebalance_max_delay_ms=10_000,
    revocation_backoff_initial_ms=1_000,
    revocation_backoff_max_ms=8_000,
)


class SimCluster:
    def __init__(self, *, config: AssignorConfig = CONFIG, now_ms: int = 1_000_000) -> None:
        self.config = config
        self.now = now_ms
        self.configured: dict[str, int] = {}
        self.owned: dict[str, Work] = {}
        self.departures: dict[str, Departure] = {}
        self.previous = Assignment()
        self.history: list[Assignment] = []

    # -- membership and configuration ---------------------------------------------------

    def join(self, *workers: str) -> None:
        for w in workers:
            self.owned[w] = Work()
            self.departures.pop(w, None)

    def crash(self, worker: str, *, last_seen_ms: int | None = None) -> None:
        """The worker is declared dead (its last heartbeat at `last_seen_ms`)."""
        del self.owned[worker]
        seen = self.now if last_seen_ms is None else last_seen_ms
        self.departures[worker] = Departure(worker, seen)

    def leave(self, worker: str, *, expect_return: bool = True) -> None:
        """A clean LEAVE: the worker stopped its work first."""
        del self.owned[worker]
        self.departures[worker] = Departure(worker, self.now, expect_return=expect_return)

    def create(self, name: str, tasks: int) -> None:
        self.configured[name] = tasks

    def delete(self, name: str) -> None:
        del self.configured[name]

    def advance(self, ms: int) -> None:
        self.now += ms

    # -- rounds ---------------------------------------------------------------------------

    def members(self) -> list[Member]:
        return [Member(w, self.owned[w]) for w in sorted(self.owned)]

    def compute(self, members: Iterable[Member] | None = None) -> Assignment:
        """One call of `assign()` on the current state, without applying it."""
        return assign(
            self.members() if members is None else members,
            self.previous,
            self.configured,
            now_ms=self.now,
            config=self.config,
            departures=self.departures.values(),
        )

    def rebalance(self, *, slow: Iterable[str] = ()) -> Assignment:
        """Run one generation and apply it; workers in `slow` do not release yet."""
        result = self.compute()
        check_round(self, result)
        slow = set(slow)
        for w, work in self.owned.items():
            keep = work if w in slow else work - result.revoked.get(w, Work())
            self.owned[w] = keep | result.assigned.get(w, Work())
        check_exclusive(self.owned)
        self.previous = result
        self.history.append(result)
        return result

    def settle(self, *, max_rounds: int = 10) -> int:
        """Rebalance until a round changes nothing; the number of rounds that did."""
        for rounds in range(max_rounds):
            if not self.rebalance().changes:
                return rounds
        raise AssertionError(f"no stable assignment after {max_rounds} rounds")

    # -- views ----------------------------------------------------------------------------

    def task_counts(self) -> dict[str, int]:
        return {w: len(t.tasks) for w, t in self.previous.targets.items()}

    def connector_counts(self) -> dict[str, int]:
        return {w: len(t.connectors) for w, t in self.previous.targets.items()}

    def placement(self) -> dict[Item, str]:
        """Item → worker whose target holds it."""
        return {i: w for w, t in self.previous.targets.items() for i in t.items()}


def configured_items(configured: dict[str, int]) -> frozenset[Item]:
    return Work.configured(configured).items()


def check_round(sim: SimCluster, result: Assignment) -> None:
    """Invariants of every generation, whatever happened before."""
    wanted = configured_items(sim.configured)
    seen: set[Item] = set()
    for w, target in result.targets.items():
        assert w in sim.owned, f"{w} is no member but has a target"
        items = target.items()
        assert not items & seen, f"{sorted(map(str, items & seen))} given to two workers"
        assert items <= wanted, f"{w} was given work that is not configured"
        seen |= items
    assert set(result.targets) == set(sim.owned)
    assert result.unassigned.items() == wanted - seen
    # Nothing starts while another live member may still run it (owned or given).
    for w, start in result.assigned.items():
        for other, owned in sim.owned.items():
            if other == w:
                continue
            held = owned.items() | sim.previous.targets.get(other, Work()).items()
            clash = start.items() & held
            assert not clash, f"{sorted(map(str, clash))} started on {w}, still on {other}"
    for w, stop in result.revoked.items():
        assert not stop.items() & result.targets[w].items()
    if result.delay_ms is not None:
        assert result.delay_ms >= 0
    if sim.owned:
        # Work is UNASSIGNED only while it waits for its departed worker (never past the
        # deadline) or for its old worker to release it; nothing else leaves it idle.
        waiting: set[Item] = set()
        for entry in result.lost:
            assert entry.deadline_ms > sim.now, f"{entry.worker_id}'s work waits past its delay"
            waiting |= entry.work.items()
        releasing: set[Item] = set()
        for stop in result.revoked.values():
            releasing |= stop.items()
        idle = result.unassigned.items() - waiting - releasing
        assert not idle, f"{sorted(map(str, idle))} left unassigned for no reason"
        if result.lost:
            assert result.delay_ms is not None
            assert result.delay_ms <= min(e.deadline_ms for e in result.lost) - sim.now


def check_exclusive(owned: dict[str, Work]) -> None:
    seen: set[Item] = set()
    for w, work in owned.items():
        both = work.items() & seen
        assert not both, f"{sorted(map(str, both))} runs on {w} and elsewhere"
        seen |= work.items()


def tasks_of(work: Work, connector: str) -> list[TaskId]:
    return sorted(t for t in work.tasks if t.connector == connector)
