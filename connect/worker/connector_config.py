"""The keys every connector config has, whatever its class: Kafka Connect's
ConnectorConfig, SourceConnectorConfig and SinkConnectorConfig, declared once.

Why a module of its own: these are read by other parties and at other times than the
worker's keys (`connect.worker.config`, read once when a worker starts): the herder
validates them on every create, update and `config/validate`
(connect.herder.validation), the worker parses them on every connector start, and
`GET /connector-plugins/<p>/config` lists them beside the plugin's own. A connector's
own keys are its `config()`; the error handling keys (`errors.*`) come from
`connect.errors`, merged in here.
"""

from __future__ import annotations

import re

from connect.api import (
    NO_DEFAULT,
    ConfigDef,
    ConfigType,
    Importance,
    at_least,
    non_empty_string,
    one_of,
)
from connect.errors import ERRORS_CONFIG, SINK_ERRORS_CONFIG

__all__ = [
    "COMMON_CONNECTOR_CONFIG",
    "SINK_CONNECTOR_CONFIG",
    "SOURCE_CONNECTOR_CONFIG",
    "validate_connector_name",
]

_CONNECTOR_GROUP = "Common"
_TRANSFORMS_GROUP = "Transforms"
_PREDICATES_GROUP = "Predicates"

COMMON_CONNECTOR_CONFIG = (
    ConfigDef()
    .define(
        "name",
        ConfigType.STRING,
        NO_DEFAULT,
        non_empty_string,
        Importance.HIGH,
        "Globally unique name to use for this connector.",
        group=_CONNECTOR_GROUP,
        order_in_group=1,
        display_name="Connector name",
    )
    .define(
        "connector.class",
        ConfigType.STRING,
        NO_DEFAULT,
        non_empty_string,
        Importance.HIGH,
        "Name or alias of the class for this connector.",
        group=_CONNECTOR_GROUP,
        order_in_group=2,
        display_name="Connector class",
    )
    .define(
        "tasks.max",
        ConfigType.INT,
        1,
        at_least(1),
        Importance.HIGH,
        "Maximum number of tasks to use for this connector.",
        group=_CONNECTOR_GROUP,
        order_in_group=3,
        display_name="Tasks max",
    )
    .define(
        "tasks.max.enforce",
        ConfigType.BOOLEAN,
        True,
        None,
        Importance.LOW,
        "Fail the connector when it generates more than tasks.max task configs.",
        group=_CONNECTOR_GROUP,
        order_in_group=4,
    )
    .define(
        "key.converter",
        ConfigType.CLASS,
        None,
        None,
        Importance.LOW,
        "Key converter (default: the worker's).",
        group=_CONNECTOR_GROUP,
        order_in_group=5,
    )
    .define(
        "value.converter",
        ConfigType.CLASS,
        None,
        None,
        Importance.LOW,
        "Value converter (default: the worker's).",
        group=_CONNECTOR_GROUP,
        order_in_group=6,
    )
    .define(
        "header.converter",
        ConfigType.CLASS,
        None,
        None,
        Importance.LOW,
        "Header converter (default: the worker's).",
        group=_CONNECTOR_GROUP,
        order_in_group=7,
    )
    .define(
        "config.action.reload",
        ConfigType.STRING,
        "restart",
        one_of("none", "restart"),
        Importance.LOW,
        "What to do when a config provider's value changes.",
        group=_CONNECTOR_GROUP,
        order_in_group=8,
    )
    .define(
        "transforms",
        ConfigType.LIST,
        "",
        None,
        Importance.LOW,
        "Aliases for the transformations to apply to records.",
        group=_TRANSFORMS_GROUP,
        order_in_group=1,
    )
    .define(
        "predicates",
        ConfigType.LIST,
        "",
        None,
        Importance.LOW,
        "Aliases for the predicates used by transformations.",
        group=_PREDICATES_GROUP,
        order_in_group=1,
    )
).merged(ERRORS_CONFIG)

SOURCE_CONNECTOR_CONFIG = COMMON_CONNECTOR_CONFIG.merged(
    ConfigDef()
    .define(
        "topic.creation.groups",
        ConfigType.LIST,
        "",
        None,
        Importance.LOW,
        "Groups of topic.creation.<group>.* settings for topics this connector creates.",
        group="Topic Creation",
    )
    .define(
        "topic.creation.default.partitions",
        ConfigType.INT,
        None,
        None,
        Importance.LOW,
        "Partitions of topics this connector creates (-1: the worker's num.partitions).",
        group="Topic Creation",
    )
    .define(
        "topic.creation.default.replication.factor",
        ConfigType.SHORT,
        None,
        None,
        Importance.LOW,
        "Accepted for compatibility; the embedded log has no replicas.",
        group="Topic Creation",
    )
    .define(
        "exactly.once.support",
        ConfigType.STRING,
        "requested",
        one_of("requested", "required"),
        Importance.MEDIUM,
        "'required': refuse this connector unless it says it can run exactly once with "
        "this config and the worker's exactly.once.source.support is 'enabled'; "
        "'requested': run exactly once wherever the worker has it on.",
        group="Exactly Once Support",
        order_in_group=1,
    )
    .define(
        "transaction.boundary",
        ConfigType.STRING,
        "poll",
        one_of("poll", "interval", "connector"),
        Importance.MEDIUM,
        "Where a task's transaction ends (exactly-once on): 'poll', after every "
        "non-empty batch of records poll() returns; 'interval', every "
        "transaction.boundary.interval.ms; 'connector', where the task asks through "
        "its TransactionContext.",
        group="Exactly Once Support",
        order_in_group=2,
    )
    .define(
        "transaction.boundary.interval.ms",
        ConfigType.LONG,
        None,
        None,
        Importance.LOW,
        "With transaction.boundary=interval: how often a transaction commits (default: "
        "the worker's offset.flush.interval.ms).",
        group="Exactly Once Support",
        order_in_group=3,
    )
    .define(
        "offsets.storage.topic",
        ConfigType.STRING,
        None,
        None,
        Importance.LOW,
        "A separate offsets topic for this connector.",
        group="Offsets",
    )
)

SINK_CONNECTOR_CONFIG = COMMON_CONNECTOR_CONFIG.merged(
    ConfigDef()
    .define(
        "topics",
        ConfigType.LIST,
        "",
        None,
        Importance.HIGH,
        "Topics to consume (this or topics.regex).",
        group=_CONNECTOR_GROUP,
        order_in_group=4,
    )
    .define(
        "topics.regex",
        ConfigType.STRING,
        "",
        None,
        Importance.HIGH,
        "Regular expression of topics to consume (this or topics).",
        group=_CONNECTOR_GROUP,
        order_in_group=4,
    )
).merged(SINK_ERRORS_CONFIG)

_NAME = re.compile(r"[^\x00-\x1f/\\]+")


def validate_connector_name(name: str) -> str | None:
    """Why `name` cannot name a connector, or None. Names become log record keys and
    REST paths, never file paths, but control characters and slashes are refused."""
    if not name or not name.strip():
        return "Connector name is empty"
    if name != name.strip():
        return "Connector name has leading or trailing whitespace"
    if not _NAME.fullmatch(name):
        return "Connector name contains a control character or a slash"
    return None
