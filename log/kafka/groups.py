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
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence

import confluent_kafka

from log.kafka.clients import ClientConfig, operation_error
from log.kafka.errors import KafkaOperationError
from log.records import OffsetAndMetadata, TopicPartition

__all__ = ["GroupOffsets", "KafkaGroupMember"]

_KE = confluent_kafka.KafkaError
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
        #: Asynchronous commits in flight, oldest first: librdkafka reports them in order.
        self._commits: list[list] = []
        self.consumer = confluent_kafka.Consumer(
            {
                **config.group_client(group),
                "client.id": f"tributary-{member_id}",
                "partition.assignment.strategy": "roundrobin",
                "on_commit": self._committed,
                **config.member,
            }
        )
        self.consumer.subscribe(self.topics, on_assign=self._assign, on_revoke=self._revoke)

    def _assign(self, consumer: confluent_kafka.Consumer, parts: list) -> None:
        consumer.assign(parts)
        if parts:
            consumer.pause(parts)  # records are read by offset, never fetched here
        with self._lock:
            self._assigned = {TopicPartition(p.topic, p.partition) for p in parts}

    def _revoke(self, consumer: confluent_kafka.Consumer, parts: list) -> None:
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
        slot: list = []
        with self._serving:
            self._commits.append(slot)
            self.consumer.commit(offsets=parts, asynchronous=True)
        deadline = time.monotonic() + timeout_s
        while not slot:
            if time.monotonic() > deadline:
                with self._serving:
                    if slot in self._commits:
                        self._commits.remove(slot)
                raise confluent_kafka.KafkaException(
                    confluent_kafka.KafkaError(confluent_kafka.KafkaError._TIMED_OUT)
                )
            self.serve(0.05)
        err, result = slot
        if err is not None:
            raise confluent_kafka.KafkaException(err)
        return result

    def _committed(self, err: object, partitions: list) -> None:
        with self._serving:
            if self._commits:
                self._commits.pop(0).extend((err, partitions))

    def acquire(self, tp: TopicPartition) -> bool:
        with self._lock:
            return tp in self._assigned

    def release(self, tp: TopicPartition) -> None:
        """Nothing to do: the coordinator moves partitions, not the member."""

    def leave(self) -> None:
        try:
            self.consumer.close()  # sends LeaveGroup, so the others rebalance at once
        finally:
            self._on_leave(self)


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

    def _client(self, group: str) -> confluent_kafka.Consumer:
        with self._lock:
            members = self._members.get(group)
            if members:
                return members[0].consumer
            client = self._clients.get(group)
            if client is None:
                client = confluent_kafka.Consumer(self._config.group_client(group))
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
        """Commit; while the group rebalances, serve the member's callbacks and retry.
        The runtime commits revoked partitions right after the coordinator took them
        (their last positions): such a commit lands once the member has rejoined. The
        new owner may have read from the older offset meanwhile: at-least-once."""
        deadline = time.monotonic() + self._config.timeout_s
        while True:
            member = self._member(group)
            try:
                if member is not None:
                    return member.commit(parts, max(0.1, deadline - time.monotonic()))
                return self._client(group).commit(offsets=parts, asynchronous=False)
            except confluent_kafka.KafkaException as exc:
                err = exc.args[0] if exc.args else None
                rebalancing = isinstance(err, confluent_kafka.KafkaError) and err.code() in (
                    confluent_kafka.KafkaError.REBALANCE_IN_PROGRESS,
                    confluent_kafka.KafkaError.ILLEGAL_GENERATION,
                )
                if not rebalancing or time.monotonic() > deadline:
                    raise operation_error(f"commit offsets of group {group}", exc) from None
            member = self._member(group)
            if member is not None:
                member.serve(0.05)
            else:
                time.sleep(0.05)

    def _member(self, group: str) -> KafkaGroupMember | None:
        with self._lock:
            members = self._members.get(group)
            return members[0] if members else None

    def fetch(
        self, group: str, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        if not partitions:
            return {}
        asked = [confluent_kafka.TopicPartition(tp.topic, tp.partition) for tp in partitions]
        try:
            answer = self._client(group).committed(asked, timeout=self._config.timeout_s)
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
