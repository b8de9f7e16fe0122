"""Tributary's partitioned, persistent, append-only commit log.

`FileLog` is the embedded backend (a directory on disk, no server); `KafkaLog` the one
on Apache Kafka; `Producer` and `Consumer` work on any backend implementing `Log`.
The runtime (`connect`) imports from `log` only the names below (a test keeps it so),
including the durable small-file helpers (`write_atomic`, `read_text`, `fsync_dir`,
`FileLock`) that every state file goes through, and `KeyPartitioner`, Kafka's default
key-to-partition mapping over batches of keys.

`KafkaLog` is loaded on first use (the module `__getattr__`): it imports
confluent-kafka, which a worker on the embedded log never needs.
"""

import importlib
from typing import TYPE_CHECKING, Any

from log.api import Log, TransactionalProducer
from log.batch import BatchValues
from log.config import TopicConfig
from log.consumer import Consumer
from log.errors import (
    CorruptRecordError,
    InvalidConfigError,
    InvalidRecordError,
    InvalidTopicError,
    InvalidTxnStateError,
    LockTimeoutError,
    LogClosedError,
    LogError,
    LogNotFoundError,
    LogUnavailableError,
    NoOffsetForPartitionError,
    OffsetOutOfRangeError,
    ProducerFencedError,
    TopicDeletedError,
    TopicExistsError,
    TransactionError,
    UnknownTopicOrPartitionError,
)
from log.filelog import FileLog
from log.fsutil import FileLock, fsync_dir, read_text, write_atomic
from log.partitioner import KeyPartitioner, partition_for_key
from log.producer import Producer
from log.records import (
    Fetched,
    Header,
    OffsetAndMetadata,
    PartitionDescription,
    Record,
    TopicDescription,
    TopicPartition,
)

if TYPE_CHECKING:
    from log.kafka import KafkaLog


def __getattr__(name: str) -> Any:
    """`KafkaLog`, imported on first access (PEP 562): see the module docstring."""
    if name == "KafkaLog":
        value = importlib.import_module("log.kafka").KafkaLog
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BatchValues",
    "Consumer",
    "CorruptRecordError",
    "Fetched",
    "FileLock",
    "FileLog",
    "Header",
    "InvalidConfigError",
    "InvalidRecordError",
    "InvalidTopicError",
    "InvalidTxnStateError",
    "KafkaLog",
    "KeyPartitioner",
    "LockTimeoutError",
    "Log",
    "LogClosedError",
    "LogError",
    "LogNotFoundError",
    "LogUnavailableError",
    "NoOffsetForPartitionError",
    "OffsetAndMetadata",
    "OffsetOutOfRangeError",
    "PartitionDescription",
    "Producer",
    "ProducerFencedError",
    "Record",
    "TopicConfig",
    "TopicDeletedError",
    "TopicDescription",
    "TopicExistsError",
    "TopicPartition",
    "TransactionError",
    "TransactionalProducer",
    "UnknownTopicOrPartitionError",
    "fsync_dir",
    "partition_for_key",
    "read_text",
    "write_atomic",
]
