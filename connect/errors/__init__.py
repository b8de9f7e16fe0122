"""Error handling of the runtime: Kafka's `errors.*` semantics."""

from connect.errors.config import ERRORS_CONFIG, SINK_ERRORS_CONFIG, ErrorPolicy
from connect.errors.dlq import DeadLetterQueueReporter
from connect.errors.handler import (
    ERRANT_RECORD_CLASS,
    ErrorContext,
    RetryWithTolerance,
    Stage,
    ToleranceExceededError,
    kafka_exception_class,
)

__all__ = [
    "ERRANT_RECORD_CLASS",
    "ERRORS_CONFIG",
    "SINK_ERRORS_CONFIG",
    "DeadLetterQueueReporter",
    "ErrorContext",
    "ErrorPolicy",
    "RetryWithTolerance",
    "Stage",
    "ToleranceExceededError",
    "kafka_exception_class",
]
