"""The parsed form of an Avro schema: one small node class per Avro type.

Why our own tree rather than fastavro's parsed dicts: the compatibility checker has to
follow Avro Java exactly (reader aliases qualified with the reader's namespace, identity
memoisation so recursive schemas terminate), and the canonical text has to keep what
Confluent keeps (docs, custom properties in their order, aliases, relative names). A named
type is one object however often it is referenced, so a recursive schema is a cyclic graph
and ``(id(reader), id(writer))`` identifies a pair of nodes, as Java's identity map does.

Nodes compare by identity (``eq=False``); equality of schemas is a matter of canonical
text, decided in ``schema.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PRIMITIVE_TYPES = frozenset(
    {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}
)
# Every Avro type name, as Java's Schema.Type: a named type whose simple name is one of these
# is always written with its full name, so that it cannot be mistaken for the type.
TYPE_NAMES = PRIMITIVE_TYPES | {"record", "enum", "array", "map", "union", "fixed"}

MISSING: Any = object()
"""Marks a field without a default (a JSON ``null`` default is a real default)."""


@dataclass(eq=False)
class Node:
    """Any schema node. ``type`` is the Avro type in lower case ("record" for errors too)."""

    type: str
    props: dict[str, Any] = field(default_factory=dict)

    @property
    def java_type(self) -> str:
        """The type as Avro Java's ``Schema.Type`` prints it, used in reasons (INT, RECORD)."""
        return self.type.upper()


@dataclass(eq=False)
class Primitive(Node):
    pass


@dataclass(eq=False, kw_only=True)
class Named(Node):
    """A record, enum or fixed. ``space`` is None for the null namespace."""

    name: str
    space: str | None
    doc: str | None = None
    # (simple name, namespace) of each alias, in the order given; an alias written without
    # dots takes the type's own namespace, as in Java.
    aliases: list[tuple[str, str | None]] = field(default_factory=list)

    @property
    def full_name(self) -> str:
        return f"{self.space}.{self.name}" if self.space else self.name

    @property
    def alias_full_names(self) -> list[str]:
        return [f"{space}.{name}" if space else name for name, space in self.aliases]


@dataclass(eq=False, kw_only=True)
class Field:
    name: str
    schema: Node
    pos: int
    doc: str | None = None
    default: Any = MISSING
    order: str = "ascending"
    aliases: list[str] = field(default_factory=list)
    props: dict[str, Any] = field(default_factory=dict)

    @property
    def has_default(self) -> bool:
        return self.default is not MISSING


@dataclass(eq=False, kw_only=True)
class Record(Named):
    # None while the record's own fields are being parsed (a recursive reference sees it so).
    fields: list[Field] | None = None
    is_error: bool = False

    def field_named(self, name: str) -> Field | None:
        for f in self.fields or ():
            if f.name == name:
                return f
        return None


@dataclass(eq=False, kw_only=True)
class Enum(Named):
    symbols: list[str]
    default: str | None = None


@dataclass(eq=False, kw_only=True)
class Fixed(Named):
    size: int


@dataclass(eq=False, kw_only=True)
class Array(Node):
    items: Node


@dataclass(eq=False, kw_only=True)
class Map(Node):
    values: Node


@dataclass(eq=False, kw_only=True)
class Union(Node):
    branches: list[Node]
