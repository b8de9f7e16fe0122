"""Properties of the assignment over random histories (Hypothesis).

A history is a random sequence of joins, crashes (with a last heartbeat some time ago),
clean leaves, connector creations, deletions, task-count changes, clock advances and
rebalances in which some workers are slow to release. `SimCluster` checks the safety
invariants on every round (no item in two targets, nothing started while another member
may run it, nothing running twice). Once the history ends, time runs past every delay
and back-off and the cluster settles; then every configured item is assigned exactly
once, counts are within ±1 per kind, the moves were no more than the excess over the
fair share, and the function applied to its own output changes nothing.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connect.herder.membership import Item, TaskId, Work
from tests.connect.herder.sim import CONFIG, SimCluster

WORKERS = [f"w{i}" for i in range(6)]
CONNECTORS = [f"c{i}" for i in range(8)]

join = st.tuples(st.just("join"), st.sampled_from(WORKERS))
crash = st.tuples(st.just("crash"), st.sampled_from(WORKERS), st.integers(0, 15_000))
leave = st.tuples(st.just("leave"), st.sampled_from(WORKERS), st.booleans())
create = st.tuples(st.just("create"), st.sampled_from(CONNECTORS), st.integers(0, 6))
delete = st.tuples(st.just("delete"), st.sampled_from(CONNECTORS))
advance = st.tuples(st.just("advance"), st.integers(0, 12_000))
rebalance = st.tuples(st.just("rebalance"), st.frozensets(st.sampled_from(WORKERS), max_size=2))
step = st.one_of(join, crash, leave, create, delete, advance, rebalance)

SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)


def run(sim: SimCluster, history: list[tuple]) -> None:
    for op, *args in history:
        if op == "join" and args[0] not in sim.owned:
            sim.join(args[0])
        elif op == "crash" and args[0] in sim.owned:
            sim.crash(args[0], last_seen_ms=sim.now - args[1])
        elif op == "leave" and args[0] in sim.owned:
            sim.leave(args[0], expect_return=args[1])
        elif op == "create":
            sim.create(args[0], args[1])
        elif op == "delete" and args[0] in sim.configured:
            sim.delete(args[0])
        elif op == "advance":
            sim.advance(args[0])
        elif op == "rebalance":
            sim.rebalance(slow=args[0] & set(sim.owned))
            continue
        sim.rebalance()


def stabilize(sim: SimCluster) -> None:
    """Let every delay and back-off run out, rebalancing when asked to."""
    for _ in range(40):
        result = sim.rebalance()
        if not result.changes and result.delay_ms is None:
            return
        if not result.changes:
            sim.advance(result.delay_ms or 0)
    raise AssertionError("the cluster did not settle")


def kind_of(item: Item) -> str:
    return "tasks" if isinstance(item, TaskId) else "connectors"


def excess_over_floor(sim: SimCluster, placement: dict[Item, str]) -> dict[str, int]:
    """Per kind, the sum over live workers of what they hold above floor(total/workers)."""
    wanted = Work.configured(sim.configured).items()
    bound = {}
    for kind in ("connectors", "tasks"):
        items = [i for i in wanted if kind_of(i) == kind]
        floor = len(items) // len(sim.owned)
        held = {w: 0 for w in sim.owned}
        for i in items:
            if placement.get(i) in held:
                held[placement[i]] += 1
        bound[kind] = sum(max(0, n - floor) for n in held.values())
    return bound


@SETTINGS
@given(history=st.lists(step, max_size=30))
def test_random_histories_keep_the_invariants_and_settle_balanced(history):
    sim = SimCluster()
    sim.join("w0")
    run(sim, history)
    if not sim.owned:
        sim.join("w5")
    # Past every lost-work deadline, then settle.
    sim.advance(CONFIG.scheduled_rebalance_max_delay_ms + CONFIG.revocation_backoff_max_ms)
    sim.rebalance()  # expired work is placed (a new worker placed nothing yet)
    start = sim.placement()
    bound = excess_over_floor(sim, start)
    stabilize(sim)
    final = sim.previous

    # Every configured item is assigned exactly once (check_round saw no double).
    assert final.unassigned == Work()
    assert final.lost == ()
    assert final.delay_ms is None
    # Balanced within ±1 per kind.
    for counts in (sim.connector_counts(), sim.task_counts()):
        assert max(counts.values()) - min(counts.values()) <= 1
    # Minimal movement: nothing moved beyond what workers held over the floor share.
    end = sim.placement()
    for kind in ("connectors", "tasks"):
        moved = [i for i, w in start.items() if kind_of(i) == kind and end.get(i, w) != w]
        assert len(moved) <= bound[kind], (kind, len(moved), bound[kind])
    # Idempotent: the function applied to its own (applied) output changes nothing.
    again = sim.compute()
    assert not again.changes
    assert again.targets == final.targets


@SETTINGS
@given(
    tasks=st.dictionaries(st.sampled_from(CONNECTORS), st.integers(0, 6), max_size=8),
    workers=st.integers(1, 5),
)
def test_a_join_moves_only_the_new_workers_share_to_it(tasks, workers):
    sim = SimCluster()
    sim.join(*WORKERS[:workers])
    for name, count in tasks.items():
        sim.create(name, count)
    assert sim.settle() <= 1  # created at once: one round, no revocation
    before = sim.placement()
    sim.join("w5")
    sim.settle()
    after = sim.placement()
    moved = [i for i, w in before.items() if after[i] != w]
    assert all(after[i] == "w5" for i in moved)
    total = len(sim.configured), sum(sim.configured.values())
    share = [n // (workers + 1) for n in total]
    w5 = sim.previous.targets["w5"]
    assert (len(w5.connectors), len(w5.tasks)) >= tuple(share)
    assert len(w5.connectors) <= share[0] + 1 and len(w5.tasks) <= share[1] + 1
    for counts in (sim.connector_counts(), sim.task_counts()):
        assert max(counts.values()) - min(counts.values()) <= 1


@SETTINGS
@given(history=st.lists(step, max_size=20), shuffle=st.randoms(use_true_random=False))
def test_same_inputs_in_any_order_give_the_same_assignment(history, shuffle):
    sim = SimCluster()
    sim.join("w0", "w1")
    run(sim, history)
    members = sim.members()
    expected = sim.compute(members)
    shuffle.shuffle(members)
    assert sim.compute(members) == expected
