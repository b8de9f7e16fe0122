"""The assignment function, scenario by scenario (the property test is in its own file).

Every scenario runs through `SimCluster`, which checks on every round that no item is in
two targets, that nothing starts while another member may run it, and that no item ever
runs on two workers.
"""

from __future__ import annotations

import random

import pytest

from connect.herder.assignment import assign
from connect.herder.membership import (
    Assignment,
    AssignorConfig,
    Backoff,
    Departure,
    LostWork,
    Member,
    TaskId,
    Work,
)
from tests.connect.herder.sim import CONFIG, SimCluster, tasks_of


def union(works) -> Work:
    total = Work()
    for work in works:
        total = total | work
    return total


def spread(counts: dict[str, int]) -> int:
    return max(counts.values()) - min(counts.values())


@pytest.fixture
def cluster():
    """Three workers running 6 connectors of 3 tasks, stable."""
    sim = SimCluster()
    sim.join("w1", "w2", "w3")
    for i in range(6):
        sim.create(f"c{i}", 3)
    assert sim.settle() == 1
    return sim


# -- first assignment, many connectors at once ----------------------------------------------


def test_first_assignment_is_one_round_without_revocations(cluster):
    first = cluster.history[0]
    assert first.generation == 1
    assert first.revoked == {}
    assert cluster.task_counts() == {"w1": 6, "w2": 6, "w3": 6}
    assert cluster.connector_counts() == {"w1": 2, "w2": 2, "w3": 2}
    assert first.unassigned == Work()
    assert first.delay_ms is None


def test_hundred_connectors_of_three_tasks_at_once():
    sim = SimCluster()
    sim.join("w1", "w2", "w3")
    for i in range(100):
        sim.create(f"conn-{i:03}", 3)
    assert sim.settle() == 1  # one generation, every task started exactly once
    assert sim.task_counts() == {"w1": 100, "w2": 100, "w3": 100}
    assert spread(sim.connector_counts()) <= 1
    for i in range(100):
        owners = {sim.placement()[TaskId(f"conn-{i:03}", n)] for n in range(3)}
        assert len(owners) == 3, f"conn-{i:03}'s tasks share a worker"
    assert all(not a.revoked for a in sim.history)


def test_connectors_created_one_by_one_never_move_running_work():
    sim = SimCluster()
    sim.join("w1", "w2", "w3", "w4")
    before: dict = {}
    for i in range(30):
        sim.create(f"c{i:02}", 1 + i % 5)
        sim.settle()
        after = sim.placement()
        moved = [item for item, w in before.items() if after[item] != w]
        assert moved == []
        before = after
    assert spread(sim.task_counts()) <= 1
    assert spread(sim.connector_counts()) <= 1


# -- a worker joins --------------------------------------------------------------------------


def test_join_takes_a_fair_share_from_the_loaded_workers_only(cluster):
    before = cluster.placement()
    cluster.join("w4")
    revoking = cluster.rebalance()
    # Round 1 only revokes: the new worker gets nothing that is still running elsewhere.
    assert "w4" not in revoking.assigned
    # 18 tasks over 4 workers: shares 5/5/4/4, so the three 6s give up 4 tasks in all.
    assert sum(len(w.tasks) for w in revoking.revoked.values()) == 4
    assert sum(len(w.connectors) for w in revoking.revoked.values()) == 1
    assert revoking.unassigned.items() == set().union(
        *(r.items() for r in revoking.revoked.values())
    )
    allocating = cluster.rebalance()
    assert allocating.revoked == {}
    assert set(allocating.assigned) == {"w4"}
    assert allocating.assigned["w4"] == revoking.unassigned
    assert cluster.rebalance().changes is False
    counts = cluster.task_counts()
    assert counts["w4"] == 4 and spread(counts) <= 1
    moved = [i for i, w in cluster.placement().items() if before[i] != w]
    assert all(cluster.placement()[i] == "w4" for i in moved)
    # Minimal: w4's 4 tasks and 1 connector are all that moved.
    assert len(moved) == len(cluster.previous.targets["w4"])


def test_join_spreads_the_taken_tasks_of_a_connector():
    sim = SimCluster()
    sim.join("w1")
    sim.create("big", 8)
    sim.settle()
    sim.join("w2")
    sim.settle()
    assert len(tasks_of(sim.previous.targets["w2"], "big")) == 4
    assert len(tasks_of(sim.previous.targets["w1"], "big")) == 4


def test_revocation_waits_for_release(cluster):
    """A worker that has not acknowledged its revocation keeps the work from moving."""
    cluster.join("w4")
    revoking = cluster.rebalance(slow={"w1"})
    stuck = revoking.revoked["w1"]
    waiting = cluster.rebalance(slow={"w1"})
    assert waiting.revoked["w1"] == stuck  # asked again, idempotently
    assert not stuck.items() & waiting.assigned.get("w4", Work()).items()
    assert stuck.items() <= waiting.unassigned.items()
    released = cluster.rebalance()  # w1 stops them now and acknowledges
    assert not stuck.items() & released.assigned.get("w4", Work()).items()
    moved = cluster.rebalance()
    assert stuck.items() <= moved.assigned["w4"].items()


# -- a worker leaves and returns -------------------------------------------------------------


def test_leave_keeps_the_work_for_the_delay_and_moves_nothing_else(cluster):
    before = cluster.placement()
    gone = cluster.previous.targets["w2"]
    cluster.crash("w2")
    result = cluster.rebalance()
    assert result.lost == (LostWork("w2", gone, cluster.now, cluster.now + 10_000),)
    assert result.unassigned == gone
    assert result.delay_ms == 10_000
    assert not result.changes
    assert {i: w for i, w in cluster.placement().items()} == {
        i: w for i, w in before.items() if w != "w2"
    }


def test_return_within_the_delay_gets_its_own_work_back(cluster):
    gone = cluster.previous.targets["w2"]
    cluster.crash("w2")
    cluster.rebalance()
    cluster.advance(4_000)
    interim = cluster.rebalance()  # something else rebalanced meanwhile
    assert interim.delay_ms == 6_000
    cluster.join("w2")
    back = cluster.rebalance()
    assert back.assigned == {"w2": gone}
    assert back.revoked == {}
    assert back.lost == ()
    assert back.delay_ms is None
    assert cluster.rebalance().changes is False


def test_expired_delay_spreads_the_lost_work_over_the_others(cluster):
    before = cluster.placement()
    gone = cluster.previous.targets["w2"]
    cluster.crash("w2")
    cluster.rebalance()
    cluster.advance(9_999)
    assert not cluster.rebalance().changes
    cluster.advance(1)
    expired = cluster.rebalance()
    assert expired.lost == ()
    assert expired.revoked == {}
    assert set().union(*(a.items() for a in expired.assigned.values())) == gone.items()
    assert cluster.task_counts() == {"w1": 9, "w3": 9}
    assert cluster.connector_counts() == {"w1": 3, "w3": 3}
    for item, w in before.items():
        if w != "w2":
            assert cluster.placement()[item] == w
    # The worker coming back later is a new worker: it takes a fair share back.
    cluster.join("w2")
    cluster.settle()
    assert cluster.task_counts() == {"w1": 6, "w2": 6, "w3": 6}


def test_dead_after_session_timeout_uses_up_part_of_the_delay(cluster):
    """The wait counts from the last heartbeat, not from the eviction."""
    cluster.crash("w2", last_seen_ms=cluster.now - 3_000)
    result = cluster.rebalance()
    assert result.delay_ms == 7_000
    assert result.lost[0].deadline_ms == cluster.now + 7_000


def test_dead_worker_whose_delay_already_expired_is_reassigned_at_once(cluster):
    gone = cluster.previous.targets["w2"]
    cluster.crash("w2", last_seen_ms=cluster.now - 10_000)  # session timeout ≥ delay
    result = cluster.rebalance()
    assert result.lost == ()
    assert result.delay_ms is None
    assert set().union(*(a.items() for a in result.assigned.values())) == gone.items()
    assert result.unassigned == Work()


def test_leave_for_good_is_reassigned_at_once(cluster):
    gone = cluster.previous.targets["w3"]
    cluster.leave("w3", expect_return=False)
    result = cluster.rebalance()
    assert result.lost == ()
    assert union(result.assigned.values()) == gone
    assert cluster.task_counts() == {"w1": 9, "w2": 9}


def test_zero_delay_reassigns_at_once():
    sim = SimCluster(config=AssignorConfig(scheduled_rebalance_max_delay_ms=0))
    sim.join("a", "b")
    sim.create("c", 4)
    sim.settle()
    sim.crash("a")
    result = sim.rebalance()
    assert result.unassigned == Work()
    assert sim.task_counts() == {"b": 4}


def test_two_departures_wait_each_from_their_own_time(cluster):
    cluster.crash("w1")
    cluster.rebalance()
    cluster.advance(6_000)
    cluster.crash("w2")
    second = cluster.rebalance()
    assert [e.worker_id for e in second.lost] == ["w1", "w2"]
    assert second.delay_ms == 4_000
    cluster.advance(4_000)
    first_expired = cluster.rebalance()
    assert [e.worker_id for e in first_expired.lost] == ["w2"]
    assert first_expired.delay_ms == 6_000
    assert set(first_expired.assigned) == {"w3"}


def test_no_balancing_revocation_while_lost_work_waits(cluster):
    cluster.crash("w1")
    cluster.rebalance()
    cluster.join("w4")  # a new worker while w1's work waits
    result = cluster.rebalance()
    assert result.revoked == {}
    assert result.delay_ms == 10_000
    cluster.advance(10_000)
    cluster.settle()
    counts = cluster.task_counts()
    assert sorted(counts) == ["w2", "w3", "w4"] and set(counts.values()) == {6}


def test_new_work_during_the_delay_goes_to_the_live_workers(cluster):
    cluster.crash("w1")
    cluster.rebalance()
    cluster.create("fresh", 4)
    result = cluster.rebalance()
    placed = union(result.assigned.values())
    assert placed == Work.of(["fresh"], [("fresh", n) for n in range(4)])
    assert {w: len(t.tasks) for w, t in result.targets.items()} == {"w2": 8, "w3": 8}


def test_no_members_at_all_then_a_worker_after_the_delay():
    sim = SimCluster()
    sim.join("a")
    sim.create("c", 2)
    sim.settle()
    sim.crash("a")
    nobody = sim.rebalance()
    assert nobody.targets == {}
    assert nobody.unassigned == Work.configured({"c": 2})
    sim.advance(60_000)
    sim.join("b")
    result = sim.rebalance()
    assert result.assigned == {"b": Work.configured({"c": 2})}
    assert result.lost == ()


# -- uneven loads, deletions, task count changes -------------------------------------------


def test_uneven_loads_are_balanced_with_minimal_movement():
    """A new leader that inherits an uneven cluster moves only the excess."""
    owned = {
        "w1": Work.configured({"a": 5, "b": 4}),
        "w2": Work.configured({"c": 1}),
        "w3": Work(),
    }
    sim = SimCluster()
    sim.join("w1", "w2", "w3")
    sim.owned.update(owned)
    for name, count in {"a": 5, "b": 4, "c": 1}.items():
        sim.create(name, count)
    first = sim.rebalance()
    # 10 tasks over 3: shares 4/3/3, the 4 on w1. w1 gives up exactly 5 tasks and one
    # connector, w2 keeps its work.
    assert set(first.revoked) == {"w1"}
    assert len(first.revoked["w1"].tasks) == 5
    assert len(first.revoked["w1"].connectors) == 1
    assert first.assigned == {}
    # The most concentrated connector gives up most: w1 keeps two of each.
    assert len(tasks_of(first.targets["w1"], "a")) == 2
    assert len(tasks_of(first.targets["w1"], "b")) == 2
    sim.settle()
    assert sorted(sim.task_counts().values()) == [3, 3, 4]
    assert spread(sim.connector_counts()) <= 1
    assert sim.previous.targets["w2"].items() >= owned["w2"].items()


def test_deleting_connectors_revokes_them_and_moves_nothing_else(cluster):
    before = cluster.placement()
    cluster.delete("c0")
    cluster.delete("c1")
    result = cluster.rebalance()
    gone = Work.configured({"c0": 3, "c1": 3})
    assert union(result.revoked.values()) == gone
    assert result.assigned == {}
    assert cluster.placement() == {i: w for i, w in before.items() if i not in gone.items()}
    assert cluster.settle() == 0  # still within ±1: nothing to rebalance
    assert spread(cluster.task_counts()) <= 1


def test_deleting_the_connectors_of_one_worker_rebalances_minimally():
    sim = SimCluster()
    sim.join("w1", "w2")
    sim.owned["w1"] = Work.configured({"a": 2, "b": 2})
    sim.owned["w2"] = Work.configured({"c": 2, "d": 2})
    for name in "abcd":
        sim.create(name, 2)
    assert sim.settle() == 0
    sim.delete("a")
    sim.delete("b")
    sim.settle()
    assert sim.task_counts() == {"w1": 2, "w2": 2}
    assert sim.connector_counts() == {"w1": 1, "w2": 1}
    assert len(sim.previous.targets["w2"].tasks & Work.configured({"c": 2, "d": 2}).tasks) == 2


def test_task_count_up_places_new_tasks_on_the_least_loaded(cluster):
    before = cluster.placement()
    cluster.create("c1", 6)
    result = cluster.rebalance()
    new = {TaskId("c1", n) for n in range(3, 6)}
    assert set().union(*(a.items() for a in result.assigned.values())) == new
    assert result.revoked == {}
    assert all(cluster.placement()[i] == w for i, w in before.items())
    assert {cluster.placement()[t] for t in new} == {"w1", "w2", "w3"}
    assert spread(cluster.task_counts()) <= 1


def test_task_count_down_revokes_the_removed_tasks(cluster):
    cluster.create("c2", 1)
    result = cluster.rebalance()
    removed = {TaskId("c2", 1), TaskId("c2", 2)}
    assert set().union(*(r.items() for r in result.revoked.values())) == removed
    assert result.assigned == {}
    cluster.settle()
    assert spread(cluster.task_counts()) <= 1


def test_connector_with_no_tasks_is_still_assigned():
    sim = SimCluster()
    sim.join("a", "b")
    sim.create("stopped", 0)
    sim.create("running", 2)
    sim.settle()
    assert sim.placement()["stopped"] in ("a", "b")
    assert sim.connector_counts() == {"a": 1, "b": 1}


# -- duplicates, adoption, back-off ----------------------------------------------------------


def test_work_reported_by_two_members_stays_with_one():
    task = TaskId("c", 0)
    previous = Assignment(generation=4, targets={"a": Work.of(["c"], [task]), "b": Work()})
    members = [Member("a", Work.of(["c"], [task])), Member("b", Work.of([], [task]))]
    result = assign(members, previous, {"c": 1}, now_ms=0, config=CONFIG)
    assert result.generation == 5
    assert result.targets["a"] == Work.of(["c"], [task])
    assert result.revoked == {"b": Work.of([], [task])}


def test_a_new_leader_without_history_keeps_what_runs_where_it_runs():
    members = [
        Member("a", Work.configured({"x": 2})),
        Member("b", Work.configured({"y": 2})),
    ]
    result = assign(members, Assignment(), {"x": 2, "y": 2}, now_ms=0, config=CONFIG)
    assert result.targets == {"a": Work.configured({"x": 2}), "b": Work.configured({"y": 2})}
    assert not result.changes


def test_successive_balancing_rebalances_back_off():
    sim = SimCluster()
    sim.join("w1")
    sim.create("c", 24)
    sim.settle()
    # Workers join one after another, each before the previous move completed.
    sim.join("w2")
    first = sim.rebalance()
    assert first.revoked and first.backoff == Backoff(1, sim.now)
    sim.join("w3")
    second = sim.rebalance()
    assert "w1" not in second.revoked  # deferred: a storm otherwise
    assert second.delay_ms == 1_000
    sim.advance(1_000)
    third = sim.rebalance()
    assert third.revoked and third.backoff.streak == 2
    sim.join("w4")
    fourth = sim.rebalance()
    assert fourth.delay_ms == 2_000  # the wait doubles
    sim.advance(2_000)
    sim.settle()
    assert sim.task_counts() == {"w1": 6, "w2": 6, "w3": 6, "w4": 6}
    assert sim.previous.backoff == Backoff()  # a calm round resets the streak


def test_back_off_is_capped():
    config = AssignorConfig(revocation_backoff_initial_ms=1_000, revocation_backoff_max_ms=5_000)
    assert [config.backoff_ms(n) for n in range(6)] == [0, 1_000, 2_000, 4_000, 5_000, 5_000]


# -- determinism and idempotence -------------------------------------------------------------


def test_same_inputs_in_any_order_give_the_same_assignment(cluster):
    cluster.join("w4")
    cluster.crash("w2", last_seen_ms=cluster.now - 100)
    cluster.create("late", 5)
    members = cluster.members()
    expected = cluster.compute(members)
    rng = random.Random(7)
    for _ in range(5):
        rng.shuffle(members)
        assert cluster.compute(members) == expected


def test_applying_the_function_to_its_own_output_changes_nothing(cluster):
    cluster.join("w4")
    cluster.create("late", 5)
    cluster.settle()
    again = cluster.compute()
    assert not again.changes
    assert again.targets == cluster.previous.targets
    assert again.lost == cluster.previous.lost
    # And with members that have not applied it yet: the same answer again.
    cluster.join("w5")
    first = cluster.compute()
    cluster.previous = first
    second = cluster.compute()
    assert second.targets == first.targets
    assert second.revoked == first.revoked


def test_duplicate_member_ids_are_refused():
    with pytest.raises(ValueError, match="twice"):
        assign([Member("a"), Member("a")], Assignment(), {}, now_ms=0)


def test_negative_task_count_is_refused():
    with pytest.raises(ValueError, match="negative"):
        assign([Member("a")], Assignment(), {"c": -1}, now_ms=0)


def test_departures_of_unknown_workers_are_ignored(cluster):
    result = cluster.compute()
    with_noise = assign(
        cluster.members(),
        cluster.previous,
        cluster.configured,
        now_ms=cluster.now,
        config=CONFIG,
        departures=[Departure("ghost", 0)],
    )
    assert with_noise == result


def test_new_tasks_of_a_connector_go_where_it_has_fewest_tasks():
    """Among workers with room, spread beats the worker-id tie-break."""
    sim = SimCluster()
    sim.join("w1", "wa", "wb")
    sim.owned["w1"] = Work.configured({"x": 3})
    sim.owned["wb"] = Work.configured({"z": 1})
    sim.create("x", 3)
    sim.create("z", 1)
    sim.create("y", 2)
    sim.rebalance()
    owners = {sim.placement()[TaskId("y", n)] for n in range(2)}
    assert owners == {"wa", "wb"}
    sim.settle()
    assert sim.task_counts() == {"w1": 2, "wa": 2, "wb": 2}


def test_rolling_restarts_return_every_worker_its_own_work(cluster):
    """Clean bounces within the delay move nothing: each worker gets its work back."""
    original = cluster.placement()
    for _ in range(3):
        for w in ("w1", "w2", "w3"):
            cluster.leave(w)
            waiting = cluster.rebalance()
            assert not waiting.changes  # nothing moves to the others meanwhile
            cluster.advance(2_000)
            cluster.join(w)
            back = cluster.rebalance()
            assert back.revoked == {}
            assert set(back.assigned) == {w}
            assert cluster.placement() == original
    # Across all those generations no item was ever in two targets.
    for generation in cluster.history:
        items = [i for t in generation.targets.values() for i in t.items()]
        assert len(items) == len(set(items))
