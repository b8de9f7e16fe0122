"""Consumer-group membership on one machine, with locked files as the only coordinator.

A group lives in `<log.dir>/.groups/<sha256(group)[:32]>/`:

    member-<id>.json   a live consumer's subscription; the consumer holds a flock
                       on it for as long as it lives (the kernel drops the lock
                       when the process dies, so a crashed member simply vanishes)
    part-<topic>-<n>.lock   flock'ed by the member that currently consumes the partition

Protocol, run by every member on each heartbeat (numbered as in the code):
  1. List the live members: a member file that can be locked has no owner; it is
     removed.
  2. Compute the target assignment — a pure function of (sorted members, their
     subscriptions, partition counts): each topic's partitions dealt round-robin
     over the members subscribed to it. Every member computes the same answer.
  3. Release what the target no longer gives us (the consumer commits first), and
     try to lock what it gives us; a partition whose old owner has not released
     it yet is simply tried again on the next heartbeat. A partition is therefore
     never consumed by two members at once, and moves only when it must.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Protocol

from log.records import TopicPartition

__all__ = ["FileGroupMember", "GroupMember", "assign_round_robin"]


class GroupMember(Protocol):
    """What a consumer needs from its backend's group membership."""

    def target(self) -> set[TopicPartition]: ...

    def acquire(self, tp: TopicPartition) -> bool: ...

    def release(self, tp: TopicPartition) -> None: ...

    def leave(self) -> None: ...

    def listen(
        self,
        on_revoke: Callable[[set[TopicPartition]], None] | None,
        on_lost: Callable[[set[TopicPartition]], None] | None,
    ) -> None:
        """Where a backend that takes partitions away by itself (Kafka's coordinator)
        says so before they move; None, None stops it."""


def assign_round_robin(
    members: Mapping[str, Iterable[str]], partition_counts: Mapping[str, int]
) -> dict[str, set[TopicPartition]]:
    """Deal each topic's partitions over the members subscribed to it, in sorted
    member order; deterministic for the same inputs."""
    out: dict[str, set[TopicPartition]] = {m: set() for m in members}
    topics = sorted({t for subs in members.values() for t in subs})
    for topic in topics:
        subscribed = sorted(m for m, subs in members.items() if topic in subs)
        count = partition_counts.get(topic, 0)
        for p in range(count):
            # Start each topic at a different member so single-partition topics spread.
            owner = subscribed[(p + topics.index(topic)) % len(subscribed)]
            out[owner].add(TopicPartition(topic, p))
    return out


def _try_flock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EWOULDBLOCK):
            return False
        raise


class FileGroupMember:
    """One consumer's membership in a group (see the module docstring)."""

    def __init__(
        self,
        log_dir: Path,
        group: str,
        member_id: str,
        topics: Iterable[str],
        partition_count: Callable[[str], int],
    ) -> None:
        digest = hashlib.sha256(group.encode()).hexdigest()[:32]
        self.directory = log_dir / ".groups" / digest
        self.directory.mkdir(parents=True, exist_ok=True)
        self.group = group
        self.member_id = member_id
        self.topics = sorted(set(topics))
        self._partition_count = partition_count
        self._owned: dict[TopicPartition, int] = {}
        self._path = self.directory / f"member-{member_id}.json"
        # Lock before the file becomes visible, so no one ever sees it unowned.
        tmp = self._path.with_name(self._path.name + ".tmp")
        self._fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        if not _try_flock(self._fd):
            os.close(self._fd)
            raise RuntimeError(f"member {member_id} is joining group {group} twice")
        os.write(
            self._fd,
            json.dumps({"group": group, "member": member_id, "topics": self.topics}).encode(),
        )
        os.replace(tmp, self._path)

    def listen(
        self,
        on_revoke: Callable[[set[TopicPartition]], None] | None,
        on_lost: Callable[[set[TopicPartition]], None] | None,
    ) -> None:
        """Nothing to hook: a partition moves only once its consumer released it
        (step 3), so its commit already comes before the move."""

    def members(self) -> dict[str, list[str]]:
        """Step 1: the live members and their subscriptions."""
        live: dict[str, list[str]] = {self.member_id: self.topics}
        for name in os.listdir(self.directory):
            if not (name.startswith("member-") and name.endswith(".json")):
                continue
            member = name[len("member-") : -len(".json")]
            if member == self.member_id:
                continue
            path = self.directory / name
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                continue
            try:
                if _try_flock(fd):  # nobody holds it: a dead member
                    path.unlink(missing_ok=True)
                    continue
                live[member] = list(json.loads(os.pread(fd, 1 << 20, 0)).get("topics", []))
            except (ValueError, OSError):
                continue
            finally:
                os.close(fd)
        return live

    def target(self) -> set[TopicPartition]:
        """Step 2: what this member should own now."""
        members = self.members()
        topics = {t for subs in members.values() for t in subs}
        counts = {}
        for topic in topics:
            try:
                counts[topic] = self._partition_count(topic)
            except Exception:
                counts[topic] = 0
        return assign_round_robin(members, counts)[self.member_id]

    @property
    def owned(self) -> set[TopicPartition]:
        return set(self._owned)

    def acquire(self, tp: TopicPartition) -> bool:
        """Step 3: lock a partition for consuming; False while another member has it."""
        if tp in self._owned:
            return True
        path = self.directory / f"part-{tp.topic}-{tp.partition}.lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        if _try_flock(fd):
            self._owned[tp] = fd
            return True
        os.close(fd)
        return False

    def release(self, tp: TopicPartition) -> None:
        fd = self._owned.pop(tp, None)
        if fd is not None:
            os.close(fd)  # closing drops the flock

    def leave(self) -> None:
        for tp in list(self._owned):
            self.release(tp)
        if self._fd >= 0:
            self._path.unlink(missing_ok=True)
            os.close(self._fd)
            self._fd = -1
