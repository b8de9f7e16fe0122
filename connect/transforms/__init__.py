"""Single message transforms (SMTs) and predicates, with Kafka's names and behaviour,
and the chain that runs them for a connector (`connect.transforms.chain`).

`ALIASES` maps the names users write in `transforms.<alias>.type` and
`predicates.<alias>.type` — short names (`Cast$Value`, `RegexRouter`) and Kafka's
class names (`org.apache.kafka.connect.transforms.Cast$Value`) — to "module:Class"
paths; `connect.plugins` imports a transform only when a config names it. Kafka's
nested `X$Key` / `X$Value` classes are module-level classes here (`CastKey`,
`CastValue`), also reachable as `Cast.Key` / `Cast.Value`.

Every transform works on records with a schema (Struct values) and without one
(dict values), and caches what it derives from an input schema, because transforms
run once per record on the hot path.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ALIASES", "TransformChain", "transform_config_defs"]

_KAFKA = "org.apache.kafka.connect.transforms."
_KAFKA_PREDICATES = _KAFKA + "predicates."

# Short name → module:Class; the $Key/$Value families expand below.
_TRANSFORMS: dict[str, str] = {
    "DropHeaders": "connect.transforms.headers:DropHeaders",
    "Filter": "connect.transforms.filter:Filter",
    "InsertHeader": "connect.transforms.headers:InsertHeader",
    "RegexRouter": "connect.transforms.routers:RegexRouter",
    "TimestampRouter": "connect.transforms.routers:TimestampRouter",
    "ValueToKey": "connect.transforms.value_to_key:ValueToKey",
}
_FAMILIES: dict[str, str] = {
    "Cast": "connect.transforms.cast",
    "ExtractField": "connect.transforms.extract",
    "Flatten": "connect.transforms.flatten",
    "HeaderFrom": "connect.transforms.headers",
    "HoistField": "connect.transforms.hoist",
    "InsertField": "connect.transforms.insert",
    "MaskField": "connect.transforms.mask",
    "ReplaceField": "connect.transforms.replace",
    "SetSchemaMetadata": "connect.transforms.schema_metadata",
    "TimestampConverter": "connect.transforms.timestamp",
}
_PREDICATES: dict[str, str] = {
    "HasHeaderKey": "connect.transforms.predicates:HasHeaderKey",
    "RecordIsTombstone": "connect.transforms.predicates:RecordIsTombstone",
    "TopicNameMatches": "connect.transforms.predicates:TopicNameMatches",
}


def _build_aliases() -> dict[str, str]:
    aliases: dict[str, str] = {}
    for name, path in _TRANSFORMS.items():
        aliases[name] = path
        aliases[_KAFKA + name] = path
    for family, module in _FAMILIES.items():
        for side in ("Key", "Value"):
            path = f"{module}:{family}{side}"
            for spelling in (f"{family}${side}", f"{family}.{side}", f"{family}{side}"):
                aliases[spelling] = path
            aliases[f"{_KAFKA}{family}${side}"] = path
    for name, path in _PREDICATES.items():
        aliases[name] = path
        aliases[_KAFKA_PREDICATES + name] = path
    return aliases


ALIASES: dict[str, str] = _build_aliases()
# Debezium's "unwrap", under its short name and Debezium's class name.
ALIASES["ExtractNewRecordState"] = "connect.transforms.unwrap:ExtractNewRecordState"
ALIASES["io.debezium.transforms.ExtractNewRecordState"] = ALIASES["ExtractNewRecordState"]


def __getattr__(name: str) -> Any:
    # The chain is imported on first use, so reading ALIASES stays cheap.
    if name in ("TransformChain", "transform_config_defs"):
        from connect.transforms import chain

        return getattr(chain, name)
    raise AttributeError(f"module 'connect.transforms' has no attribute {name!r}")
