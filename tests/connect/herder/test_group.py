"""The group topic's replay (connect.herder.group): what every worker agrees on."""

from __future__ import annotations

from connect.herder.assignment import assign
from connect.herder.group import (
    AssignmentMeta,
    GroupState,
    assignment_from_json,
    assignment_record,
    assignment_to_json,
    evict_record,
    heartbeat_record,
    join_record,
    leave_record,
    revoked_record,
)
from connect.herder.membership import Assignment, Departure, TaskId, Work


class Replay:
    """A group topic in memory: append records (stamped by a manual clock), replay."""

    def __init__(self) -> None:
        self.records: list[tuple[int, int, bytes, bytes]] = []
        self.now = 1_000

    def append(self, *records: tuple[bytes, bytes], at: int | None = None) -> int:
        if at is not None:
            self.now = at
        first = len(self.records)
        for key, value in records:
            self.records.append((len(self.records), self.now, key, value))
        return first

    def state(self, records: list[tuple[int, int, bytes, bytes]] | None = None) -> GroupState:
        state = GroupState()
        for offset, ts, key, value in self.records if records is None else records:
            state.apply(offset, ts, key, value)
        return state

    def compacted(self) -> list[tuple[int, int, bytes, bytes]]:
        """Only the last record of each key, offsets kept (what compaction leaves)."""
        last = {key: i for i, (_, _, key, _) in enumerate(self.records)}
        return [r for i, r in enumerate(self.records) if last[r[2]] == i]


def _assignment(state: GroupState, configured: dict[str, int], leader: str) -> tuple:
    result = assign(
        state.members_for_assignment(),
        state.assignment,
        configured,
        now_ms=state.log_time_ms,
        departures=state.departures.values(),
    )
    meta = AssignmentMeta(
        based_on=state.assignment.generation,
        leader=leader,
        computed_at_ms=state.log_time_ms,
        members={w: m.incarnation for w, m in state.members.items()},
        configured=configured,
    )
    return assignment_record(result, meta)


def test_members_leader_and_log_time_come_from_the_records() -> None:
    log = Replay()
    log.append(join_record("b", "b1", "http://b"), at=1_000)
    log.append(join_record("a", "a1", "http://a"), at=1_100)
    log.append(heartbeat_record("b", "b1", "http://b", 0, 0), at=1_500)
    state = log.state()
    assert sorted(state.members) == ["a", "b"]
    assert state.leader() == "b"  # the earliest join, not the smallest id
    assert state.members["b"].last_seen_ms == 1_500
    assert state.log_time_ms == 1_500
    assert state.position == 3


def test_an_evicted_incarnation_is_ignored_and_must_join_again() -> None:
    log = Replay()
    log.append(join_record("a", "a1", "http://a"))
    log.append(join_record("b", "b1", "http://b"))
    log.append(evict_record("b", "b1", 1_000, "a"), at=5_000)
    log.append(heartbeat_record("b", "b1", "http://b", 1, 3), at=5_100)  # a zombie wakes
    state = log.state()
    assert sorted(state.members) == ["a"]
    assert state.departures["b"] == Departure("b", 1_000)
    log.append(join_record("b", "b2", "http://b"), at=5_200)
    state = log.state()
    assert state.members["b"].incarnation == "b2"
    assert "b" not in state.departures
    # An eviction of an older incarnation does not touch the new one.
    log.append(evict_record("b", "b1", 1_000, "a"))
    assert log.state().members["b"].incarnation == "b2"


def test_leave_records_the_departure_and_whether_the_worker_returns() -> None:
    log = Replay()
    log.append(join_record("a", "a1", "http://a"))
    log.append(join_record("b", "b1", "http://b"))
    log.append(leave_record("b", "b1", expect_return=False), at=7_000)
    log.append(leave_record("a", "other", expect_return=True))  # not its incarnation
    state = log.state()
    assert sorted(state.members) == ["a"]
    assert state.departures["b"] == Departure("b", 7_000, expect_return=False)


def test_compaction_keeps_members_join_order_and_the_assignment() -> None:
    log = Replay()
    log.append(join_record("z", "z1", "http://z"))
    log.append(join_record("a", "a1", "http://a"))
    state = log.state()
    log.append(_assignment(state, {"c": 2}, "z"))
    for i in range(3):
        log.append(heartbeat_record("a", "a1", "http://a", 1, 1), at=2_000 + i)
        log.append(heartbeat_record("z", "z1", "http://z", 0, 1), at=2_000 + i)
    full, compacted = log.state(), log.state(log.compacted())
    assert len(log.compacted()) < len(log.records)
    assert compacted.leader() == full.leader() == "z"
    assert {w: m.joined for w, m in compacted.members.items()} == {"z": 0, "a": 1}
    assert compacted.assignment == full.assignment
    assert compacted.meta.members == full.meta.members
    assert compacted.owned("a") == full.owned("a")


def test_only_the_first_assignment_based_on_a_generation_counts() -> None:
    log = Replay()
    log.append(join_record("a", "a1", "http://a"))
    log.append(join_record("b", "b1", "http://b"))
    state = log.state()
    first = _assignment(state, {"c": 2}, "a")
    second = _assignment(state, {"c": 2, "d": 1}, "b")  # a racing second leader
    log.append(first)
    log.append(second)
    state = log.state()
    assert state.assignment.generation == 1
    assert state.meta.leader == "a"
    assert state.meta.configured == {"c": 2}


def test_owned_counts_revocations_until_acknowledged() -> None:
    log = Replay()
    log.append(join_record("a", "a1", "http://a"))
    state = log.state()
    log.append(_assignment(state, {"c": 4}, "a"))
    log.append(join_record("b", "b1", "http://b"))
    state = log.state()
    assert state.rebalance_reason({"c": 4}) == "members changed"
    log.append(_assignment(state, {"c": 4}, "a"))
    state = log.state()
    revoked = state.assignment.revoked["a"]
    assert revoked  # a gives up work for b, first round
    assert state.owned("a") == state.assignment.targets["a"] | revoked
    assert state.pending_revocations()
    assert state.rebalance_reason({"c": 4}) is None
    log.append(revoked_record("a", "a1", state.assignment.generation))
    state = log.state()
    assert state.owned("a") == state.assignment.targets["a"]
    assert not state.pending_revocations()
    assert state.rebalance_reason({"c": 4}) == "revocations acknowledged"
    log.append(_assignment(state, {"c": 4}, "a"))
    state = log.state()
    assert len(state.assignment.targets["b"].tasks) == 2  # second round: placed
    assert state.rebalance_reason({"c": 4}) is None
    assert state.rebalance_reason({"c": 5}) == "connectors or task counts changed"


def test_a_restarted_worker_owns_nothing_of_its_previous_life() -> None:
    log = Replay()
    log.append(join_record("a", "a1", "http://a"))
    state = log.state()
    log.append(_assignment(state, {"c": 1}, "a"))
    assert log.state().owned("a") == Work.of(["c"], [("c", 0)])
    log.append(join_record("a", "a2", "http://a"))  # kill -9 and back before eviction
    state = log.state()
    assert state.owned("a") == Work()
    assert state.rebalance_reason({"c": 1}) == "members changed"


def test_a_scheduled_rebalance_is_due_at_its_delay_in_log_time() -> None:
    log = Replay()
    log.append(join_record("a", "a1", "http://a"), at=1_000)
    log.append(join_record("b", "b1", "http://b"), at=1_000)
    state = log.state()
    log.append(_assignment(state, {"c": 2}, "a"))
    log.append(leave_record("b", "b1", expect_return=True), at=2_000)
    state = log.state()
    log.append(_assignment(state, {"c": 2}, "a"))
    state = log.state()
    assert state.assignment.delay_ms is not None and state.assignment.lost
    assert state.rebalance_reason({"c": 2}) is None
    log.append(heartbeat_record("a", "a1", "http://a", 0, 2), at=2_000 + state.assignment.delay_ms)
    assert log.state().rebalance_reason({"c": 2}) == "scheduled rebalance"


def test_assignments_round_trip_through_json() -> None:
    log = Replay()
    log.append(join_record("a", "a1", "http://a"))
    log.append(join_record("b", "b1", "http://b"))
    state = log.state()
    a = assign(state.members_for_assignment(), Assignment(), {"x": 3, "y": 1}, now_ms=5)
    assert assignment_from_json(assignment_to_json(a)) == a
    assert TaskId("x", 2) in a.targets["a"].tasks | a.targets["b"].tasks


def test_records_that_are_not_the_groups_are_ignored() -> None:
    state = GroupState()
    state.apply(0, 10, b"worker-a", b"not json")
    state.apply(1, 11, None, b"{}")
    state.apply(2, 12, b"worker-a", b"[1, 2]")
    state.apply(3, 13, b"something-else", b"{}")
    assert state.members == {} and state.position == 4 and state.log_time_ms == 13
