"""Reads by offset: one assigned consumer per partition, no group, no commits.

A `PartitionReader` owns one confluent-kafka Consumer assigned to one partition. It
remembers where its last read stopped, so sequential reads (the common case: a
consumer or a table catching up) continue the fetch stream librdkafka already
prefetched; any other offset is range-checked against the watermarks and seeked to.

Read protocol (numbered as in `PartitionReader.read`):
  1. Ask the leader for the partition's watermarks: reading at the log end returns
     nothing, reading outside [log start, log end] is OffsetOutOfRangeError, as in
     the `Log` interface.
  2. If the offset is not where the previous read stopped, or nothing is buffered,
     re-assign at it (records buffered from the old position are dropped).
  3. Take records until `max_records`/`max_bytes`, the high watermark seen in step 1,
     or the end-of-partition event; wait for the first one at most `timeout_s` (it is
     there: step 1 saw it), never for more.

Isolation: a reader reads at one level (`isolation.level`), read_uncommitted or
read_committed; at read_committed the watermark of step 1 is the last stable offset
(the broker answers ListOffsets at the consumer's level). Control records never
reach the caller; when they (or aborted records, at read_committed) end a read, the
result is a `Fetched` naming the consumer's position past them, where the next read
starts, so a caught-up consumer's position is the end and not a marker before it. At
read_uncommitted only markers are skipped, one per transaction a partition takes part
in: a jump of more than one offset is believed only when a fetch from the same place
makes it again (`_past_skipped`); until then the next read fetches from there anew.

`offset_ranges` asks the (log start, log end) of many partitions of a topic at once,
with the admin client's ListOffsets: one request for the earliest offsets and one for
the latest, sent together, instead of a consumer and a watermarks request per partition.
Why: a worker's start replays its internal tables, and the offsets topic's 25
partitions made 25 consumers and 50 requests (about 3 s of a 5 s start on a real
broker). A partition the batch could not answer (a leader moving, a topic the admin
client's metadata does not show yet) is asked through its reader, with that path's
retries; a cluster without the admin API (librdkafka's mock) always goes that way.

`ReaderPool` keeps the readers of recently read partitions (least recently used
closed first): each consumer costs librdkafka threads and a connection per broker.
Each reader has its own lock; different partitions are read in parallel.

Closing, without waiting for a read in flight (which during an outage waits the
request timeout, 10 s by default, and held every worker's stop that long):
  1. The pool (its `close`, an eviction, `forget`) retires a reader: marks it, and
     closes it at once if no one holds it.
  2. A holder that lets go of a retired reader closes it then. A read in flight when
     the pool closes gives up with LogClosedError at its next try (the watermarks are
     asked in tries of at most `_TRY_S`, the fetch polls every 50 ms); one an eviction
     retired goes on.
  3. A caller that gets hold of a retired reader never uses it: `ReaderPool.use` asks
     the pool again, which, once closed, raises LogClosedError.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator, Sequence
from concurrent import futures

import confluent_kafka
from confluent_kafka import IsolationLevel
from confluent_kafka.admin import AdminClient, OffsetSpec

from log.errors import LogClosedError, OffsetOutOfRangeError
from log.kafka.clients import UNAVAILABLE, ClientConfig, operation_error
from log.kafka.errors import KafkaUnavailableError
from log.records import Fetched, Record

_log = logging.getLogger("log.kafka")

__all__ = ["PartitionReader", "ReaderPool", "offset_ranges"]

_KE = confluent_kafka.KafkaError
#: Answers that mean "leadership is moving, or the broker is away for a moment: ask
#: again shortly". `_UNKNOWN_PARTITION` is the client's cache: a topic created a moment
#: ago, or partitions left without a leader while a broker shuts down.
_LEADERSHIP = frozenset(
    {
        _KE.NOT_LEADER_FOR_PARTITION,
        _KE.LEADER_NOT_AVAILABLE,
        _KE._UNKNOWN_PARTITION,
        _KE._TRANSPORT,
        _KE._ALL_BROKERS_DOWN,
        _KE._TIMED_OUT,
    }
)

_EOF = confluent_kafka.KafkaError._PARTITION_EOF
_RESET = confluent_kafka.KafkaError._AUTO_OFFSET_RESET
#: Answers to a ListOffsets round that mean no broker answered: asking each partition
#: again (`offset_ranges`' fallback) would wait the request timeout once per partition.
_AWAY = frozenset(
    {
        _KE._TIMED_OUT,
        _KE._TRANSPORT,
        _KE._ALL_BROKERS_DOWN,
        _KE._RESOLVE,
        _KE.REQUEST_TIMED_OUT,
        _KE.NETWORK_EXCEPTION,
    }
)

#: The longest one watermarks request waits (closing step 2): a broker that is away
#: answers none, and librdkafka's wait cannot be interrupted. A try that times out is
#: made again (the client keeps its connections and metadata), up to the timeout.
_TRY_S = 1.0
#: How long `offset_ranges` asks again, in rounds `_ROUND_PAUSE_S` apart, for the
#: partitions of a new topic whose leaders were not ready for the round before.
_SETTLE_S = 2.0
_ROUND_PAUSE_S = 0.05


class PartitionReader:
    """Reads of one topic-partition (see the module docstring)."""

    def __init__(
        self,
        config: ClientConfig,
        topic: str,
        partition: int,
        *,
        isolation_level: str = "read_uncommitted",
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.lock = threading.Lock()
        self.closed = False
        #: Set by the pool: closed as soon as no one holds it (module docstring).
        self.retired = False
        #: Set when the pool closes: a read in flight gives up (closing step 2).
        self.aborted = False
        self._timeout_s = config.timeout_s
        self._consumer = confluent_kafka.Consumer(
            {**config.reader(), "isolation.level": isolation_level}
        )
        self._committed_only = isolation_level == "read_committed"
        #: A jump `_past_skipped` doubted once: (from, to).
        self._doubted: tuple[int, int] | None = None
        self._next: int | None = None  # offset the next read continues the buffer at
        #: Offset past the last record taken from the consumer (the stream's position,
        #: past the buffer): where `_fill` stands against the high watermark.
        self._fetched: int | None = None
        self._buffer: deque[Record] = deque()

    def watermarks(self) -> tuple[int, int]:
        """The partition's (log start, log end), asked of its leader.

        Leadership changes answer for a moment with a retriable error (a topic just
        created has no leader yet; a restarting broker moves its leaders away), which
        is asked again until the timeout. Why: on a real broker a worker that created
        its internal topics and read them at once failed its start with
        NOT_LEADER_FOR_PARTITION, and a sink task failed with _UNKNOWN_PARTITION the
        moment the broker began a clean shutdown."""
        tp = confluent_kafka.TopicPartition(self.topic, self.partition)
        deadline = time.monotonic() + self._timeout_s
        while True:
            if self.aborted:  # closing step 2
                raise LogClosedError()
            wait_s = min(_TRY_S, deadline - time.monotonic())
            try:
                return self._consumer.get_watermark_offsets(
                    tp, timeout=max(0.1, wait_s), cached=False
                )
            except confluent_kafka.KafkaException as exc:
                err = exc.args[0] if exc.args else None
                again = isinstance(err, confluent_kafka.KafkaError) and err.code() in _LEADERSHIP
                if not again or time.monotonic() > deadline:
                    # Past the timeout these mean "the cluster cannot be reached for
                    # now" (KafkaUnavailableError): a sink task backs off and polls again.
                    raise operation_error(
                        f"watermarks of {self.topic}-{self.partition}",
                        exc,
                        unavailable=UNAVAILABLE | _LEADERSHIP,
                    ) from None
                if err.code() == _KE._UNKNOWN_PARTITION:
                    # The cache is refreshed only every few minutes unless asked.
                    with contextlib.suppress(confluent_kafka.KafkaException):
                        self._consumer.list_topics(self.topic, timeout=1.0)
            time.sleep(0.1)

    def read(self, offset: int, max_records: int | None, max_bytes: int) -> list[Record]:
        # Step 1
        low, high = self.watermarks()
        if not low <= offset <= high:
            raise OffsetOutOfRangeError(self.topic, self.partition, offset, low, high)
        limit = max_records if max_records is not None else 1 << 30
        if offset == high or limit <= 0:
            return []
        # Step 2 (also with nothing buffered: after an end-of-partition event librdkafka
        # may wait seconds before fetching again, a fresh assignment fetches at once)
        if offset != self._next or not self._buffer:
            self._buffer.clear()
            self._consumer.assign(
                [confluent_kafka.TopicPartition(self.topic, self.partition, offset)]
            )
            self._next = self._fetched = offset
        # Step 3
        out: list[Record] = []
        size = 0
        deadline = time.monotonic() + self._timeout_s
        while len(out) < limit and (not out or size < max_bytes):
            if not self._buffer and not self._fill(high, deadline):
                break
            record = self._buffer[0]
            if record.offset < offset:  # compaction/markers: never hand out older ones
                self._buffer.popleft()
                continue
            record_size = len(record.value or b"") + len(record.key or b"")
            if out and size + record_size > max_bytes:
                break
            out.append(self._buffer.popleft())
            size += record_size
        if out:
            self._next = out[-1].offset + 1 if not self._buffer else self._buffer[0].offset
        if not self._buffer:
            return self._past_skipped(out, offset)
        return out

    def _past_skipped(self, out: list[Record], offset: int) -> list[Record]:
        """`out`, or a Fetched naming the consumer's position when it moved past
        records it never delivered (control records, aborted ones at read_committed)."""
        tp = confluent_kafka.TopicPartition(self.topic, self.partition)
        position = self._consumer.position([tp])[0].offset
        expected = out[-1].offset + 1 if out else offset
        if position <= expected:
            return out
        if not self._committed_only and position > expected + 1:
            # More than a marker, where no aborted record is skipped: fetch from
            # `expected` again before believing it (a librdkafka position ahead of the
            # records it handed over lost a sink 999 records once, acb4d88). Believed
            # when a fetch from there makes the same jump again (markers of two
            # producers' transactions side by side).
            doubted, self._doubted = self._doubted, (expected, position)
            if doubted != (expected, position):
                _log.info(
                    "reader of %s-%d: the consumer moved from %d to %d without records;"
                    " fetching from %d again",
                    self.topic, self.partition, expected, position, expected,
                )
                self._next = self._fetched = None  # the next read assigns at `expected`
                return out
        self._doubted = None
        self._next = self._fetched = position
        fetched = Fetched(out)
        fetched.next_offset = position
        return fetched

    def _fill(self, high: int, deadline: float) -> bool:
        """Move fetched records into the buffer; False at the high watermark seen in
        step 1, at an end-of-partition event with no record after it in its batch
        (compaction or transaction markers can leave the last offsets without records),
        or at the deadline.

        Why every record of a batch is kept, also those after an end-of-partition event:
        librdkafka queues the event when its fetcher catches up with the producers and
        the records that come next behind it, so a batch can begin with the event and
        go on with records. They are consumed (librdkafka's position is past them):
        dropped here, `_past_skipped` took that position for skipped control records and
        the reader's caller moved past them for good (999 lines of a sink on the real
        broker, tests/log/test_kafka_reader.py).

        Why the stream's position (`_fetched`) and not `_next` is held against the high
        watermark: `_next` is where the read began (the first buffered record), and
        once a read emptied the buffer a fill from there waited for records past the
        high watermark until the deadline (the log's timeout: 10 s by default) with the
        records it had read in hand, when the end-of-partition event had come in the
        batch before."""
        while True:
            if self._fetched is not None and self._fetched >= high:
                return False
            messages = self._consumer.consume(1000, timeout=0)
            if not messages:
                if self.aborted:  # closing step 2
                    raise LogClosedError()
                if time.monotonic() >= deadline:
                    return False
                message = self._consumer.poll(0.05)
                messages = [message] if message is not None else []
            got = ended = False
            for m in messages:
                err = m.error()
                if err is not None:
                    if err.code() == _EOF:
                        ended = True
                        continue
                    if err.code() == _RESET:  # retention removed it since step 1
                        wanted = self._fetched if self._fetched is not None else -1
                        self._next = self._fetched = None
                        low, end = self.watermarks()
                        raise OffsetOutOfRangeError(self.topic, self.partition, wanted, low, end)
                    raise operation_error(f"read {self.topic}-{self.partition}", err)
                _kind, ts = m.timestamp()
                self._buffer.append(
                    Record(
                        self.topic,
                        self.partition,
                        m.offset(),
                        ts,
                        m.key(),
                        m.value(),
                        tuple(m.headers() or ()),
                    )
                )
                self._fetched = m.offset() + 1
                got = True
            if got or ended:
                return got

    def retire(self, *, abort: bool = False) -> None:
        """Closing step 1: close now if no one holds the reader, else when let go;
        `abort`: a read in flight gives up."""
        self.aborted = self.aborted or abort
        self.retired = True
        self._close_if_idle()

    def release(self) -> None:
        """Let go of `lock`; a reader retired meanwhile is closed (closing step 2).
        Why after the release and not before: the pool marks first and then tries the
        lock, the holder lets go first and then looks at the mark, so one of them
        always sees the other."""
        self.lock.release()
        if self.retired:
            self._close_if_idle()

    def _close_if_idle(self) -> None:
        if self.lock.acquire(blocking=False):
            try:
                self.close()
            finally:
                self.lock.release()

    def close(self) -> None:
        """Close the consumer; the caller holds `lock` (or no one else can)."""
        if not self.closed:
            self.closed = True
            self._consumer.close()


class ReaderPool:
    """Readers of recently read partitions, at most `size` open at once."""

    def __init__(
        self, config: ClientConfig, *, size: int = 16, isolation_level: str = "read_uncommitted"
    ) -> None:
        self._config = config
        self._size = size
        self._isolation_level = isolation_level
        self._lock = threading.Lock()
        self._readers: OrderedDict[tuple[str, int], PartitionReader] = OrderedDict()
        self._closed = False

    @contextlib.contextmanager
    def use(self, topic: str, partition: int) -> Iterator[PartitionReader]:
        """The reader of a partition, held by this caller alone for the block (its
        lock); never a retired one (closing step 3). LogClosedError once the pool is
        closed."""
        while True:
            reader = self.get(topic, partition)
            reader.lock.acquire()
            if not reader.retired:
                break
            reader.release()  # retired while we waited: ask the pool again
        try:
            yield reader
        finally:
            reader.release()

    def get(self, topic: str, partition: int) -> PartitionReader:
        """The reader of a partition (`use` holds it; see there)."""
        doomed: list[PartitionReader] = []
        with self._lock:
            if self._closed:
                raise LogClosedError()
            reader = self._readers.get((topic, partition))
            if reader is None:
                reader = PartitionReader(
                    self._config, topic, partition, isolation_level=self._isolation_level
                )
                self._readers[(topic, partition)] = reader
                while len(self._readers) > self._size:
                    doomed.append(self._readers.popitem(last=False)[1])
            else:
                self._readers.move_to_end((topic, partition))
        for old in doomed:
            old.retire()
        return reader

    def forget(self, topic: str) -> None:
        """Retire the readers of a topic that was deleted."""
        with self._lock:
            doomed = [k for k in self._readers if k[0] == topic]
            readers = [self._readers.pop(k) for k in doomed]
        for reader in readers:
            reader.retire()

    def close(self) -> None:
        """Closing step 1 for every reader: returns at once, a read in flight ends
        with LogClosedError and closes its reader itself."""
        with self._lock:
            self._closed = True
            readers = list(self._readers.values())
            self._readers.clear()
        for reader in readers:
            reader.retire(abort=True)


def offset_ranges(
    admin: AdminClient,
    topic: str,
    partitions: Sequence[int],
    *,
    timeout_s: float,
    closed: Callable[[], bool],
) -> dict[int, tuple[int, int]]:
    """(log start, log end) of each of `partitions` that ListOffsets rounds answered
    (see the module docstring); the others are left out, for the caller to ask one by
    one. The partitions a round left out are asked again in another, `_ROUND_PAUSE_S`
    later, while each round answers more of them, for at most `_SETTLE_S`. Why: a
    topic made moments ago answers only for the partitions whose leaders are ready, a
    few more each round (5, 7, 9, 11 of 25, 50 ms apart, on the real broker), and the
    rest asked one by one waited for their leaders through a reader each: 2 s for a
    fresh 25-partition offsets topic. A round that answers no more ends the rounds."""
    found: dict[int, tuple[int, int]] = {}
    missing = list(partitions)
    deadline = time.monotonic() + _SETTLE_S
    while True:
        found.update(_offset_round(admin, topic, missing, timeout_s=timeout_s, closed=closed))
        left = [p for p in missing if p not in found]
        if not left or len(left) == len(missing) or time.monotonic() > deadline:
            return found
        missing = left
        time.sleep(_ROUND_PAUSE_S)


def _offset_round(
    admin: AdminClient,
    topic: str,
    partitions: Sequence[int],
    *,
    timeout_s: float,
    closed: Callable[[], bool],
) -> dict[int, tuple[int, int]]:
    """(log start, log end) of each of `partitions` that one ListOffsets round
    answered. The log end is the high watermark (read_uncommitted), as `watermarks`
    gives. Waits in tries of `_TRY_S`, giving up with LogClosedError once `closed()`,
    and with KafkaUnavailableError when no broker answered the round (`_AWAY`) in the
    request timeout."""
    asked: dict[str, dict[confluent_kafka.TopicPartition, futures.Future]] = {}
    for name, spec in (("low", OffsetSpec.earliest()), ("high", OffsetSpec.latest())):
        try:
            asked[name] = admin.list_offsets(
                {confluent_kafka.TopicPartition(topic, p): spec for p in partitions},
                isolation_level=IsolationLevel.READ_UNCOMMITTED,
                request_timeout=timeout_s,
            )
        except (confluent_kafka.KafkaException, ValueError, TypeError):
            return {}
    pending = [f for by_tp in asked.values() for f in by_tp.values()]
    deadline = time.monotonic() + timeout_s + 1
    while pending and time.monotonic() < deadline:
        if closed():
            raise LogClosedError()
        _done, left = futures.wait(pending, timeout=_TRY_S)
        pending = list(left)
    if pending:
        # No answer in the request timeout: the cluster is away, and asking each
        # partition again would wait that long once more per partition.
        raise KafkaUnavailableError(
            f"offsets of {topic}", "_TIMED_OUT", "no answer to ListOffsets", retriable=True
        )
    for future in (f for by_tp in asked.values() for f in by_tp.values()):
        exc = future.exception()
        err = exc.args[0] if isinstance(exc, confluent_kafka.KafkaException) and exc.args else None
        if isinstance(err, confluent_kafka.KafkaError) and err.code() in _AWAY:
            raise operation_error(f"offsets of {topic}", exc) from None
    out: dict[int, tuple[int, int]] = {}
    for tp, low_future in asked["low"].items():
        high_future = asked["high"][tp]
        if low_future.exception() is None and high_future.exception() is None:
            low, high = low_future.result().offset, high_future.result().offset
            if 0 <= low <= high:
                out[tp.partition] = (low, high)
    return out
