"""Consumer groups on Kafka: committed offsets through the group coordinator, and
membership through Kafka's own group protocol.

Offsets: `commit` sends an OffsetCommit for the group and waits for the answer;
`fetch` sends an OffsetFetch for the partitions asked (or for every partition of
every topic, since the librdkafka mock does not answer "all partitions" fetches).
A commit goes through the group's live member in this process when there is one:
a real coordinator refuses commits for a group with members unless they carry the
member id and generation, which is also what fences a consumer that lost its
partitions. Otherwise a member-less client commits, as Kafka's "simple consumer"
does (accepted while the group has no live members).

Membership (`KafkaGroupMember`, what `log.Consumer.subscribe` uses): a consumer
subscribed with the group's id; the coordinator assigns partitions (eager protocol:
every member gives up everything before the new assignment, so a partition is never
owned twice). The member never fetches: it pauses what it is given, and the records
are read by offset like any other read. `target()` serves the rebalance callbacks.

A rebalance, as the member runs it (numbered as in the code):
  1. The coordinator starts a rebalance; librdkafka calls the revoke callback on the
     thread that serves the member (the consumer's), still in the old generation.
  2. The callback hands the revoked partitions to the consumer's listener
     (`listen`): a sink task makes its writes durable and commits their offsets
     there. Those commits go out synchronously, with the old generation, which the
     coordinator accepts while it waits for the members to rejoin. Why: the
     partitions' next owner reads from the committed offset; committed after the
     move (as this member did before), the new owner could start from an older one,
     and the sink saw about a hundred records twice per move.
  3. Only then are the partitions given up (unassign) and the member rejoins.
  4. A lost assignment (the session expired, the member was fenced) goes to the
     listener's `on_lost` instead: the generation is gone, nothing can be committed,
     and what was delivered after the last commit is read again (at-least-once).
A revocation served on another thread (a commit for the group from elsewhere in
this process serving the member) reaches no listener: the consumer learns it on its
next heartbeat, and commits then, after the move (at-least-once).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import confluent_kafka

from log.kafka.clients import ClientConfig, operation_error
from log.kafka.errors import KafkaOperationError
from log.records import OffsetAndMetadata, TopicPartition

__all__ = ["GroupOffsets", "KafkaGroupMember"]

_KE = confluent_kafka.KafkaError
#: What a listener is handed: the partitions revoked or lost.
Listener = Callable[[set[TopicPartition]], None]
#: A commit refused because the group is between generations.
_REBALANCING = frozenset({_KE.REBALANCE_IN_PROGRESS, _KE.ILLEGAL_GENERATION})
#: Group-join refusals that never clear up by themselves, with what to change.
_JOIN_REFUSED: dict[int, str] = {
    _KE.INVALID_SESSION_TIMEOUT: (
        " (the consumer's session.timeout.ms must lie within the broker's"
        " group.min.session.timeout.ms and group.max.session.timeout.ms, 6 s to 30 min"
        " by default; a sink task's is consumer.session.timeout.ms in the worker config"
        " or consumer.override.session.timeout.ms in the connector's)"
    ),
    _KE.GROUP_AUTHORIZATION_FAILED: " (the principal may not use this consumer group)",
    _KE.INVALID_GROUP_ID: "",
}


class KafkaGroupMember:
    """One consumer's membership in a group, run by the group coordinator."""

    def __init__(
        self,
        config: ClientConfig,
        group: str,
        member_id: str,
        topics: Iterable[str],
        partition_count: Callable[[str], int],
        on_leave: Callable[[KafkaGroupMember], None],
    ) -> None:
        self.group = group
        self.member_id = member_id
        self.topics = sorted(set(topics))
        self._partition_count = partition_count
        self._on_leave = on_leave
        self._lock = threading.Lock()
        self._assigned: set[TopicPartition] = set()
        self._serving = threading.RLock()
        #: Asynchronous commits in flight, oldest first, each with the offsets it
        #: carries (its result is matched by them: a synchronous commit's result comes
        #: through the same callback, unasked for).
        self._commits: list[tuple[frozenset[tuple[str, int, int]], list[Any]]] = []
        self._on_revoke: Listener | None = None
        self._on_lost: Listener | None = None
        self.listener_thread: int | None = None
        #: Set while a rebalance callback runs: commits then go out synchronously.
        self.in_rebalance = False
        #: Commits refused inside a revoke, sent again with the next assignment.
        self._deferred: list[list] = []
        self.consumer = confluent_kafka.Consumer(
            {
                **config.group_client(group),
                "client.id": f"tributary-{member_id}",
                "partition.assignment.strategy": "roundrobin",
                "on_commit": self._committed,
                **config.member,
            }
        )
        self.consumer.subscribe(
            self.topics, on_assign=self._assign, on_revoke=self._revoke, on_lost=self._lose
        )

    def listen(self, on_revoke: Listener | None, on_lost: Listener | None) -> None:
        """Hand revocations (steps 1-3 of the rebalance in the module docstring) and
        lost assignments (step 4) to these callables, on the calling thread only: the
        one that serves the member. None, None stops it (a consumer leaving)."""
        self._on_revoke, self._on_lost = on_revoke, on_lost
        self.listener_thread = threading.get_ident() if on_revoke or on_lost else None

    def _assign(self, consumer: confluent_kafka.Consumer, parts: list) -> None:
        deferred, self._deferred = self._deferred, []
        for refused in deferred:  # see `_commit_in_rebalance`; its report fills no one's
            self._commits.append((_commit_key(refused), []))
            consumer.commit(offsets=refused, asynchronous=True)
        consumer.assign(parts)
        if parts:
            consumer.pause(parts)  # records are read by offset, never fetched here
        with self._lock:
            self._assigned = {TopicPartition(p.topic, p.partition) for p in parts}

    def _revoke(self, consumer: confluent_kafka.Consumer, parts: list) -> None:
        # Step 1 (librdkafka calls this; an assignment lost comes to `_lose`)
        self._give_up(consumer, parts, self._on_revoke)

    def _lose(self, consumer: confluent_kafka.Consumer, parts: list) -> None:
        # Step 4
        self._give_up(consumer, parts, self._on_lost)

    def _give_up(
        self, consumer: confluent_kafka.Consumer, parts: list, listener: Listener | None
    ) -> None:
        """Steps 2-3: tell the listener (it may commit, synchronously), then unassign
        whatever it did, raised included (the exception then leaves `serve`)."""
        revoked = {TopicPartition(p.topic, p.partition) for p in parts}
        try:
            # Step 2
            if revoked and listener is not None and self.listener_thread == threading.get_ident():
                self.in_rebalance = True
                listener(revoked)
        finally:
            # Step 3
            self.in_rebalance = False
            with self._lock:
                self._assigned = set()
            consumer.unassign()

    def target(self) -> set[TopicPartition]:
        """What the coordinator gives us now (partitions past a topic's registered
        count are left out: Tributary never uses them)."""
        self.serve(0)
        with self._lock:
            assigned = set(self._assigned)
        counts: dict[str, int] = {}
        out = set()
        for tp in assigned:
            if tp.topic not in counts:
                try:
                    counts[tp.topic] = self._partition_count(tp.topic)
                except Exception:
                    counts[tp.topic] = 0
            if tp.partition < counts[tp.topic]:
                out.add(tp)
        return out

    def serve(self, timeout_s: float) -> None:
        """Run pending rebalance callbacks (nothing is fetched: all is paused).

        A JoinGroup the coordinator refuses for a reason that retrying cannot change
        (`_JOIN_REFUSED`) raises KafkaOperationError, naming the setting where there is
        one. Why: librdkafka reports it as an event and retries for ever, so a sink
        task whose `consumer.session.timeout.ms` a real broker refuses (below its
        `group.min.session.timeout.ms`, 6 s by default; the mock takes any) stayed
        RUNNING with no partitions and delivered nothing, without a word."""
        with self._serving:
            for event in self.consumer.consume(100, timeout=timeout_s):
                err = event.error()
                if err is not None and err.code() in _JOIN_REFUSED:
                    reason = err.str() + _JOIN_REFUSED[err.code()]
                    raise KafkaOperationError(
                        f"join group {self.group}", err.name(), reason, retriable=False
                    )

    def commit(self, parts: list, timeout_s: float) -> list | None:
        """Commit as this member, serving the group meanwhile.

        Why not a synchronous commit: librdkafka holds a commit back while the group
        rebalances, and the rebalance waits for this member to run its callbacks, which
        only happens on this thread: a synchronous commit sat there until the
        coordinator gave up on the member (40 s on the mock). Served, the member rejoins
        and the commit goes out with the new generation.
        """
        if self.in_rebalance:
            return self._commit_in_rebalance(parts)
        slot: list = []
        with self._serving:
            self._commits.append((_commit_key(parts), slot))
            self.consumer.commit(offsets=parts, asynchronous=True)
        deadline = time.monotonic() + timeout_s
        while not slot:
            if time.monotonic() > deadline:
                with self._serving:
                    self._commits = [c for c in self._commits if c[1] is not slot]
                raise confluent_kafka.KafkaException(
                    confluent_kafka.KafkaError(confluent_kafka.KafkaError._TIMED_OUT)
                )
            self.serve(0.05)
        err, result = slot
        if err is not None:
            raise confluent_kafka.KafkaException(err)
        return result

    def _commit_in_rebalance(self, parts: list) -> list | None:
        """Rebalance step 2: a callback cannot serve the member (it is serving it), so
        the commit is synchronous; librdkafka sends it with the old generation, which
        Kafka's coordinator accepts until the rebalance completes. librdkafka's mock
        refuses it once a member has sent its JoinGroup (REBALANCE_IN_PROGRESS): the
        commit is then sent again as soon as the new assignment comes (`_assign`), as
        every handed-over commit was before; the next owner may read from the older
        offset meanwhile (at-least-once)."""
        try:
            return self.consumer.commit(offsets=parts, asynchronous=False)
        except confluent_kafka.KafkaException as exc:
            err = exc.args[0] if exc.args else None
            if not isinstance(err, confluent_kafka.KafkaError) or err.code() not in _REBALANCING:
                raise
            self._deferred.append(parts)
            return None

    def _committed(self, err: object, partitions: list) -> None:
        """librdkafka's report of a commit: it fills the oldest asynchronous commit
        that carried these offsets (the oldest of all when the report names none).
        A report matching none is a synchronous commit's (rebalance step 2): its
        caller already has the answer."""
        key = _commit_key(partitions or ())
        with self._serving:
            for i, (carried, slot) in enumerate(self._commits):
                if carried == key or not key:
                    del self._commits[i]
                    slot.extend((err, partitions))
                    return

    def acquire(self, tp: TopicPartition) -> bool:
        with self._lock:
            return tp in self._assigned

    def release(self, tp: TopicPartition) -> None:
        """Nothing to do: the coordinator moves partitions, not the member."""

    def leave(self) -> None:
        self.listen(None, None)  # the close revokes everything: the consumer is done
        try:
            self.consumer.close()  # sends LeaveGroup, so the others rebalance at once
        finally:
            self._on_leave(self)


def _commit_key(parts: Iterable[Any]) -> frozenset[tuple[str, int, int]]:
    """What a commit carried, as its report names it back."""
    return frozenset((p.topic, p.partition, p.offset) for p in parts)


class GroupOffsets:
    """Committed offsets of groups (see the module docstring)."""

    def __init__(self, config: ClientConfig) -> None:
        self._config = config
        self._lock = threading.Lock()
        self._clients: dict[str, confluent_kafka.Consumer] = {}
        self._members: dict[str, list[KafkaGroupMember]] = {}

    def add_member(self, member: KafkaGroupMember) -> None:
        with self._lock:
            self._members.setdefault(member.group, []).append(member)

    def remove_member(self, member: KafkaGroupMember) -> None:
        with self._lock:
            members = self._members.get(member.group, [])
            if member in members:
                members.remove(member)

    def _client(self, group: str, *, memberless: bool = False) -> confluent_kafka.Consumer:
        with self._lock:
            members = self._members.get(group)
            if members and not memberless:
                return members[0].consumer
            client = self._clients.get(group)
            if client is None:
                # Never joins, so its session only bounds how long librdkafka holds a
                # commit while the coordinator is away: the log's timeout, not 45 s.
                session_ms = max(1000, int(self._config.timeout_s * 1000))
                client = confluent_kafka.Consumer(
                    {
                        **self._config.group_client(group),
                        "session.timeout.ms": session_ms,
                        "heartbeat.interval.ms": session_ms // 3,
                    }
                )
                self._clients[group] = client
            return client

    def commit(self, group: str, offsets: Mapping[TopicPartition, OffsetAndMetadata | int]) -> None:
        if not offsets:
            return
        parts = []
        for tp, oam in offsets.items():
            if isinstance(oam, int):
                oam = OffsetAndMetadata(oam)
            if oam.offset < 0:
                raise ValueError(f"cannot commit negative offset {oam.offset} for {tp}")
            part = confluent_kafka.TopicPartition(tp.topic, tp.partition, oam.offset)
            if oam.metadata:
                part = confluent_kafka.TopicPartition(
                    tp.topic, tp.partition, oam.offset, metadata=oam.metadata
                )
            parts.append(part)
        result = self._commit(group, parts)
        for part in result or ():
            if part.error is not None:
                raise operation_error(f"commit offsets of group {group}", part.error)

    def _commit(self, group: str, parts: list) -> list | None:
        """Commit; while the group rebalances, serve the member's callbacks and retry
        (the commit then lands with the member's new generation). Not from inside a
        rebalance callback: that commit is made once, synchronously (see
        `KafkaGroupMember.commit`), and a refusal is the caller's."""
        deadline = time.monotonic() + self._config.timeout_s
        while True:
            member = self._member(group)
            try:
                if member is not None:
                    return member.commit(parts, max(0.1, deadline - time.monotonic()))
                return self._client(group).commit(offsets=parts, asynchronous=False)
            except confluent_kafka.KafkaException as exc:
                err = exc.args[0] if exc.args else None
                rebalancing = isinstance(err, confluent_kafka.KafkaError) and (
                    err.code() in _REBALANCING
                )
                in_callback = member is not None and member.in_rebalance
                if not rebalancing or in_callback or time.monotonic() > deadline:
                    raise operation_error(f"commit offsets of group {group}", exc) from None
            member = self._member(group)
            if member is not None:
                member.serve(0.05)
            else:
                time.sleep(0.05)

    def _member(self, group: str) -> KafkaGroupMember | None:
        """The member to commit through: the one this thread serves when there is one
        (a sink task's own, which may be inside its revoke callback: rebalance step 2),
        else the first. Several tasks of a connector in one process are several
        members of its group."""
        me = threading.get_ident()
        with self._lock:
            members = self._members.get(group)
            if not members:
                return None
            return next((m for m in members if m.listener_thread == me), members[0])

    def fetch(
        self, group: str, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        if not partitions:
            return {}
        asked = [confluent_kafka.TopicPartition(tp.topic, tp.partition) for tp in partitions]
        member = self._member(group)
        client = member.consumer if member is not None else self._client(group)
        try:
            try:
                answer = client.committed(asked, timeout=self._config.timeout_s)
            except RuntimeError:
                # That member's consumer closed as it left the group (another task of the
                # process stopping meanwhile): ask through the group's member-less client.
                answer = self._client(group, memberless=True).committed(
                    asked, timeout=self._config.timeout_s
                )
        except confluent_kafka.KafkaException as exc:
            raise operation_error(f"fetch offsets of group {group}", exc) from None
        out = {}
        for part in answer:
            if part.error is None and part.offset >= 0:
                out[TopicPartition(part.topic, part.partition)] = OffsetAndMetadata(
                    offset=part.offset, metadata=part.metadata or ""
                )
        return out

    def forget(self, group: str) -> None:
        """Drop the member-less client of a deleted group."""
        with self._lock:
            client = self._clients.pop(group, None)
        if client is not None:
            client.close()

    def close(self) -> None:
        with self._lock:
            clients = list(self._clients.values())
            members = [m for ms in self._members.values() for m in ms]
            self._clients.clear()
            self._members.clear()
        for client in clients:
            client.close()
        for member in members:
            member.consumer.close()
