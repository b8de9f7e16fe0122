"""The registry's vocabularies: compatibility levels, modes, schema types, and the
version ids of the REST paths, each parsed the way Confluent parses them."""

from __future__ import annotations

from typing import Literal

from connect.registry.core.errors import (
    InvalidCompatibilityLevelError,
    InvalidModeError,
    InvalidSchemaError,
    InvalidVersionError,
)

__all__ = [
    "DEFAULT_LEVEL",
    "LATEST",
    "LEVELS",
    "MODES",
    "SCHEMA_TYPES",
    "VersionId",
    "parse_level",
    "parse_mode",
    "parse_schema_type",
    "parse_version",
]

#: Direction (can read / can be read / both) × scope (latest / all); checked by
#: `connect.registry.avro.check_level`.
LEVELS = (
    "NONE",
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
)
DEFAULT_LEVEL = "BACKWARD"
TRANSITIVE = frozenset(level for level in LEVELS if level.endswith("_TRANSITIVE"))

#: READWRITE (the default); READONLY refuses writes; IMPORT registers with given ids.
MODES = ("READWRITE", "READONLY", "IMPORT")

#: Only Avro is implemented; JSON and PROTOBUF are Confluent's other types.
SCHEMA_TYPES = ("AVRO",)
_KNOWN_TYPES = ("AVRO", "JSON", "PROTOBUF")

LATEST: Literal["latest"] = "latest"
VersionId = int | Literal["latest"]
_MAX_VERSION = 2**31 - 1


def parse_level(value: object) -> str:
    """An upper-case level name; InvalidCompatibilityLevelError otherwise."""
    if isinstance(value, str) and value.upper() in LEVELS:
        return value.upper()
    raise InvalidCompatibilityLevelError(value)


def parse_mode(value: object) -> str:
    if isinstance(value, str) and value.upper() in MODES:
        return value.upper()
    raise InvalidModeError(value)


def parse_schema_type(value: object) -> str:
    """AVRO (also when absent); the other types are refused as unsupported."""
    if value is None:
        return "AVRO"
    if isinstance(value, str) and value.upper() == "AVRO":
        return "AVRO"
    if isinstance(value, str) and value.upper() in _KNOWN_TYPES:
        raise InvalidSchemaError(
            f"schemaType {value} is not supported by this registry; only AVRO is"
        )
    raise InvalidSchemaError(f"unknown schemaType {value!r}; only AVRO is supported")


def parse_version(value: object) -> VersionId:
    """A version id from a path or body: 1 … 2^31-1, or "latest" (any case) or -1."""
    if isinstance(value, str):
        if value.lower() == LATEST:
            return LATEST
        text = value.strip()
        if text.lstrip("-").isdigit():
            value = int(text)
    if isinstance(value, int) and not isinstance(value, bool):
        if value == -1:
            return LATEST
        if 1 <= value <= _MAX_VERSION:
            return value
    raise InvalidVersionError(value)
