"""Consumer: reads records from assigned or subscribed partitions of a Log.

Like Kafka's consumer: `assign()` takes partitions directly; `subscribe()` joins
the consumer group `group_id` and is given a share of the topics' partitions that
moves as members come and go (`on_assign` / `on_revoke` are told). Positions start
at the group's committed offset, else at `auto_offset_reset` (earliest, latest,
none); a position that fell out of the log (retention) is reset the same way.
A subscribed topic deleted under the consumer is not a move: `poll()` raises
TopicDeletedError (see `_heartbeat`). A log that cannot be reached for now (a Kafka
broker away) raises LogUnavailableError from `poll()` once nothing was read; records
read before the failure are returned first, never dropped.
With `enable_auto_commit`, positions are committed every `auto_commit_interval_ms`
from `poll()`, before partitions are given up, and on `close()`.

Partitions leave at the consumer's heartbeat, or earlier when the backend's member
says so (`GroupMember.listen`): Kafka's coordinator revokes inside a poll, and what
is committed there (auto-commit, or the `on_revoke` callback's own commits) is what
the next owner starts from. A lost assignment (the member's session expired) goes to
`on_lost` (by default `on_revoke`, as Kafka's listener), never with a commit.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from log.api import Log
from log.errors import (
    LogClosedError,
    LogError,
    LogUnavailableError,
    NoOffsetForPartitionError,
    OffsetOutOfRangeError,
    TopicDeletedError,
    UnknownTopicOrPartitionError,
)
from log.records import OffsetAndMetadata, Record, TopicPartition

if TYPE_CHECKING:
    from log.batch import BatchValues

#: A read of one partition: (what it read, how many records, the next position).
_Read = Callable[[TopicPartition, int, int], tuple]

__all__ = ["Consumer", "RebalanceCallback"]

_log = logging.getLogger("log.consumer")
RebalanceCallback = Callable[[set[TopicPartition]], None]
_RESET_POLICIES = ("earliest", "latest", "none")
#: After joining or a move, heartbeat every _SETTLE_HEARTBEAT_S for _SETTLE_S (see
#: `_heartbeat`); a FileLog heartbeat is a directory listing and a few flock calls.
_SETTLE_S = 3.0
_SETTLE_HEARTBEAT_S = 0.1
#: How long an empty poll waits before looking again for another process's appends;
#: a read_committed one held back by an open transaction on the file log, less: its
#: commit (a few ms: one wait on the disk) ends it, and a sink that looked only
#: every 50 ms left an exactly-once pipeline that much behind at each catch-up.
_IDLE_WAIT_S = 0.05
_HELD_WAIT_S = 0.005


class Consumer:
    """Read records from a Log (see the module docstring)."""

    def __init__(
        self,
        log: Log,
        *,
        group_id: str | None = None,
        auto_offset_reset: str = "latest",
        enable_auto_commit: bool = True,
        auto_commit_interval_ms: int = 5000,
        max_poll_records: int = 10_000,
        fetch_max_bytes: int = 4 << 20,
        heartbeat_interval_ms: int = 1000,
        member_id: str | None = None,
        isolation_level: str = "read_uncommitted",
    ) -> None:
        if auto_offset_reset not in _RESET_POLICIES:
            raise ValueError(f"auto_offset_reset must be one of {', '.join(_RESET_POLICIES)}")
        if isolation_level not in ("read_uncommitted", "read_committed"):
            raise ValueError("isolation_level must be read_uncommitted or read_committed")
        self._log = log
        # read_committed returns only committed transactional records (Kafka's
        # default, kept here, is read_uncommitted). Passed on only when not the
        # default: a Log without transactions need not know the keyword.
        self._read_options = (
            {} if isolation_level == "read_uncommitted" else {"isolation_level": isolation_level}
        )
        self.group_id = group_id
        self.auto_offset_reset = auto_offset_reset
        self.enable_auto_commit = enable_auto_commit and group_id is not None
        self.auto_commit_interval_s = auto_commit_interval_ms / 1000
        self.max_poll_records = max_poll_records
        self.fetch_max_bytes = fetch_max_bytes
        self.heartbeat_interval_s = heartbeat_interval_ms / 1000
        self.member_id = member_id or uuid.uuid4().hex
        self._assigned: list[TopicPartition] = []
        self._positions: dict[TopicPartition, int] = {}
        self._committed_positions: dict[TopicPartition, int] = {}
        self._paused: set[TopicPartition] = set()
        self._member = None
        self._on_assign: RebalanceCallback | None = None
        self._on_revoke: RebalanceCallback | None = None
        self._on_lost: RebalanceCallback | None = None
        self._last_heartbeat = 0.0
        self._settle_until = 0.0
        self._last_commit = time.monotonic()
        self._rotate = 0
        self._closed = False

    # -------------------------------------------------------------- assignment

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Consume exactly these partitions (no group rebalancing)."""
        self._leave_group()
        self._assigned = sorted(set(partitions))
        self._positions = {tp: p for tp, p in self._positions.items() if tp in self._assigned}

    def subscribe(
        self,
        topics: Sequence[str],
        *,
        on_assign: RebalanceCallback | None = None,
        on_revoke: RebalanceCallback | None = None,
        on_lost: RebalanceCallback | None = None,
    ) -> None:
        """Join `group_id` and consume a share of these topics' partitions."""
        if self.group_id is None:
            raise ValueError("subscribe() needs a group_id")
        self._leave_group()
        self._on_assign, self._on_revoke = on_assign, on_revoke
        self._on_lost = on_lost or on_revoke
        self._member = self._log.join_group(self.group_id, self.member_id, list(topics))
        self._member.listen(self._revoked_by_group, self._lost_by_group)
        self._last_heartbeat = 0.0
        self._settle_until = time.monotonic() + _SETTLE_S
        self._heartbeat()

    def unsubscribe(self) -> None:
        self._leave_group()
        self._assigned = []

    def assignment(self) -> set[TopicPartition]:
        return set(self._assigned)

    def _heartbeat(self) -> None:
        """Move partitions as the group's membership says (see log.group)."""
        member = self._member
        if member is None:
            return
        now = time.monotonic()
        # With nothing assigned (e.g. subscribed before the topic exists), look again
        # soon: a sink must not sit idle for a whole interval once data appears. Just
        # after joining or a move, look often too: the tasks of a connector join one
        # after another, and the first would otherwise read partitions it is about to
        # hand over for a whole interval (and the next wait that long for them).
        if not self._assigned:
            interval = 0.05
        elif now < self._settle_until:
            interval = min(self.heartbeat_interval_s, _SETTLE_HEARTBEAT_S)
        else:
            interval = self.heartbeat_interval_s
        if now - self._last_heartbeat < interval:
            return
        self._last_heartbeat = now
        target = member.target()  # may revoke through `_revoked_by_group` meanwhile
        revoked = {tp for tp in self._assigned if tp not in target}
        self._give_up(revoked, lost=False)
        gained = {tp for tp in target if tp not in self._assigned and member.acquire(tp)}
        self._assigned = sorted(set(self._assigned) | gained)
        if revoked or gained:
            self._settle_until = now + _SETTLE_S
        if gained and self._on_assign is not None:
            self._on_assign(gained)

    def _revoked_by_group(self, partitions: set[TopicPartition]) -> None:
        """The member's coordinator takes `partitions` now, before they move."""
        self._settle_until = time.monotonic() + _SETTLE_S
        self._give_up(partitions & set(self._assigned), lost=False)

    def _lost_by_group(self, partitions: set[TopicPartition]) -> None:
        self._give_up(partitions & set(self._assigned), lost=True)

    def _give_up(self, revoked: set[TopicPartition], *, lost: bool) -> None:
        """Let `revoked` go: commit them (auto-commit; never when lost), tell the
        callback, release them. They leave `_assigned` first, so a callback that
        serves the group meanwhile cannot hand them over twice."""
        if not revoked or self._member is None:
            return
        # Why: a topic deleted under us leaves the target too, but its partitions
        # did not move to another member: the data is gone. Going on quietly would
        # leave the reader idle forever (and commit positions into nothing).
        gone = self._deleted(revoked)
        if gone is not None:
            raise TopicDeletedError(gone.topic, gone.partition)
        member = self._member
        self._assigned = [tp for tp in self._assigned if tp not in revoked]
        try:
            if self.enable_auto_commit and not lost:
                try:
                    self._commit_positions(revoked)
                except LogError as exc:
                    # As Kafka's consumer: a refused commit on revocation (librdkafka's
                    # mock refuses them while rebalancing) is logged, not raised; the
                    # next owner reads from the older offset: at-least-once.
                    _log.warning("consumer %s: commit on revoke failed: %s", self.member_id, exc)
            callback = self._on_lost if lost else self._on_revoke
            if callback is not None:
                callback(revoked)
        finally:
            for tp in revoked:
                member.release(tp)
                self._positions.pop(tp, None)
                self._paused.discard(tp)

    def _deleted(self, partitions: set[TopicPartition]) -> TopicPartition | None:
        """The first of `partitions` (all assigned, so their topics existed) whose topic
        is gone now."""
        for tp in sorted(partitions):
            try:
                self._log.partition_count(tp.topic)
            except UnknownTopicOrPartitionError:
                return tp
        return None

    def _leave_group(self) -> None:
        if self._member is None:
            return
        owned = set(self._assigned)
        member = self._member
        # Why not stop listening first: the commits below must still go through this
        # member (log.kafka.groups picks the one whose listener runs on this thread).
        # A revocation meanwhile finds nothing assigned: everything is let go below.
        self._assigned = []
        try:
            if self.enable_auto_commit:
                # A deleted topic's positions are not committed (the rest are): that
                # is no reason for leaving the group to fail.
                with contextlib.suppress(TopicDeletedError):
                    self._commit_positions(owned)
            if owned and self._on_revoke is not None:
                self._on_revoke(owned)
        finally:
            # Whatever a callback did, the partitions must be let go, or no other
            # member (nor a restarted one in this process) could ever take them.
            self._member = None
            self._positions.clear()
            member.leave()  # stops its listening too

    # --------------------------------------------------------------- positions

    def _initial_position(self, tp: TopicPartition) -> int:
        if self.group_id is not None:
            committed = self._log.committed_offsets(self.group_id, [tp]).get(tp)
            if committed is not None:
                self._committed_positions[tp] = committed.offset
                return committed.offset
        return self._reset(tp)

    def _reset(self, tp: TopicPartition) -> int:
        if self.auto_offset_reset == "earliest":
            return self._log.earliest_offset(tp.topic, tp.partition)
        if self.auto_offset_reset == "latest":
            return self._end(tp)
        raise NoOffsetForPartitionError(tp.topic, tp.partition)

    def _end(self, tp: TopicPartition) -> int:
        """Where "latest" is: the log end, or for read_committed the last stable
        offset, as Kafka's consumer has it (the log end would skip the records of a
        transaction open at that moment for good)."""
        if self._read_options:
            return self._log.last_stable_offset(tp.topic, tp.partition)
        return self._log.latest_offset(tp.topic, tp.partition)

    def position(self, tp: TopicPartition) -> int:
        pos = self._positions.get(tp)
        if pos is None:
            pos = self._positions[tp] = self._initial_position(tp)
        return pos

    def seek(self, tp: TopicPartition, offset: int) -> None:
        if tp not in self._assigned:
            raise ValueError(f"{tp} is not assigned to this consumer")
        self._positions[tp] = offset

    def seek_to_beginning(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        for tp in partitions if partitions is not None else self._assigned:
            self.seek(tp, self._log.earliest_offset(tp.topic, tp.partition))

    def seek_to_end(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        for tp in partitions if partitions is not None else self._assigned:
            self.seek(tp, self._end(tp))

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        self._paused.update(partitions)

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        self._paused.difference_update(partitions)

    def paused(self) -> set[TopicPartition]:
        return set(self._paused)

    # -------------------------------------------------------------------- poll

    def poll(self, timeout_s: float = 0.0, *, max_records: int | None = None) -> list[Record]:
        """Records from the assigned partitions, waiting up to `timeout_s` for some."""
        chunks = self.poll_chunks(timeout_s, max_records=max_records)
        if len(chunks) == 1:
            return chunks[0][1]
        out: list[Record] = []
        for _, records in chunks:
            out.extend(records)
        return out

    def poll_chunks(
        self, timeout_s: float = 0.0, *, max_records: int | None = None
    ) -> list[tuple[TopicPartition, list[Record]]]:
        """What `poll()` returns, as it was read: one chunk per partition, each in offset
        order. Why: a caller that works a partition at a time (a sink handing Arrow
        batches on) would otherwise regroup the records with a Python step per record."""
        return self._poll(timeout_s, max_records, self._read_records)

    def poll_values(
        self, timeout_s: float = 0.0, *, max_records: int | None = None
    ) -> list[tuple[TopicPartition, list[BatchValues]]]:
        """What `poll_chunks()` returns, each chunk as its batches' values
        (`log.batch.BatchValues`), no Record made: for a sink handed Arrow batches.
        Only for a log that reads them (`values_readable`)."""
        return self._poll(timeout_s, max_records, self._read_values)

    @property
    def values_readable(self) -> bool:
        """Whether the log reads batches' values (`poll_values`): the file log does."""
        return hasattr(self._log, "read_values")

    def _poll(self, timeout_s: float, max_records: int | None, read: _Read) -> list:
        if self._closed:
            raise LogClosedError("consumer")
        limit = self.max_poll_records if max_records is None else max_records
        if limit <= 0:
            return []
        deadline = time.monotonic() + timeout_s
        while True:
            self._heartbeat()
            if (
                self.enable_auto_commit
                and time.monotonic() - self._last_commit >= self.auto_commit_interval_s
            ):
                self.commit()
            seq = self._log.append_sequence()
            chunks = self._fetch(limit, read)
            remaining = deadline - time.monotonic()
            if chunks or remaining <= 0:
                return chunks
            wait = min(remaining, _IDLE_WAIT_S, self.heartbeat_interval_s)
            if wait > _HELD_WAIT_S and self._held_back():
                wait = _HELD_WAIT_S
            self._log.wait_for_append(seq, wait)

    def _held_back(self) -> bool:
        """Whether a read_committed read on the file log (its LSO read from local
        files; a round trip to the broker on Kafka) stands at the last stable offset
        of a partition with records past it: an open transaction holds them."""
        if not self._read_options or not self.values_readable:
            return False
        log = self._log
        for tp in self._assigned:
            if tp in self._paused or tp not in self._positions:
                continue
            try:
                stable = log.last_stable_offset(tp.topic, tp.partition)
                end = log.latest_offset(tp.topic, tp.partition)
            except LogError:
                continue  # the next poll's read meets it and says what it is
            if self._positions[tp] >= stable and end > stable:
                return True
        return False

    def _read_records(self, tp: TopicPartition, position: int, room: int) -> tuple:
        """(records, how many, the next position or None: no records, none skipped)."""
        records = self._log.read(
            tp.topic,
            tp.partition,
            position,
            max_records=room,
            max_bytes=self.fetch_max_bytes,
            **self._read_options,
        )
        # A Fetched names where control or aborted batches ended the read.
        after = getattr(records, "next_offset", records[-1].offset + 1 if records else None)
        return records, len(records), after

    def _read_values(self, tp: TopicPartition, position: int, room: int) -> tuple:
        got, after = self._log.read_values(  # type: ignore[attr-defined]
            tp.topic,
            tp.partition,
            position,
            max_records=room,
            max_bytes=self.fetch_max_bytes,
            **self._read_options,
        )
        return got, sum(v.count for v in got), after if after != position else None

    def _fetch(self, limit: int, read: _Read) -> list:
        active = [tp for tp in self._assigned if tp not in self._paused]
        if not active:
            return []
        self._rotate = (self._rotate + 1) % len(active)
        out: list = []
        room = limit
        for tp in active[self._rotate :] + active[: self._rotate]:
            if room <= 0:
                break
            try:
                got, count, after = read(tp, self.position(tp), room)
            except OffsetOutOfRangeError:
                self._positions[tp] = self._reset(tp)
                continue
            except LogUnavailableError:
                # Why: the positions of the partitions read before moved on; dropping
                # their records with the error would skip them. The next poll meets
                # the outage again, with nothing in hand.
                if out:
                    break
                raise
            if count:
                out.append((tp, got))
                room -= count
            if after is not None:
                self._positions[tp] = after
        return out

    # ------------------------------------------------------------------ commit

    def commit(self, offsets: dict[TopicPartition, int | OffsetAndMetadata] | None = None) -> None:
        """Commit `offsets`, or the current positions of every assigned partition."""
        if self.group_id is None:
            raise ValueError("commit() needs a group_id")
        if offsets is None:
            self._commit_positions(set(self._assigned))
            return
        self._log.commit_offsets(self.group_id, offsets)
        for tp, value in offsets.items():
            self._committed_positions[tp] = value if isinstance(value, int) else value.offset
        self._last_commit = time.monotonic()

    def _commit_positions(self, partitions: set[TopicPartition]) -> None:
        changed = {
            tp: self._positions[tp]
            for tp in partitions
            if tp in self._positions and self._committed_positions.get(tp) != self._positions[tp]
        }
        self._last_commit = time.monotonic()
        if changed and self.group_id is not None:
            self._log.commit_offsets(self.group_id, changed)
            self._committed_positions.update(changed)

    def committed(
        self, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        if self.group_id is None:
            raise ValueError("committed() needs a group_id")
        return self._log.committed_offsets(self.group_id, partitions)

    def close(self) -> None:
        """Commit (with auto-commit) and leave the group."""
        if self._closed:
            return
        try:
            if self._member is not None:
                self._leave_group()
            elif self.enable_auto_commit:
                self._commit_positions(set(self._assigned))
        finally:
            self._closed = True

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
