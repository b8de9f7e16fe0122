"""A worker's membership of its cluster: the group topic's reader and writer.

One thread per worker (numbered as in `_tick`, steps of docs/distributed.md):

1. read the group topic to its end and apply it to the `GroupState`;
2. join when not a member (again, as a new incarnation, after an eviction once the
   herder has stopped all its work);
3. heartbeat every `heartbeat.interval.ms`, and read the heartbeat back: only then is
   the worker's lease (connect.worker.lease) extended, so a worker that cannot read its
   own writes stops writing for its tasks before the others declare it dead;
4. as the leader (the live member that joined first): evict members silent for
   `session.timeout.ms` (or holding a revocation past `rebalance.timeout.ms`), and
   compute and append the next generation's assignment whenever the state calls for one;
   as any other member: evict a silent leader.

This thread never waits for tasks: starting and stopping them is the herder's (another
thread), so heartbeats go on while tasks take their time to stop.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import replace

from connect.herder.assignment import assign
from connect.herder.group import (
    AssignmentMeta,
    GroupState,
    assignment_record,
    evict_record,
    heartbeat_record,
    join_record,
    leave_record,
    revoked_record,
)
from connect.herder.membership import AssignorConfig
from connect.worker.lease import Lease
from log import Log, TopicExistsError

__all__ = ["GroupMember"]

_log = logging.getLogger("connect.herder.group")

#: How often the membership thread looks at the group topic between heartbeats.
POLL_S = 0.05
#: The lease ends this share of the session timeout after a heartbeat was sent, so a
#: stalled worker stops writing a little before the others may evict it.
LEASE_SHARE = 0.8

#: The group topic: compacted, and in small segments that close often, so that the
#: heartbeats of a long-lived cluster are compacted away (only closed segments are) and
#: a starting worker replays little more than the current state.
GROUP_TOPIC_CONFIG = {
    "cleanup.policy": "compact",
    "segment.bytes": 1 << 20,
    "segment.ms": 10 * 60 * 1000,
}

#: What the leader reads from the config topic: connector → task count, config offset.
Configured = Callable[[], tuple[Mapping[str, int], int]]


class GroupMember:
    """Membership of worker `worker_id` (reachable at `url`) in the group topic."""

    def __init__(
        self,
        log: Log,
        topic: str,
        *,
        worker_id: str,
        url: str,
        session_timeout_ms: int,
        heartbeat_interval_ms: int,
        rebalance_timeout_ms: int,
        assignor: AssignorConfig,
        configured: Configured,
        on_change: Callable[[], None],
    ) -> None:
        self.log = log
        self.topic = topic
        self.worker_id = worker_id
        self.url = url
        self.session_ms = session_timeout_ms
        self.heartbeat_s = heartbeat_interval_ms / 1000
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.assignor = assignor
        self._configured = configured
        self._on_change = on_change
        self.lease = Lease()
        self.state = GroupState()
        self.lock = threading.RLock()  # guards `state` and the fields below
        self.incarnation = ""
        self.joined: int | None = None
        #: The generation the herder runs (it says so in every heartbeat).
        self.running_generation = 0
        #: Set when this incarnation was evicted: the herder stops all work, then calls
        #: `rejoin()`.
        self.evicted = threading.Event()
        self._may_join = threading.Event()
        self._may_join.set()
        self._last_heartbeat = -1e18
        self._seen_generation = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        with contextlib.suppress(TopicExistsError):
            self.log.create_topic(self.topic, 1, config=GROUP_TOPIC_CONFIG)
        with self.lock:
            self.state.position = self.log.earliest_offset(self.topic, 0)
            self._read()
            self._join()
        self._thread = threading.Thread(target=self._run, name="group-member", daemon=True)
        self._thread.start()

    def leave(self, *, expect_return: bool = True) -> None:
        """Stop heartbeating and say so (the herder stopped its work first)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self.lease.revoke()
        with self.lock:
            if self.joined is not None:
                with contextlib.suppress(Exception):
                    self._append(
                        leave_record(self.worker_id, self.incarnation, expect_return=expect_return)
                    )
            self.joined = None

    def rejoin(self) -> None:
        """The herder stopped everything after an eviction: join as a new incarnation."""
        self.evicted.clear()
        self._may_join.set()

    def acknowledge(self, generation: int) -> None:
        """Say that what `generation` revoked from this worker has stopped."""
        with self.lock:
            self._append(revoked_record(self.worker_id, self.incarnation, generation))
            self._read()

    # ------------------------------------------------------------- the thread

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                with self.lock:
                    self._tick()
            except Exception:
                _log.exception("worker %s: group topic round failed", self.worker_id)
            self._stop.wait(POLL_S)

    def _tick(self) -> None:
        # Step 1
        self._read()
        # Step 2
        if self.joined is None:
            if self._may_join.is_set():
                self._join()
            return
        me = self.state.members.get(self.worker_id)
        if me is None or me.incarnation != self.incarnation:
            if not self.evicted.is_set():
                _log.warning(
                    "worker %s was declared dead (incarnation %s); stopping its work and "
                    "joining again",
                    self.worker_id,
                    self.incarnation,
                )
                self.lease.revoke()
                self.joined = None
                self._may_join.clear()
                self.evicted.set()
                self._on_change()
            return
        # Step 3
        if time.monotonic() - self._last_heartbeat >= self.heartbeat_s:
            self._heartbeat()
        # Step 4
        if self.state.leader() == self.worker_id:
            self._lead()
        else:
            self._watch_leader()

    # ----------------------------------------------------------------- I/O

    def _append(self, *records: tuple[bytes, bytes]) -> range:
        offsets = self.log.append(
            self.topic, 0, [v for _, v in records], keys=[k for k, _ in records]
        )
        self.log.flush(self.topic, 0)
        return offsets

    def _read(self) -> None:
        state = self.state
        earliest, end = self._ends()
        state.position = max(state.position, earliest)
        while state.position < end:
            records = self.log.read(self.topic, 0, state.position, max_bytes=1 << 20)
            if not records:
                break
            for r in records:
                state.apply(r.offset, r.timestamp, r.key, r.value)
        if state.assignment.generation != self._seen_generation:
            self._seen_generation = state.assignment.generation
            self._on_change()

    def _ends(self) -> tuple[int, int]:
        """The group topic's (earliest, latest) offsets. Why one request where the log
        can (KafkaLog.offset_ranges): this runs every POLL_S, and two watermarks
        requests a tick were the most sampled wait of a worker on Kafka."""
        batched = getattr(self.log, "offset_ranges", None)
        if batched is not None:
            return batched(self.topic, [0])[0]
        end = self.log.latest_offset(self.topic, 0)
        return self.log.earliest_offset(self.topic, 0), end

    def _join(self) -> None:
        self.incarnation = uuid.uuid4().hex[:12]
        sent = time.monotonic()
        offsets = self._append(join_record(self.worker_id, self.incarnation, self.url))
        self.joined = offsets[0]
        self._last_heartbeat = sent
        self._read()
        self.lease.extend(sent + self.session_ms / 1000 * LEASE_SHARE)
        _log.info(
            "worker %s joined the group as incarnation %s at offset %d",
            self.worker_id,
            self.incarnation,
            self.joined,
        )

    def _heartbeat(self) -> None:
        assert self.joined is not None
        sent = time.monotonic()
        self._append(
            heartbeat_record(
                self.worker_id, self.incarnation, self.url, self.joined, self.running_generation
            )
        )
        self._last_heartbeat = sent
        self._read()
        me = self.state.members.get(self.worker_id)
        if me is not None and me.incarnation == self.incarnation:
            self.lease.extend(sent + self.session_ms / 1000 * LEASE_SHARE)

    # ------------------------------------------------------------ leadership

    def _silent(self, worker: str) -> bool:
        info = self.state.members[worker]
        return info.last_seen_ms < self.state.log_time_ms - self.session_ms

    def _evict(self, worker: str, why: str) -> None:
        info = self.state.members[worker]
        _log.warning("worker %s: evicting worker %s (%s)", self.worker_id, worker, why)
        self._append(evict_record(worker, info.incarnation, info.last_seen_ms, self.worker_id))

    def _watch_leader(self) -> None:
        leader = self.state.leader()
        if leader is not None and self._silent(leader):
            self._evict(leader, f"leader silent for over {self.session_ms} ms")
            self._read()

    def _lead(self) -> None:
        state = self.state
        evicted = False
        for worker in sorted(state.members):
            if worker == self.worker_id:
                continue
            if self._silent(worker):
                self._evict(worker, f"silent for over {self.session_ms} ms")
                evicted = True
            elif self._stuck(worker):
                self._evict(
                    worker, f"revocation not acknowledged in {self.rebalance_timeout_ms} ms"
                )
                evicted = True
        if evicted:
            self._read()
        configured, config_offset = self._configured()
        reason = state.rebalance_reason(configured)
        if reason is None:
            return
        now = state.log_time_ms
        result = assign(
            state.members_for_assignment(),
            state.assignment,
            configured,
            now_ms=now,
            config=self.assignor,
            departures=state.departures.values(),
        )
        meta = AssignmentMeta(
            based_on=state.assignment.generation,
            leader=self.worker_id,
            computed_at_ms=now,
            config_offset=config_offset,
            members={w: m.incarnation for w, m in sorted(state.members.items())},
            configured=dict(configured),
        )
        self._append(assignment_record(result, meta))
        self._read()
        _log.info(
            "worker %s (leader): generation %d (%s): %s",
            self.worker_id,
            result.generation,
            reason,
            {w: len(t) for w, t in sorted(result.targets.items())},
        )

    def _stuck(self, worker: str) -> bool:
        """Whether `worker` holds a revocation of the current generation for too long."""
        state = self.state
        a = state.assignment
        info = state.members[worker]
        if not a.revoked.get(worker) or state.meta.members.get(worker) != info.incarnation:
            return False
        if state.acked.get(worker) == (info.incarnation, a.generation):
            return False
        return state.log_time_ms - state.meta.computed_at_ms > self.rebalance_timeout_ms

    # --------------------------------------------------------------- views

    def view(self) -> GroupState:
        """A copy of the state for another thread (members and assignment)."""
        with self.lock:
            s = self.state
            return replace(
                s,
                members={w: replace(m) for w, m in s.members.items()},
                evicted=dict(s.evicted),
                departures=dict(s.departures),
                acked=dict(s.acked),
            )
