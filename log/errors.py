"""Errors raised by the log.

The hierarchy, drawn so a caller can see what to catch::

    LogError                        anything the log refuses or cannot do
    ├── InvalidTopicError           a topic name breaks Kafka's naming rule
    ├── InvalidConfigError          a topic config key or value is unknown or out of range
    ├── InvalidRecordError          a record the topic cannot take (e.g. no key when compacted)
    ├── TopicExistsError            create of a topic that is already there
    ├── UnknownTopicOrPartitionError a topic or partition that does not exist
    │   └── TopicDeletedError       one that was deleted while this process used it
    ├── OffsetOutOfRangeError       a read before the log start or past the log end
    ├── CorruptRecordError          a batch whose length or CRC does not check out
    ├── NoOffsetForPartitionError   no committed offset and auto.offset.reset=none
    ├── LockTimeoutError            another writer held the partition lock for too long
    ├── TransactionError            a transaction the log cannot go on with
    │   ├── ProducerFencedError     a newer producer (epoch) of the transactional.id exists
    │   └── InvalidTxnStateError    a call out of order (append before begin, say)
    ├── LogClosedError              a call on a log that was closed
    ├── LogUnavailableError         the log's storage cannot be reached for now (a
    │                               Kafka broker away): the same call may succeed later
    └── LogNotFoundError            a log opened to read (create=False) whose directory is missing

Every exception keeps its facts as attributes (topic, partition, offset, path,
position) and builds its message from them, so callers never parse messages.
"""

from __future__ import annotations

__all__ = [
    "CorruptRecordError",
    "InvalidConfigError",
    "InvalidRecordError",
    "InvalidTopicError",
    "InvalidTxnStateError",
    "LockTimeoutError",
    "LogClosedError",
    "LogError",
    "LogNotFoundError",
    "LogUnavailableError",
    "NoOffsetForPartitionError",
    "OffsetOutOfRangeError",
    "ProducerFencedError",
    "TopicDeletedError",
    "TopicExistsError",
    "TransactionError",
    "UnknownTopicOrPartitionError",
]


class LogError(Exception):
    """Root of every error the log raises."""


class InvalidTopicError(LogError):
    """A topic name that is empty, too long, `.`/`..`, or has characters outside
    `[a-zA-Z0-9._-]`: such a name could escape the log directory."""

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason
        super().__init__(f"invalid topic name {name!r}: {reason}")


class InvalidConfigError(LogError):
    """A config key that is unknown, or a value of the wrong type or range."""

    def __init__(self, key: str, value: object, reason: str) -> None:
        self.key = key
        self.value = value
        self.reason = reason
        super().__init__(f"invalid value {value!r} for configuration {key}: {reason}")


class InvalidRecordError(LogError):
    """A record the topic refuses, e.g. a null key on a compacted topic."""

    def __init__(self, topic: str, partition: int, reason: str) -> None:
        self.topic = topic
        self.partition = partition
        self.reason = reason
        super().__init__(f"{topic}-{partition}: record refused: {reason}")


class TopicExistsError(LogError):
    def __init__(self, topic: str) -> None:
        self.topic = topic
        super().__init__(f"topic {topic!r} already exists")


class UnknownTopicOrPartitionError(LogError):
    def __init__(self, topic: str, partition: int | None = None) -> None:
        self.topic = topic
        self.partition = partition
        what = f"topic {topic!r}" if partition is None else f"partition {topic}-{partition}"
        super().__init__(f"{what} does not exist")


class TopicDeletedError(UnknownTopicOrPartitionError):
    """A topic deleted (by another process, or another thread's delete_topic) while
    this process was reading or writing it. Why a category of its own: the topic did
    exist, so the reader or writer was not wrong to ask; it cannot go on until the
    topic is created again, and its message says so instead of "does not exist"."""

    def __init__(self, topic: str, partition: int | None = None) -> None:
        super().__init__(topic, partition)
        where = "" if partition is None else f" (partition {topic}-{partition} is gone)"
        self.args = (f"topic {topic!r} was deleted while in use{where}",)


class OffsetOutOfRangeError(LogError):
    """A read at an offset outside [log start, log end]; reading exactly at the log
    end is allowed and returns nothing (that is how a reader waits for new data)."""

    def __init__(self, topic: str, partition: int, offset: int, start: int, end: int) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.start = start
        self.end = end
        super().__init__(
            f"offset {offset} is out of range for {topic}-{partition}: "
            f"valid offsets are {start}..{end} (the log end {end} reads nothing yet)"
        )


class NoOffsetForPartitionError(LogError):
    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        super().__init__(
            f"{topic}-{partition} has no committed offset and auto.offset.reset is none"
        )


class CorruptRecordError(LogError):
    """A batch that fails its length or CRC check where no crash can explain it (in
    the middle of a segment). Reported with its file and byte position, never skipped."""

    def __init__(self, path: str, position: int, reason: str) -> None:
        self.path = path
        self.position = position
        self.reason = reason
        super().__init__(f"corrupt batch in {path} at byte {position}: {reason}")


class LockTimeoutError(LogError):
    def __init__(self, path: str, timeout_s: float) -> None:
        self.path = path
        self.timeout_s = timeout_s
        super().__init__(f"could not lock {path} within {timeout_s:.1f}s: another writer holds it")


class LogClosedError(LogError):
    def __init__(self, what: str = "log") -> None:
        super().__init__(f"{what} is closed")


class LogUnavailableError(LogError):
    """The log cannot be reached for now: a broker down or restarting, leadership
    moving. Not the caller's failure: Kafka Connect's tasks ride out broker outages
    (clients retry, a poll returns nothing), so a task backs off and calls again. A
    mixin: a backend's own error class carries the facts (see log.kafka.errors)."""


class LogNotFoundError(LogError):
    """A log opened only to read, at a path that is no directory: a mistyped `log.dir`
    must be reported, not answered with an empty log created in its place."""

    def __init__(self, path: str, reason: str | None = None) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"no log at {path}" + (f" ({reason})" if reason else ""))


class TransactionError(LogError):
    """A transaction the log cannot go on with; the transaction is not committed."""


class ProducerFencedError(TransactionError):
    """A producer whose epoch is older than its transactional.id's newest (another
    producer called init_transactions, or the coordinator aborted a transaction that
    outlived transaction.timeout.ms): nothing it writes becomes visible. Close it;
    as in Kafka, it cannot recover."""

    def __init__(
        self,
        producer_id: int,
        epoch: int,
        current_epoch: int,
        topic: str | None = None,
        partition: int | None = None,
        *,
        reason: str | None = None,
    ) -> None:
        self.producer_id = producer_id
        self.epoch = epoch
        self.current_epoch = current_epoch
        self.topic = topic
        self.partition = partition
        self.reason = reason
        if reason is not None:  # the backend knows no ids (a Kafka client's error)
            super().__init__(f"producer fenced by a newer one of its transactional.id: {reason}")
            return
        where = f" (writing to {topic}-{partition})" if topic is not None else ""
        super().__init__(
            f"producer {producer_id} epoch {epoch} is fenced: epoch {current_epoch} is newer{where}"
        )


class InvalidTxnStateError(TransactionError):
    """A transactional call out of order: `state` is where the producer was."""

    def __init__(self, transactional_id: str, state: str, action: str) -> None:
        self.transactional_id = transactional_id
        self.state = state
        self.action = action
        super().__init__(f"transactional.id {transactional_id!r}: cannot {action} in state {state}")
