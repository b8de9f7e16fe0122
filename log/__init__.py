"""Tributary's partitioned, persistent, append-only commit log.

`FileLog` is the embedded backend (a directory on disk, no server); `Producer` and
`Consumer` work on any backend implementing `Log`.
"""

from log.api import Log
from log.config import TopicConfig
from log.consumer import Consumer
from log.errors import (
    CorruptRecordError,
    InvalidConfigError,
    InvalidRecordError,
    InvalidTopicError,
    LockTimeoutError,
    LogClosedError,
    LogError,
    LogNotFoundError,
    NoOffsetForPartitionError,
    OffsetOutOfRangeError,
    TopicDeletedError,
    TopicExistsError,
    UnknownTopicOrPartitionError,
)
from log.filelog import FileLog
from log.partitioner import partition_for_key
from log.producer import Producer
from log.records import (
    Header,
    OffsetAndMetadata,
    PartitionDescription,
    Record,
    TopicDescription,
    TopicPartition,
)

__all__ = [
    "Consumer",
    "CorruptRecordError",
    "FileLog",
    "Header",
    "InvalidConfigError",
    "InvalidRecordError",
    "InvalidTopicError",
    "LockTimeoutError",
    "Log",
    "LogClosedError",
    "LogError",
    "LogNotFoundError",
    "NoOffsetForPartitionError",
    "OffsetAndMetadata",
    "OffsetOutOfRangeError",
    "PartitionDescription",
    "Producer",
    "Record",
    "TopicConfig",
    "TopicDeletedError",
    "TopicDescription",
    "TopicExistsError",
    "TopicPartition",
    "UnknownTopicOrPartitionError",
    "partition_for_key",
]
