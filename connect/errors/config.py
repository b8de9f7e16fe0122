"""The `errors.*` keys of a connector, with Kafka's names and defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from connect.api import ConfigDef, ConfigType, Importance, at_least, one_of

__all__ = ["ERRORS_CONFIG", "SINK_ERRORS_CONFIG", "ErrorPolicy"]

GROUP = "Error Handling"

ERRORS_CONFIG = (
    ConfigDef()
    .define(
        "errors.retry.timeout",
        ConfigType.LONG,
        0,
        at_least(-1),
        Importance.MEDIUM,
        "How long to retry a failed operation, in ms; 0 never retries, -1 retries forever.",
        group=GROUP,
        order_in_group=1,
    )
    .define(
        "errors.retry.delay.max.ms",
        ConfigType.LONG,
        60_000,
        at_least(1),
        Importance.MEDIUM,
        "Cap of the exponential backoff between retries.",
        group=GROUP,
        order_in_group=2,
    )
    .define(
        "errors.tolerance",
        ConfigType.STRING,
        "none",
        one_of("none", "all"),
        Importance.MEDIUM,
        "none: the first error fails the task; all: bad records are skipped (and reported).",
        group=GROUP,
        order_in_group=3,
    )
    .define(
        "errors.log.enable",
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.MEDIUM,
        "Log each error with its topic, partition, offset and stage.",
        group=GROUP,
        order_in_group=4,
    )
    .define(
        "errors.log.include.messages",
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.MEDIUM,
        "Also log the record's key, value and headers.",
        group=GROUP,
        order_in_group=5,
    )
)

SINK_ERRORS_CONFIG = (
    ConfigDef()
    .define(
        "errors.deadletterqueue.topic.name",
        ConfigType.STRING,
        "",
        None,
        Importance.MEDIUM,
        "Topic that receives records that failed, with their original bytes.",
        group=GROUP,
        order_in_group=6,
    )
    .define(
        "errors.deadletterqueue.topic.replication.factor",
        ConfigType.SHORT,
        3,
        None,
        Importance.LOW,
        "Accepted for compatibility; the embedded log has no replicas.",
        group=GROUP,
        order_in_group=7,
    )
    .define(
        "errors.deadletterqueue.context.headers.enable",
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.MEDIUM,
        "Add __connect.errors.* headers describing the failure.",
        group=GROUP,
        order_in_group=8,
    )
)


@dataclass(frozen=True, slots=True)
class ErrorPolicy:
    retry_timeout_ms: int = 0
    retry_delay_max_ms: int = 60_000
    tolerate_all: bool = False
    log_errors: bool = False
    log_messages: bool = False
    dlq_topic: str = ""
    dlq_context_headers: bool = False

    @staticmethod
    def from_parsed(parsed: Mapping[str, Any]) -> ErrorPolicy:
        return ErrorPolicy(
            retry_timeout_ms=parsed["errors.retry.timeout"],
            retry_delay_max_ms=parsed["errors.retry.delay.max.ms"],
            tolerate_all=str(parsed["errors.tolerance"]).lower() == "all",
            log_errors=parsed["errors.log.enable"],
            log_messages=parsed["errors.log.include.messages"],
            dlq_topic=parsed.get("errors.deadletterqueue.topic.name", "") or "",
            dlq_context_headers=bool(parsed.get("errors.deadletterqueue.context.headers.enable")),
        )
