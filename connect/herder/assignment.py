"""Incremental cooperative assignment of connectors and tasks to workers (KIP-415's rules).

`assign()` is a pure function: (live members with what they own, the previous assignment,
the configured connectors and task counts, departures, now) → the next `Assignment`. The
leader of the group topic calls it; every other worker could recompute it from the log
and get the same answer, because every rule walks workers and work in sorted order.

Two rounds per move. Work changes worker only through a revocation in one generation
(its old worker stops it, commits its offsets and acknowledges) and an allocation in a
later one, when no live member owns it any more. So an item is never started while
another live member may still run it; a worker that died is out of the members once it
was declared dead, and fencing by generation deals with it if it was only stalled.

Steps of one call:

1. Who may run what: a live member may run what it reports owning and what the
   previous generation gave it.
2. Lost work: the previous target of a worker that is no longer a member waits for it,
   counted from when it was last seen, up to `scheduled.rebalance.max.delay.ms`.
3. Owners: each configured item stays where it runs (or where it was given), waits for
   its release, waits for its departed worker, or is free to place. Work that is no
   longer configured is revoked from whoever owns it.
4. Balance: per kind (connectors, tasks) every worker's fair share is floor or ceil of
   the average; a worker over its share gives up the excess (its most concentrated
   connector's tasks first), unless lost work is waiting or successive balancing
   rebalances must back off.
5. Placement: free work goes to workers under their share, a connector's tasks to the
   workers with fewest of its tasks, then the least loaded.
6. Result: targets, per-worker deltas, the lost-work ledger, the back-off state and the
   delay until the next scheduled rebalance.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from connect.herder.membership import (
    Assignment,
    AssignorConfig,
    Backoff,
    Departure,
    Item,
    LostWork,
    Member,
    TaskId,
    Work,
    item_sort_key,
)

__all__ = ["assign"]

_DEFAULT_CONFIG = AssignorConfig()


def assign(
    members: Iterable[Member],
    previous: Assignment,
    configured: Mapping[str, int],
    *,
    now_ms: int,
    config: AssignorConfig = _DEFAULT_CONFIG,
    departures: Iterable[Departure] = (),
) -> Assignment:
    """Compute the next generation's assignment.

    `members` are the live workers of the new generation, `previous` the last assignment
    (`Assignment()` for the first), `configured` maps each connector to its task count,
    `departures` says when workers that left were last seen (a worker missing from it is
    taken to have left at `now_ms`). The result's `generation` is `previous.generation + 1`.
    """
    live_members = sorted(members, key=lambda m: m.worker_id)
    live = [m.worker_id for m in live_members]
    if len(set(live)) != len(live):
        raise ValueError(f"a worker is listed twice among the members: {live}")
    wanted = Work.configured(configured).items()
    # Step 1: what each live member may be running.
    held = _Holdings.of(live_members, previous)
    # Step 2: the ledger of lost work.
    ledger = _ledger(previous, live, departures, now_ms=now_ms, config=config)
    # Step 3: owners.
    owners = _owners(wanted, held, ledger, live, now_ms=now_ms)
    # Step 4: balance, per kind.
    plans = [
        _plan(_is_connector, owners.kept, owners.releasing, owners.free, live),
        _plan(_is_task, owners.kept, owners.releasing, owners.free, live),
    ]
    backoff, deferred_until = _balance(
        plans, owners, previous.backoff, now_ms=now_ms, config=config
    )
    # Step 5: placement.
    placed: dict[str, set[Item]] = {w: set() for w in live}
    if live:
        for plan in plans:
            _place(plan, owners.kept, placed, live)
    # Step 6: result.
    return _result(
        previous, wanted, held, ledger, owners, placed, backoff, deferred_until, now_ms=now_ms
    )


@dataclass(slots=True)
class _Holdings:
    """Step 1: per live member, what it reports owning, what the previous generation
    gave it, both together, and what the previous generation revoked from it."""

    live: list[str]
    owned: dict[str, frozenset[Item]]
    given: dict[str, frozenset[Item]]
    held: dict[str, frozenset[Item]]
    revoked_before: dict[str, frozenset[Item]]

    @staticmethod
    def of(live_members: list[Member], previous: Assignment) -> _Holdings:
        # Why both halves count: a member may not have acknowledged a revocation yet
        # (it still reports the item) or not have reported starting what it was given;
        # anything in either must not start elsewhere.
        live = [m.worker_id for m in live_members]
        owned = {m.worker_id: m.owned.items() for m in live_members}
        given = {w: previous.targets.get(w, Work()).items() for w in live}
        held = {w: owned[w] | given[w] for w in live}
        revoked_before = {w: previous.revoked.get(w, Work()).items() for w in live}
        return _Holdings(live, owned, given, held, revoked_before)


@dataclass(slots=True)
class _Owners:
    """Step 3's outcome: per live worker the items it keeps, the items waiting for a
    live member's release, the items waiting for a departed worker (by that worker),
    and the free items to place."""

    kept: dict[str, set[Item]]
    releasing: set[Item]
    waiting: dict[str, set[Item]]
    free: list[Item]


def _owners(
    wanted: frozenset[Item],
    held: _Holdings,
    ledger: Mapping[str, LostWork],
    live: list[str],
    *,
    now_ms: int,
) -> _Owners:
    """Step 3: where each configured item stays, or why it waits, or that it is free.
    Work no longer configured is in no outcome: it is revoked from whoever holds it."""
    lost_owner = {item: e.worker_id for e in ledger.values() for item in e.work.items()}
    holders: dict[Item, list[str]] = defaultdict(list)
    for w in live:  # sorted, so every holders list is sorted too
        for item in held.held[w]:
            holders[item].append(w)
    out = _Owners({w: set() for w in live}, set(), defaultdict(set), [])
    kept, waiting = out.kept, out.waiting
    for item in sorted(wanted, key=item_sort_key):
        hs = holders.get(item, [])
        keeper = _keeper(item, hs, held.owned, held.given, held.revoked_before)
        if keeper is not None:
            kept[keeper].add(item)
        elif hs:
            # Why: it was revoked and its worker has not acknowledged; starting it now
            # would run it twice.
            out.releasing.add(item)
        elif (lost_worker := lost_owner.get(item)) is not None:
            if lost_worker in kept:
                # Why: its worker came back within the delay; it gets its own work back,
                # which is what the delay was waiting for (no reshuffle after a bounce).
                kept[lost_worker].add(item)
            elif ledger[lost_worker].deadline_ms > now_ms or not live:
                # Why: the worker may still return; moving its work now and back later
                # would restart it twice. With no live worker at all nothing can run it.
                waiting[lost_worker].add(item)
            else:
                # Why: the delay is over; the work is spread like new work.
                out.free.append(item)
        else:
            # Why: new work, or work whose release was acknowledged: nobody runs it.
            out.free.append(item)
    return out


def _balance(
    plans: list[_Plan],
    owners: _Owners,
    backoff: Backoff,
    *,
    now_ms: int,
    config: AssignorConfig,
) -> tuple[Backoff, int | None]:
    """Step 4: revoke what workers hold over their fair share, unless lost work is
    waiting or the back-off says wait. Returns the new back-off state and, when
    balancing was deferred, when it may run."""
    over = any(plan.excess for plan in plans)
    balancing_allowed_at = backoff.last_revoking_ms + config.backoff_ms(backoff.streak)
    if over and not owners.waiting and now_ms >= balancing_allowed_at:
        # Why: a worker over its fair share gives up only the excess, so only what must
        # move moves; the work goes to the under-loaded workers in the next generation.
        for plan in plans:
            for w, count in plan.excess.items():
                for item in _pick_revocations(owners.kept[w], plan.is_kind, count):
                    owners.kept[w].discard(item)
                    owners.releasing.add(item)
        return Backoff(backoff.streak + 1, now_ms), None
    if over and not owners.waiting:
        # Why: the previous rebalance revoked to balance too (workers joining one after
        # another); revoking again at once is a rebalance storm, so wait, doubling.
        return backoff, balancing_allowed_at
    if not over:
        return Backoff(), None
    # Over but lost work is waiting: no balancing revocation, as its worker may come
    # back and the expiry spreads the work anyway; the streak is left as it was.
    return backoff, None


def _result(
    previous: Assignment,
    wanted: frozenset[Item],
    held: _Holdings,
    ledger: Mapping[str, LostWork],
    owners: _Owners,
    placed: Mapping[str, set[Item]],
    backoff: Backoff,
    deferred_until: int | None,
    *,
    now_ms: int,
) -> Assignment:
    """Step 6: targets, per-worker deltas, the lost-work ledger, the back-off state and
    the delay until the next scheduled rebalance."""
    live = held.live
    targets = {w: Work.from_items(owners.kept[w] | placed[w]) for w in live}
    assigned = {}
    revoked = {}
    for w in live:
        target = targets[w].items()
        start = target - held.owned[w]
        stop = held.held[w] - target
        if start:
            assigned[w] = Work.from_items(start)
        if stop:
            revoked[w] = Work.from_items(stop)
    lost = tuple(
        LostWork(w, Work.from_items(items), ledger[w].lost_at_ms, ledger[w].deadline_ms)
        for w, items in sorted(owners.waiting.items())
    )
    in_targets: set[Item] = set().union(*(t.items() for t in targets.values()))
    delays = [e.deadline_ms - now_ms for e in lost if e.deadline_ms > now_ms]
    if deferred_until is not None:
        delays.append(deferred_until - now_ms)
    return Assignment(
        generation=previous.generation + 1,
        targets=targets,
        assigned=assigned,
        revoked=revoked,
        lost=lost,
        unassigned=Work.from_items(wanted - in_targets),
        backoff=backoff,
        delay_ms=max(0, min(delays)) if delays else None,
    )


def _ledger(
    previous: Assignment,
    live: list[str],
    departures: Iterable[Departure],
    *,
    now_ms: int,
    config: AssignorConfig,
) -> dict[str, LostWork]:
    """The previous ledger plus the work of every worker that left since."""
    left = {d.worker_id: d for d in departures}
    ledger = {e.worker_id: e for e in previous.lost}
    for w in sorted(previous.targets):
        work = previous.targets[w]
        if w in live or not work:
            continue
        departure = left.get(w)
        # Why: count the wait from the last heartbeat, so a worker declared dead after
        # session.timeout.ms has already used that much of the delay; unknown → now.
        since = departure.last_seen_ms if departure is not None else now_ms
        # Why: a LEAVE that says the worker is gone for good has nothing to wait for;
        # a delay of 0 reassigns at once too.
        expects_return = departure is None or departure.expect_return
        wait = config.scheduled_rebalance_max_delay_ms if expects_return else 0
        entry = LostWork(w, work, since, since + wait)
        if (old := ledger.get(w)) is not None:
            entry = LostWork(
                w,
                old.work | work,
                min(old.lost_at_ms, since),
                min(old.deadline_ms, entry.deadline_ms),
            )
        ledger[w] = entry
    return ledger


def _keeper(
    item: Item,
    holders: list[str],
    owned: Mapping[str, frozenset[Item]],
    given: Mapping[str, frozenset[Item]],
    revoked_before: Mapping[str, frozenset[Item]],
) -> str | None:
    """The live member that keeps `item`, or None if it must be released or placed."""
    running = [w for w in holders if item in owned[w]]
    for w in running:
        if item in given[w]:
            # Why: it runs where it was assigned; it stays (others holding it revoke it).
            return w
    if running:
        if any(item in revoked_before[w] for w in running):
            # Why: it was revoked and not yet released: wait for the acknowledgement.
            return None
        # Why: it runs where no assignment put it (a new leader without the previous
        # assignment, a worker back from a partition): keep it there rather than
        # restarting it; any other holder revokes it, so it still runs only once.
        return running[0]
    for w in holders:
        if item in given[w]:
            # Why: it was given and is not started yet; it stays given.
            return w
    return None


_KindCheck = Callable[[Item], bool]


def _is_connector(item: Item) -> bool:
    return not isinstance(item, TaskId)


def _is_task(item: Item) -> bool:
    return isinstance(item, TaskId)


def _group(item: Item) -> str:
    """The connector an item belongs to (for spreading a connector's tasks)."""
    return item.connector if isinstance(item, TaskId) else item


@dataclass(slots=True)
class _Plan:
    """One kind's fair shares (worker → count), excess over them, and free items."""

    is_kind: _KindCheck
    shares: dict[str, int]
    excess: dict[str, int]
    free: list[Item]


def _plan(
    check: _KindCheck,
    kept: Mapping[str, set[Item]],
    releasing: set[Item],
    free: list[Item],
    live: list[str],
) -> _Plan:
    """Fair shares of one kind: floor or ceil of the average, ceil to the most loaded.

    Why ceil to the most loaded: the moves needed are the sum of what workers hold over
    their share, and giving the r spare units to the r workers that hold most makes that
    sum the smallest possible. Work waiting for a departed worker is not counted: it is
    not the live workers' to run until it expires.
    """
    kind_free = [item for item in free if check(item)]
    if not live:
        return _Plan(check, {}, {}, kind_free)
    counts = {w: sum(1 for item in kept[w] if check(item)) for w in live}
    total = sum(counts.values()) + sum(1 for item in releasing if check(item)) + len(kind_free)
    floor, spare = divmod(total, len(live))
    order = sorted(live, key=lambda w: (-counts[w], w))
    shares = {w: floor + (1 if i < spare else 0) for i, w in enumerate(order)}
    excess = {w: counts[w] - shares[w] for w in live if counts[w] > shares[w]}
    return _Plan(check, shares, excess, kind_free)


def _pick_revocations(items: set[Item], check: _KindCheck, count: int) -> list[Item]:
    """`count` items of one kind for an over-loaded worker to give up.

    Why this order: tasks of the connector with the most tasks on this worker go first,
    so giving up load also spreads each connector's tasks across workers; among equals
    the highest task number and connector name go, which is deterministic.
    """
    candidates = sorted((i for i in items if check(i)), key=item_sort_key)
    per_group = Counter(_group(i) for i in candidates)
    picked: list[Item] = []
    for _ in range(count):
        best = max(candidates, key=lambda i: (per_group[_group(i)], item_sort_key(i)))
        candidates.remove(best)
        per_group[_group(best)] -= 1
        picked.append(best)
    return picked


def _place(
    plan: _Plan,
    kept: Mapping[str, set[Item]],
    placed: dict[str, set[Item]],
    live: list[str],
) -> None:
    """Place one kind's free items on workers under their share.

    Why: new work (and released or expired work) fills the under-loaded workers, so
    creating connectors never moves running ones. Among workers with room, a task goes
    where its connector has fewest tasks (a connector's tasks spread across workers),
    then to the least loaded, then by worker id.
    """
    load = {w: sum(1 for item in kept[w] if plan.is_kind(item)) for w in live}
    per_group: Counter[tuple[str, str]] = Counter(
        (w, _group(item)) for w in live for item in kept[w] if plan.is_kind(item)
    )
    for item in plan.free:
        room = [w for w in live if load[w] < plan.shares[w]] or live
        group = _group(item)
        w = min(room, key=lambda w: (per_group[w, group], load[w], w))
        placed[w].add(item)
        load[w] += 1
        per_group[w, group] += 1
