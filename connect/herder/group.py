"""The group topic of a distributed cluster: its records and the state they replay to.

`docs/distributed.md` is the protocol; this module is its data half. `GroupState`
applies group records in log order and is the same in every worker that has read the
same prefix, so members, the leader, the generation, evictions and acknowledgements are
agreed without any coordinator: the log's order decides every race.

Keys, chosen so that compaction keeps exactly the current state:

| key            | value                                                               |
| worker-<id>    | {"type": join|heartbeat|leave, "incarnation", "url", "joined", ...} |
| evict-<id>     | {"incarnation", "last_heartbeat_ms", "by"}                          |
| assignment     | one generation: `assignment_to_json` plus its meta                  |
| revoked-<id>   | {"generation", "incarnation"}: what that generation revoked stopped |

Times are record timestamps (log time), never a worker's clock, so every replaying
worker computes the same deadlines.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from connect.herder.membership import (
    Assignment,
    Backoff,
    Departure,
    LostWork,
    Member,
    Work,
)

__all__ = [
    "AssignmentMeta",
    "GroupState",
    "MemberInfo",
    "assignment_from_json",
    "assignment_record",
    "assignment_to_json",
    "evict_record",
    "heartbeat_record",
    "join_record",
    "leave_record",
    "revoked_record",
]


# ------------------------------------------------------------------ encoding


def _dump(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def _work_to_json(work: Work) -> dict[str, Any]:
    return {
        "connectors": sorted(work.connectors),
        "tasks": [[t.connector, t.task] for t in sorted(work.tasks)],
    }


def _work_from_json(data: Mapping[str, Any] | None) -> Work:
    data = data or {}
    return Work.of(data.get("connectors", ()), [(c, int(n)) for c, n in data.get("tasks", ())])


def _works(data: Mapping[str, Any] | None) -> dict[str, Work]:
    return {w: _work_from_json(v) for w, v in (data or {}).items()}


def assignment_to_json(a: Assignment) -> dict[str, Any]:
    """An `Assignment` as JSON (the group topic's `assignment` value, minus its meta)."""
    return {
        "generation": a.generation,
        "targets": {w: _work_to_json(v) for w, v in sorted(a.targets.items())},
        "assigned": {w: _work_to_json(v) for w, v in sorted(a.assigned.items())},
        "revoked": {w: _work_to_json(v) for w, v in sorted(a.revoked.items())},
        "lost": [
            {
                "worker": e.worker_id,
                "work": _work_to_json(e.work),
                "lost_at_ms": e.lost_at_ms,
                "deadline_ms": e.deadline_ms,
            }
            for e in a.lost
        ],
        "unassigned": _work_to_json(a.unassigned),
        "backoff": {"streak": a.backoff.streak, "last_revoking_ms": a.backoff.last_revoking_ms},
        "delay_ms": a.delay_ms,
    }


def assignment_from_json(data: Mapping[str, Any]) -> Assignment:
    backoff = data.get("backoff") or {}
    return Assignment(
        generation=int(data.get("generation", 0)),
        targets=_works(data.get("targets")),
        assigned=_works(data.get("assigned")),
        revoked=_works(data.get("revoked")),
        lost=tuple(
            LostWork(
                str(e["worker"]),
                _work_from_json(e.get("work")),
                int(e["lost_at_ms"]),
                int(e["deadline_ms"]),
            )
            for e in data.get("lost", ())
        ),
        unassigned=_work_from_json(data.get("unassigned")),
        backoff=Backoff(int(backoff.get("streak", 0)), int(backoff.get("last_revoking_ms", 0))),
        delay_ms=None if data.get("delay_ms") is None else int(data["delay_ms"]),
    )


Record = tuple[bytes, bytes]


def join_record(worker: str, incarnation: str, url: str) -> Record:
    return f"worker-{worker}".encode(), _dump(
        {"type": "join", "incarnation": incarnation, "url": url}
    )


def heartbeat_record(
    worker: str, incarnation: str, url: str, joined: int, generation: int
) -> Record:
    """Carries `url` and `joined` so that compaction, which drops the JOIN, loses
    neither the worker's address nor the join order (the leader is the earliest)."""
    return f"worker-{worker}".encode(), _dump(
        {
            "type": "heartbeat",
            "incarnation": incarnation,
            "url": url,
            "joined": joined,
            "generation": generation,
        }
    )


def leave_record(worker: str, incarnation: str, *, expect_return: bool) -> Record:
    return f"worker-{worker}".encode(), _dump(
        {"type": "leave", "incarnation": incarnation, "expect_return": expect_return}
    )


def evict_record(worker: str, incarnation: str, last_heartbeat_ms: int, by: str) -> Record:
    return f"evict-{worker}".encode(), _dump(
        {"incarnation": incarnation, "last_heartbeat_ms": last_heartbeat_ms, "by": by}
    )


def revoked_record(worker: str, incarnation: str, generation: int) -> Record:
    return f"revoked-{worker}".encode(), _dump(
        {"incarnation": incarnation, "generation": generation}
    )


@dataclass(frozen=True, slots=True)
class AssignmentMeta:
    """What an assignment was computed from, so that readers can tell what changed since.

    `members` maps each member of the generation to its incarnation: a worker that
    restarted (same id, new incarnation) is a membership change, and it owns nothing
    of what its previous life ran. `configured` is connector → task count at
    `config_offset` of the config topic.
    """

    based_on: int = 0
    leader: str = ""
    computed_at_ms: int = 0
    config_offset: int = 0
    members: Mapping[str, str] = field(default_factory=dict)
    configured: Mapping[str, int] = field(default_factory=dict)
    offset: int = -1  # where the record is in the group topic


def assignment_record(a: Assignment, meta: AssignmentMeta) -> Record:
    value = assignment_to_json(a)
    value.update(
        based_on=meta.based_on,
        leader=meta.leader,
        computed_at_ms=meta.computed_at_ms,
        config_offset=meta.config_offset,
        members=dict(meta.members),
        configured=dict(meta.configured),
    )
    return b"assignment", _dump(value)


# ------------------------------------------------------------------ replay


@dataclass(slots=True)
class MemberInfo:
    incarnation: str
    url: str
    joined: int  # offset of its JOIN: the earliest live joiner leads
    last_seen_ms: int
    generation: int = 0  # the generation it last said it runs


@dataclass
class GroupState:
    """The group as of the last record applied (see the module docstring)."""

    position: int = 0  # the next offset to read
    log_time_ms: int = 0
    members: dict[str, MemberInfo] = field(default_factory=dict)
    evicted: dict[str, str] = field(default_factory=dict)  # worker → evicted incarnation
    departures: dict[str, Departure] = field(default_factory=dict)
    assignment: Assignment = field(default_factory=Assignment)
    meta: AssignmentMeta = field(default_factory=AssignmentMeta)
    acked: dict[str, tuple[str, int]] = field(default_factory=dict)  # → (incarnation, gen)

    def apply(self, offset: int, timestamp: int, key: bytes | None, value: bytes | None) -> None:
        """Apply one record of the group topic (records must come in offset order)."""
        self.position = offset + 1
        self.log_time_ms = max(self.log_time_ms, timestamp)
        if key is None or value is None:
            return
        try:
            text = key.decode()
            data = json.loads(value)
        except (UnicodeDecodeError, ValueError):
            return  # not ours: ignore, as a reader of a shared topic must
        if not isinstance(data, dict):
            return
        if text.startswith("worker-"):
            self._apply_worker(text[len("worker-") :], offset, timestamp, data)
        elif text.startswith("evict-"):
            self._apply_evict(text[len("evict-") :], data)
        elif text.startswith("revoked-"):
            worker = text[len("revoked-") :]
            self.acked[worker] = (str(data.get("incarnation")), int(data.get("generation", 0)))
        elif text == "assignment":
            self._apply_assignment(offset, data)

    def _apply_worker(self, worker: str, offset: int, ts: int, data: dict[str, Any]) -> None:
        kind = data.get("type")
        incarnation = str(data.get("incarnation", ""))
        if self.evicted.get(worker) == incarnation:
            return  # Why: a stalled process woke up; it must rejoin as a new incarnation
        current = self.members.get(worker)
        if kind == "join":
            self.members[worker] = MemberInfo(incarnation, str(data.get("url", "")), offset, ts)
            self.departures.pop(worker, None)
        elif kind == "heartbeat":
            if current is not None and current.incarnation == incarnation:
                current.last_seen_ms = ts
                current.generation = int(data.get("generation", 0))
            else:
                # Why: compaction dropped its JOIN (the heartbeat carries what it said),
                # or it replaced an older incarnation that never left.
                self.members[worker] = MemberInfo(
                    incarnation,
                    str(data.get("url", "")),
                    int(data.get("joined", offset)),
                    ts,
                    int(data.get("generation", 0)),
                )
                self.departures.pop(worker, None)
        elif kind == "leave" and current is not None and current.incarnation == incarnation:
            del self.members[worker]
            self.departures[worker] = Departure(
                worker, ts, expect_return=bool(data.get("expect_return", True))
            )

    def _apply_evict(self, worker: str, data: dict[str, Any]) -> None:
        incarnation = str(data.get("incarnation", ""))
        self.evicted[worker] = incarnation
        current = self.members.get(worker)
        if current is not None and current.incarnation == incarnation:
            del self.members[worker]
            self.departures[worker] = Departure(
                worker, int(data.get("last_heartbeat_ms", self.log_time_ms))
            )

    def _apply_assignment(self, offset: int, data: dict[str, Any]) -> None:
        based_on = int(data.get("based_on", -1))
        if based_on != self.assignment.generation:
            return  # Why: a second leader raced; only the first one based on g counts
        self.assignment = assignment_from_json(data)
        self.meta = AssignmentMeta(
            based_on=based_on,
            leader=str(data.get("leader", "")),
            computed_at_ms=int(data.get("computed_at_ms", 0)),
            config_offset=int(data.get("config_offset", 0)),
            members={str(k): str(v) for k, v in (data.get("members") or {}).items()},
            configured={str(k): int(v) for k, v in (data.get("configured") or {}).items()},
            offset=offset,
        )

    # ------------------------------------------------------------ derived views

    def leader(self) -> str | None:
        """The live member with the earliest join; everyone computes the same."""
        if not self.members:
            return None
        return min(self.members.items(), key=lambda kv: (kv[1].joined, kv[0]))[0]

    def owned(self, worker: str) -> Work:
        """What `worker` may still be running, as far as the log says.

        The current generation's target plus whatever it revoked and the worker has not
        acknowledged; nothing for an incarnation the assignment was not computed for (a
        restarted process runs nothing of its previous life).
        """
        info = self.members.get(worker)
        if info is None or self.meta.members.get(worker) != info.incarnation:
            return Work()
        a = self.assignment
        target = a.targets.get(worker, Work())
        revoked = a.revoked.get(worker, Work())
        if self.acked.get(worker) == (info.incarnation, a.generation):
            return target
        return target | revoked

    def members_for_assignment(self) -> list[Member]:
        return [Member(w, self.owned(w)) for w in sorted(self.members)]

    def pending_revocations(self) -> bool:
        """Whether the current generation revoked work that a live member still holds."""
        a = self.assignment
        for worker, work in a.revoked.items():
            info = self.members.get(worker)
            if not work or info is None or self.meta.members.get(worker) != info.incarnation:
                continue
            if self.acked.get(worker) != (info.incarnation, a.generation):
                return True
        return False

    def rebalance_reason(self, configured: Mapping[str, int]) -> str | None:
        """Why the leader should compute the next generation now, or None.

        Compares state, not events, so a new leader that replays the topic reaches the
        same decision as the old one would have.
        """
        current = {w: m.incarnation for w, m in self.members.items()}
        if current != dict(self.meta.members):
            return "members changed"
        if dict(configured) != dict(self.meta.configured):
            return "connectors or task counts changed"
        a = self.assignment
        if a.revoked and not self.pending_revocations():
            return "revocations acknowledged"
        if a.delay_ms is not None and self.log_time_ms >= self.meta.computed_at_ms + a.delay_ms:
            return "scheduled rebalance"
        return None
