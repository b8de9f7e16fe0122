"""The data the assignment of a distributed cluster works on: plain frozen values.

Everything here is immutable so that the assignment (`connect.herder.assignment`) can be a
pure function: the distributed herder replays the group topic, builds these values, calls
`assign()` and appends the result; a new leader rebuilds the very same values from the
log and carries on where the old one stopped. Nothing is kept in an assignor object.

- `TaskId` names a task (`<connector>-<n>`, as in the status topic's keys).
- `Work` is a set of connector instances and tasks: what a worker runs, is asked to
  start, or is asked to stop.
- `Member` is a live worker and what it reports it may still be running.
- `Departure` says when a worker that left was last seen, so its work's wait for it is
  counted from then, not from when the leader noticed.
- `LostWork` is the work of a departed worker waiting for it to return.
- `Backoff` counts successive rebalances that revoked work to balance load.
- `Assignment` is one generation's result: targets, deltas, bookkeeping and the delay
  until the next scheduled rebalance. The previous one is the next call's input.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = [
    "Assignment",
    "AssignorConfig",
    "Backoff",
    "Departure",
    "Item",
    "LostWork",
    "Member",
    "TaskId",
    "Work",
    "item_sort_key",
]


@dataclass(frozen=True, order=True, slots=True)
class TaskId:
    """Task `task` (0-based) of connector `connector`; orders by connector, then number."""

    connector: str
    task: int

    def __str__(self) -> str:
        return f"{self.connector}-{self.task}"


Item = str | TaskId
"""One unit of work: a connector instance (its name) or a task."""


def item_sort_key(item: Item) -> tuple[int, str, int]:
    """Connectors before tasks, then by name and task number.

    Why: the assignment walks work in this order, so equal inputs give equal outputs
    whatever order sets happen to iterate in.
    """
    if isinstance(item, TaskId):
        return (1, item.connector, item.task)
    return (0, item, -1)


@dataclass(frozen=True, slots=True)
class Work:
    """Connector instances and tasks, kept apart because load is balanced per kind."""

    connectors: frozenset[str] = frozenset()
    tasks: frozenset[TaskId] = frozenset()

    @classmethod
    def of(
        cls,
        connectors: Iterable[str] = (),
        tasks: Iterable[TaskId | tuple[str, int]] = (),
    ) -> Work:
        """Build from names and task ids (a `(connector, n)` pair is read as a TaskId)."""
        return cls(
            frozenset(connectors),
            frozenset(t if isinstance(t, TaskId) else TaskId(t[0], t[1]) for t in tasks),
        )

    @classmethod
    def configured(cls, task_counts: Mapping[str, int]) -> Work:
        """Every connector of `task_counts` (name → task count) and all its tasks."""
        for name, count in task_counts.items():
            if count < 0:
                raise ValueError(f"connector {name!r} has a negative task count {count}")
        return cls(
            frozenset(task_counts),
            frozenset(TaskId(c, n) for c, count in task_counts.items() for n in range(count)),
        )

    @classmethod
    def from_items(cls, items: Iterable[Item]) -> Work:
        connectors: set[str] = set()
        tasks: set[TaskId] = set()
        for item in items:
            if isinstance(item, TaskId):
                tasks.add(item)
            else:
                connectors.add(item)
        return cls(frozenset(connectors), frozenset(tasks))

    def items(self) -> frozenset[Item]:
        """Connectors and tasks as one set (the assignment treats both as items)."""
        return self.connectors | self.tasks

    def sorted_items(self) -> list[Item]:
        return sorted(self.items(), key=item_sort_key)

    def __or__(self, other: Work) -> Work:
        return Work(self.connectors | other.connectors, self.tasks | other.tasks)

    def __sub__(self, other: Work) -> Work:
        return Work(self.connectors - other.connectors, self.tasks - other.tasks)

    def __and__(self, other: Work) -> Work:
        return Work(self.connectors & other.connectors, self.tasks & other.tasks)

    def __bool__(self) -> bool:
        return bool(self.connectors or self.tasks)

    def __len__(self) -> int:
        return len(self.connectors) + len(self.tasks)

    def __repr__(self) -> str:
        names = ", ".join(str(i) for i in self.sorted_items())
        return f"Work({names})"


EMPTY = Work()


@dataclass(frozen=True, slots=True)
class Member:
    """A live worker of this generation.

    `owned` is everything the worker may still be running: what it was assigned and has
    not acknowledged releasing (its REVOKED records), or what it says it runs when it
    (re)joins. The assignment never starts an item elsewhere while a live member owns it.
    """

    worker_id: str
    owned: Work = EMPTY


@dataclass(frozen=True, slots=True)
class Departure:
    """How a worker that is no longer a member left.

    `last_seen_ms` is its last heartbeat (evicted after `session.timeout.ms`) or its LEAVE
    record: the wait for it to return is counted from here, so the session timeout is
    not added on top of `scheduled.rebalance.max.delay.ms`. `expect_return=False` is a
    LEAVE that says the worker is going away for good (scale-in): nothing to wait for.
    """

    worker_id: str
    last_seen_ms: int
    expect_return: bool = True


@dataclass(frozen=True, slots=True)
class LostWork:
    """Work of departed worker `worker_id`, kept for it until `deadline_ms`."""

    worker_id: str
    work: Work
    lost_at_ms: int
    deadline_ms: int


@dataclass(frozen=True, slots=True)
class Backoff:
    """Successive rebalances that revoked work to balance load (rebalance storms).

    `streak` counts them; `last_revoking_ms` is when the last one ran. The next balancing
    revocation waits `AssignorConfig.backoff_ms(streak)` after it.
    """

    streak: int = 0
    last_revoking_ms: int = 0


@dataclass(frozen=True, slots=True)
class AssignorConfig:
    """The worker keys the assignment reads (milliseconds, as the keys are named)."""

    # `scheduled.rebalance.max.delay.ms`: how long a departed worker's work waits for it.
    scheduled_rebalance_max_delay_ms: int = 300_000
    # The first wait between two successive balancing revocations; doubles each time.
    revocation_backoff_initial_ms: int = 1_000
    # The longest wait between two successive balancing revocations.
    revocation_backoff_max_ms: int = 30_000

    def backoff_ms(self, streak: int) -> int:
        """Wait after `streak` successive balancing revocations (0 for none)."""
        if streak <= 0:
            return 0
        wait = self.revocation_backoff_initial_ms * (1 << min(streak - 1, 30))
        return min(wait, self.revocation_backoff_max_ms)


@dataclass(frozen=True, slots=True)
class Assignment:
    """One generation of the assignment.

    - `targets`: every live worker → what it should run once this generation applies.
    - `assigned`: worker → what it must start (in its target, not yet owned).
    - `revoked`: worker → what it must stop and acknowledge (owned, not in its target).
    - `lost`: departed workers' work waiting for them, oldest worker id first.
    - `unassigned`: configured work in no target (waiting, awaiting release, or no
      worker at all) — what status shows as UNASSIGNED.
    - `delay_ms`: run the next rebalance after this long even if nothing else happens
      (a lost-work deadline or a backed-off balancing revocation), or None.

    Only workers with something to do appear in `assigned` and `revoked`.
    """

    generation: int = 0
    targets: Mapping[str, Work] = field(default_factory=dict)
    assigned: Mapping[str, Work] = field(default_factory=dict)
    revoked: Mapping[str, Work] = field(default_factory=dict)
    lost: tuple[LostWork, ...] = ()
    unassigned: Work = EMPTY
    backoff: Backoff = Backoff()
    delay_ms: int | None = None

    def owner_of(self, item: Item) -> str | None:
        """The worker whose target holds `item`, or None."""
        for worker, work in self.targets.items():
            if item in work.items():
                return worker
        return None

    @property
    def changes(self) -> bool:
        """Whether any worker has anything to start or stop."""
        return bool(self.assigned or self.revoked)
