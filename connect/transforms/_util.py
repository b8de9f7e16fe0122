"""What every SMT shares: which half of the record it works on ($Key / $Value), a
cache of derived schemas, and the checks Kafka's transforms make on their input.

Transforms run once per record on the pipeline's hot path, so the helpers here avoid
per-record work that can be done once: a derived schema is built once per input
schema and found again by identity (a converter usually hands out the same Schema
object for every record of a topic), and structs that a transform builds from values
it already knows to be valid are assembled without re-validating every field.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, Generic, TypeVar

from connect.api import (
    ConfigDef,
    ConfigError,
    ConfigType,
    ConnectRecord,
    DataError,
    Importance,
    Schema,
    Struct,
    is_logical,
)

__all__ = [
    "REPLACE_NULL_WITH_DEFAULT",
    "Configured",
    "KeySide",
    "SchemaCache",
    "SchemaCaching",
    "ValueSide",
    "copy_basics",
    "define_replace_null",
    "field_values",
    "java_regex",
    "require_map",
    "require_schema",
    "require_struct",
]

V = TypeVar("V")

REPLACE_NULL_WITH_DEFAULT = "replace.null.with.default"


# --------------------------------------------------------------- $Key / $Value


class KeySide:
    """Mixin for the `$Key` variant: the transform reads and replaces the key."""

    SIDE = "key"

    @staticmethod
    def operating_schema(record: ConnectRecord) -> Schema | None:
        return record.key_schema

    @staticmethod
    def operating_value(record: ConnectRecord) -> Any:
        return record.key

    @staticmethod
    def new_record(record: Any, schema: Schema | None, value: Any) -> Any:
        return record.new_record(key_schema=schema, key=value)


class ValueSide:
    """Mixin for the `$Value` variant: the transform reads and replaces the value."""

    SIDE = "value"

    @staticmethod
    def operating_schema(record: ConnectRecord) -> Schema | None:
        return record.value_schema

    @staticmethod
    def operating_value(record: ConnectRecord) -> Any:
        return record.value

    @staticmethod
    def new_record(record: Any, schema: Schema | None, value: Any) -> Any:
        return record.new_record(value_schema=schema, value=value)


# ---------------------------------------------------------------- schema cache


class SchemaCache(Generic[V]):
    """Derived schemas keyed by the input schema: an LRU of `size` entries, as Kafka's
    transforms keep, plus an identity map in front of it.

    Schema equality is a deep comparison, too slow to pay per record; the identity
    map answers the common case (the same Schema object again) with one dict lookup
    and falls back to the equality-keyed LRU for equal schemas built anew. Only the
    LRU lookups count as uses for eviction: an identity hit costs nothing more."""

    __slots__ = ("_by_id", "_lru", "_size")

    def __init__(self, size: int = 16) -> None:
        self._size = size
        self._by_id: dict[int, tuple[Schema, V]] = {}
        self._lru: OrderedDict[Schema, V] = OrderedDict()

    def get(self, schema: Schema) -> V | None:
        hit = self._by_id.get(id(schema))
        if hit is not None and hit[0] is schema:
            return hit[1]
        derived = self._lru.get(schema)
        if derived is not None:
            self._lru.move_to_end(schema)
            self._remember(schema, derived)
        return derived

    def put(self, schema: Schema, derived: V) -> V:
        self._lru[schema] = derived
        self._lru.move_to_end(schema)
        while len(self._lru) > self._size:
            self._lru.popitem(last=False)
        self._remember(schema, derived)
        return derived

    def get_or_build(self, schema: Schema, build: Callable[[Schema], V]) -> V:
        derived = self.get(schema)
        return derived if derived is not None else self.put(schema, build(schema))

    def _remember(self, schema: Schema, derived: V) -> None:
        # The entry holds the schema itself, so its id cannot be reused while cached.
        if len(self._by_id) >= 4 * self._size:
            self._by_id.clear()
        self._by_id[id(schema)] = (schema, derived)

    def clear(self) -> None:
        self._by_id.clear()
        self._lru.clear()


# ------------------------------------------------------------- schemas, structs


def copy_basics(source: Schema, **changes: Any) -> Schema:
    """A schema with `source`'s name, version, doc, parameters and optionality,
    and whatever `changes` give (type, fields, default, …): Kafka's copySchemaBasics.
    A logical name is dropped when the type changes, since it would no longer hold."""
    kept: dict[str, Any] = {
        "optional": source.optional,
        "name": source.name,
        "version": source.version,
        "doc": source.doc,
        "parameters": dict(source.parameters),
    }
    new_type = changes.get("type", source.type)
    if new_type is not source.type and is_logical(source) is not None:
        kept.update(name=None, version=None, parameters={})
    kept.update(changes)
    kept.setdefault("type", source.type)
    return Schema(**kept)


def struct_schema(source: Schema, fields: Iterable[tuple[str, Schema]]) -> Schema:
    """A struct schema with `source`'s basics and the given fields (no default:
    a struct default would no longer match the new fields)."""
    built = Schema.struct(fields)
    return copy_basics(source, type=built.type, fields=built.fields, default=None)


def field_values(struct: Struct, replace_null_with_default: bool = True) -> list[Any]:
    """The struct's values in field order; a null field reads as the field's default
    when `replace_null_with_default` (Kafka's `Struct.get` vs `getWithoutDefault`)."""
    values = struct.values()
    if not replace_null_with_default:
        return list(values)
    out = list(values)
    for i, value in enumerate(out):
        if value is None:
            out[i] = struct.schema.fields[i].schema.default
    return out


# ------------------------------------------------------------ input requirements


def require_struct(value: Any, purpose: str) -> Struct:
    if not isinstance(value, Struct):
        kind = "null" if value is None else type(value).__name__
        raise DataError(f"Only Struct objects supported for [{purpose}], found: {kind}")
    return value


def require_map(value: Any, purpose: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        kind = "null" if value is None else type(value).__name__
        raise DataError(
            f"Only Map objects supported in absence of schema for [{purpose}], found: {kind}"
        )
    return value


def require_schema(schema: Schema | None, purpose: str) -> Schema:
    if schema is None:
        raise DataError(f"Schema required for [{purpose}]")
    return schema


# -------------------------------------------------------------------- config


class Configured:
    """Mixin for a transform or predicate whose keys are declared once, in `_CONFIG`:
    `config()` returns it, and `configure()` parses the configs against it and hands the
    values to `_configure(parsed)`, which takes the settings (default: none)."""

    _CONFIG: ClassVar[ConfigDef] = ConfigDef()

    def config(self) -> ConfigDef:
        return self._CONFIG

    def configure(self, configs: Mapping[str, Any]) -> None:
        self._configure(self._CONFIG.parse(configs))

    def _configure(self, parsed: dict[str, Any]) -> None:
        """Take the parsed settings (see the class docstring)."""


class SchemaCaching(Configured):
    """Configured, for the transforms that derive schemas: `_schemas` caches them and is
    emptied on every configure (they depend on the settings), and `_replace_null`
    follows `replace.null.with.default` when `_CONFIG` declares it (true otherwise)."""

    def __init__(self) -> None:
        self._replace_null = True
        self._schemas: SchemaCache[Any] = SchemaCache()

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = self._CONFIG.parse(configs)
        self._configure(parsed)
        self._replace_null = parsed.get(REPLACE_NULL_WITH_DEFAULT, True)
        self._schemas.clear()


def define_replace_null(cdef: ConfigDef) -> ConfigDef:
    """Kafka's `replace.null.with.default` key (KIP-1040), on the transforms that read
    struct fields."""
    return cdef.define(
        REPLACE_NULL_WITH_DEFAULT,
        ConfigType.BOOLEAN,
        True,
        None,
        Importance.MEDIUM,
        "Whether to replace fields that have a default value and that are null to the "
        "default value. When set to true, the default value is used, otherwise null is used.",
    )


def non_empty_list(name: str, value: Any) -> None:
    if not value:
        raise ConfigError(name, value if value is not None else "", "Empty list")


non_empty_list.__doc__ = "non-empty list"


# Java's named group `(?<name>…)`, not a lookbehind `(?<=…)` / `(?<!…)`.
_JAVA_NAMED_GROUP = re.compile(r"\(\?<([A-Za-z][A-Za-z0-9]*)>")


def java_regex(name: str, pattern: str) -> re.Pattern[str]:
    """Compile a Java regular expression (the dialect Kafka configs are written in);
    the syntax both share compiles as is, named groups are translated. A pattern
    that does not compile is a ConfigError on `name`."""
    try:
        return re.compile(_JAVA_NAMED_GROUP.sub(r"(?P<\1>", pattern))
    except re.error as exc:
        raise ConfigError(name, pattern, f"Invalid regex: {exc}") from None


def regex_validator(name: str, value: Any) -> None:
    if value is not None:
        java_regex(name, value)


regex_validator.__doc__ = "valid regex"


# ---------------------------------------------------------------- field paths

FIELD_SYNTAX_VERSION = "field.syntax.version"


def define_field_syntax(cdef: ConfigDef) -> ConfigDef:
    """Kafka's `field.syntax.version` (KIP-821): V1 reads a field name as is; V2 reads
    a dotted path into nested structs or maps, with `backticks` around a name that
    contains dots (a backtick inside one is written \\`)."""
    return cdef.define(
        FIELD_SYNTAX_VERSION,
        ConfigType.STRING,
        "V1",
        one_of_upper("V1", "V2"),
        Importance.HIGH,
        "Defines the version of the syntax to access fields. If set to `V1`, then the field "
        "paths are limited to access the elements at the root level of the struct or map. "
        "If set to `V2`, the syntax will support accessing nested elements.",
    )


def one_of_upper(*allowed: str) -> Callable[[str, Any], None]:
    def check(name: str, value: Any) -> None:
        if value is not None and str(value).upper() not in allowed:
            raise ConfigError(name, value, f"String must be one of: {', '.join(allowed)}")

    check.__doc__ = "[" + ", ".join(allowed) + "]"
    return check


def parse_field_path(name: str, path: str, version: str) -> tuple[str, ...]:
    """The steps of a field path under `field.syntax.version` (see above)."""
    if version.upper() == "V1" or ("." not in path and "`" not in path):
        return (path,)
    steps: list[str] = []
    current: list[str] = []
    quoted = False
    i = 0
    while i < len(path):
        c = path[i]
        if quoted:
            if c == "\\" and i + 1 < len(path) and path[i + 1] == "`":
                current.append("`")
                i += 1
            elif c == "`" and (i + 1 == len(path) or path[i + 1] == "."):
                quoted = False
            else:
                current.append(c)
        elif c == "`" and not current:
            quoted = True
        elif c == ".":
            steps.append("".join(current))
            current = []
        else:
            current.append(c)
        i += 1
    if quoted:
        raise ConfigError(name, path, "unbalanced backtick in field path")
    steps.append("".join(current))
    return tuple(steps)
