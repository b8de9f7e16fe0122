"""The converters' error: one DataError subclass that keeps its facts.

    DataError (connect.api)
    └── ConversionError   a value or a byte string of `topic` that cannot be converted

A ConversionError is a DataError, so the worker's error handling retries nothing and
routes the record to the dead-letter queue (or fails the task) per `errors.tolerance`.
The message names the topic and the direction, as Kafka's DataException does, so the
`__connect.errors.exception.message` header of a dead letter says what went wrong where.
"""

from __future__ import annotations

from connect.api.errors import DataError

__all__ = ["ConversionError"]

TO_BYTES = "to_bytes"
FROM_BYTES = "from_bytes"


class ConversionError(DataError):
    """Converting a record of `topic` failed; `reason` says why, `direction` which way
    (`to_bytes`: Connect data → bytes, `from_bytes`: bytes → Connect data)."""

    def __init__(self, topic: str, reason: str, *, direction: str) -> None:
        self.topic = topic
        self.reason = reason
        self.direction = direction
        if direction == TO_BYTES:
            head = f"Converting Kafka Connect data to byte[] failed for topic {topic!r}"
        else:
            head = f"Converting byte[] to Kafka Connect data failed for topic {topic!r}"
        super().__init__(f"{head}: {reason}")
