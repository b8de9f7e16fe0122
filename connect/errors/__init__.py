"""Error handling of the runtime: Kafka's `errors.*` semantics."""

from connect.errors.config import ERRORS_CONFIG, SINK_ERRORS_CONFIG, ErrorPolicy
from connect.errors.dlq import DeadLetterQueueReporter
from connect.errors.handler import ErrorContext, RetryWithTolerance, Stage, ToleranceExceededError

__all__ = [
    "ERRORS_CONFIG",
    "SINK_ERRORS_CONFIG",
    "DeadLetterQueueReporter",
    "ErrorContext",
    "ErrorPolicy",
    "RetryWithTolerance",
    "Stage",
    "ToleranceExceededError",
]
