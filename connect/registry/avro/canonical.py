"""Canonical text (schema identity) and Confluent's ``normalize``.

Canonical text is what Confluent stores, returns and compares: Avro Java's
``Schema.toString()`` of the parsed schema, compact JSON with a fixed key order per type

    record  type name namespace doc fields <props> aliases
    field   name type doc default order(unless ascending) aliases <props>
    enum    type name namespace doc symbols default <props> aliases
    fixed   type name namespace doc size <props> aliases
    array   type items <props>          map  type values <props>
    primitive: "int", or {"type": "int", <props>} when it has properties

where ``<props>`` are the custom properties in their original order. A named type is
written in full the first time and by name afterwards; names are written relative to the
enclosing namespace (``"namespace": ""`` marks a null namespace inside a non-null one), and
named types that come from references are always written by name. Numbers follow Jackson:
a double is written as Java's ``Double.toString`` does (``1.0``, ``1.0E10``).

Normalisation follows Confluent's ``AvroSchemaUtils.toNormalizedString``: fully-qualified
names, properties sorted by key (a valid logical type's keys first), aliases sorted, empty
docs dropped, defaults re-typed from the field's schema (``1`` for a double becomes ``1.0``).
Confluent then re-parses that text and stores its ``toString()``, so ``schema.py`` does the
same with the output of :func:`normalized_json`.
"""

from __future__ import annotations

import decimal
import json
import math
import struct
from typing import Any

from connect.registry.avro.model import (
    MISSING,
    TYPE_NAMES,
    Array,
    Enum,
    Field,
    Fixed,
    Map,
    Named,
    Node,
    Record,
    Union,
)

# -- JSON values as Jackson writes them --------------------------------------------------


def _java_double(value: float) -> str:
    if math.isnan(value):
        return '"NaN"'
    if math.isinf(value):
        return '"Infinity"' if value > 0 else '"-Infinity"'
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    return _java_decimal(repr(value), abs(value))


def _java_float(value: float) -> str:
    """Java's ``Float.toString``: the shortest digits that read back as the same float32."""
    if math.isnan(value) or math.isinf(value) or value == 0:
        return _java_double(value)
    f32 = struct.unpack("f", struct.pack("f", value))[0]
    for digits in range(1, 10):
        text = f"{f32:.{digits}g}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == f32:
            return _java_decimal(repr(float(text)), abs(f32))
    return _java_decimal(repr(f32), abs(f32))  # pragma: no cover - 9 digits always suffice


def _java_decimal(shortest: str, magnitude: float) -> str:
    """Java's layout of the given shortest digits: plain in [1e-3, 1e7), else d.dddE±n."""
    sign, digits, exponent = decimal.Decimal(shortest).as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits)).rstrip("0") or "0"
    point = len(digits) + exponent  # position of the decimal point within the digits
    prefix = "-" if sign else ""
    if 1e-3 <= magnitude < 1e7:
        if point <= 0:
            return f"{prefix}0.{'0' * -point}{text}"
        whole = text[:point].ljust(point, "0")
        frac = text[point:] or "0"
        return f"{prefix}{whole}.{frac}"
    return f"{prefix}{text[0]}.{text[1:] or '0'}E{point - 1}"


def json_text(value: Any) -> str:
    """Compact JSON of a property or default value, numbers written as Jackson writes them."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _java_double(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ",".join(json_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{json_text(str(k))}:{json_text(v)}"
                              for k, v in value.items()) + "}"
    raise TypeError(f"not a JSON value: {value!r}")


# -- canonical text ----------------------------------------------------------------------


def canonical_text(node: Node, known: dict[str, Named] | None = None) -> str:
    """Java's ``Schema.toString(referencedSchemas, false)``; ``known`` are written by name."""
    out: list[str] = []
    _Writer(dict(known or {})).write(node, None, out)
    return "".join(out)


def _qualified(name: str, space: str | None, default_space: str | None) -> str:
    """Java's ``Name.getQualified``: drop the namespace only when it is the enclosing one."""
    if space is not None and space == default_space and name not in TYPE_NAMES:
        return name
    return f"{space}.{name}" if space else name


class _Writer:
    def __init__(self, names: dict[str, Named]) -> None:
        self.names = names

    def write(self, node: Node, space: str | None, out: list[str]) -> None:
        if isinstance(node, Named):
            if self.names.get(node.full_name) is node:
                out.append(json_text(_qualified(node.name, node.space, space)))
                return
            self.names[node.full_name] = node
            self._named(node, space, out)
        elif isinstance(node, Union):
            out.append("[")
            for i, branch in enumerate(node.branches):
                if i:
                    out.append(",")
                self.write(branch, space, out)
            out.append("]")
        elif isinstance(node, Array | Map):
            key, inner = ("items", node.items) if isinstance(node, Array) else (
                "values", node.values)
            out.append(f'{{"type":"{node.type}","{key}":')
            self.write(inner, space, out)
            out.append(_props(node.props) + "}")
        elif node.props:
            out.append(f'{{"type":"{node.type}"{_props(node.props)}}}')
        else:
            out.append(f'"{node.type}"')

    def _named(self, node: Named, space: str | None, out: list[str]) -> None:
        kind = "error" if isinstance(node, Record) and node.is_error else node.type
        out.append(f'{{"type":"{kind}","name":{json_text(node.name)}')
        if node.space is not None:
            if node.space != space:
                out.append(f',"namespace":{json_text(node.space)}')
        elif space is not None:
            out.append(',"namespace":""')
        if node.doc is not None:
            out.append(f',"doc":{json_text(node.doc)}')
        if isinstance(node, Record):
            out.append(',"fields":[')
            for i, f in enumerate(node.fields or ()):
                if i:
                    out.append(",")
                self._field(f, node.space, out)
            out.append("]")
        elif isinstance(node, Enum):
            out.append(f',"symbols":{json_text(node.symbols)}')
            if node.default is not None:
                out.append(f',"default":{json_text(node.default)}')
        elif isinstance(node, Fixed):
            out.append(f',"size":{node.size}')
        out.append(_props(node.props))
        if node.aliases:
            aliases = [_qualified(n, s, node.space) for n, s in node.aliases]
            out.append(f',"aliases":{json_text(aliases)}')
        out.append("}")

    def _field(self, f: Field, space: str | None, out: list[str]) -> None:
        out.append(f'{{"name":{json_text(f.name)},"type":')
        self.write(f.schema, space, out)
        if f.doc is not None:
            out.append(f',"doc":{json_text(f.doc)}')
        if f.default is not MISSING:
            out.append(f',"default":{json_text(f.default)}')
        if f.order != "ascending":
            out.append(f',"order":"{f.order}"')
        if f.aliases:
            out.append(f',"aliases":{json_text(f.aliases)}')
        out.append(_props(f.props) + "}")


def _props(props: dict[str, Any]) -> str:
    return "".join(f",{json_text(k)}:{json_text(v)}" for k, v in props.items())


# -- normalisation -----------------------------------------------------------------------


def normalized_json(node: Node, known: dict[str, Named]) -> str:
    """Confluent's normalised text, before it is re-parsed; may repeat a logical-type key,
    which the re-parse resolves as Jackson does (first position, last value)."""
    env = {name: json_text(name) for name in known}
    out: list[str] = []
    _normal(node, env, out)
    return "".join(out)


def _normal(node: Node, env: dict[str, str], out: list[str]) -> None:
    if isinstance(node, Union):
        out.append("[")
        for i, branch in enumerate(node.branches):
            if i:
                out.append(",")
            _normal(branch, env, out)
        out.append("]")
        return
    logical = _logical_props(node)
    if isinstance(node, Array | Map):
        key, inner = ("items", node.items) if isinstance(node, Array) else (
            "values", node.values)
        out.append(f'{{"type":"{node.type}","{key}":')
        _normal(inner, env, out)
        out.append(logical + _sorted_props(node.props) + "}")
        return
    if isinstance(node, Named):
        full = node.full_name
        if full in env:
            out.append(env[full])
            return
        env[full] = json_text(full)
        out.append(f'{{"name":{env[full]},"type":"{node.type}"')
        if isinstance(node, Enum):
            out.append(f',"symbols":{json_text(node.symbols)}')
        elif isinstance(node, Fixed):
            out.append(f',"size":{node.size}')
        elif isinstance(node, Record):
            out.append(',"fields":[')
            for i, f in enumerate(node.fields or ()):
                if i:
                    out.append(",")
                _normal_field(f, env, out)
            out.append("]")
        out.append(logical)
        if node.doc:
            out.append(f',"doc":{json_text(node.doc)}')
        if node.aliases:
            out.append(f',"aliases":{json_text(sorted(node.alias_full_names))}')
        if isinstance(node, Enum) and node.default is not None:
            out.append(f',"default":{json_text(node.default)}')
        out.append(_sorted_props(node.props) + "}")
        return
    if logical or node.props:
        out.append(f'{{"type":"{node.type}"{logical}{_sorted_props(node.props)}}}')
    else:
        out.append(f'"{node.type}"')


def _normal_field(f: Field, env: dict[str, str], out: list[str]) -> None:
    out.append(f'{{"name":{json_text(f.name)},"type":')
    _normal(f.schema, env, out)
    out.append(f',"order":"{f.order.upper()}"')
    if f.doc is not None:
        out.append(f',"doc":{json_text(f.doc)}')
    if f.aliases:
        out.append(f',"aliases":{json_text(sorted(f.aliases))}')
    if f.default is not MISSING:
        out.append(f',"default":{_typed_default(f.default, f.schema)}')
    out.append(_sorted_props(f.props) + "}")


def _sorted_props(props: dict[str, Any]) -> str:
    return "".join(f",{json_text(k)}:{json_text(props[k])}" for k in sorted(props))


def _typed_default(value: Any, schema: Node | None) -> str:
    """A default re-typed by its schema, as Java's ``JacksonUtils.toObject`` then ``genJson``:
    a union's default by its first branch, a number by the float/double it fills."""
    while isinstance(schema, Union):
        schema = schema.branches[0]
    kind = schema.type if schema is not None else None
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return json_text(value)
    if isinstance(value, int | float):
        if kind == "float":
            return _java_float(float(value))
        if kind == "double" or isinstance(value, float):
            return _java_double(float(value))
        return str(value)
    if isinstance(value, list):
        items = schema.items if isinstance(schema, Array) else None
        return "[" + ",".join(_typed_default(v, items) for v in value) + "]"
    if isinstance(value, dict):
        parts = []
        for k, v in value.items():
            inner: Node | None = None
            if isinstance(schema, Map):
                inner = schema.values
            elif isinstance(schema, Record):
                member = schema.field_named(k)
                inner = member.schema if member is not None else None
            parts.append(f"{json_text(k)}:{_typed_default(v, inner)}")
        return "{" + ",".join(parts) + "}"
    return json_text(value)


_LOGICAL_BASES = {
    "date": ("int",),
    "time-millis": ("int",),
    "time-micros": ("long",),
    "timestamp-millis": ("long",),
    "timestamp-micros": ("long",),
    "local-timestamp-millis": ("long",),
    "local-timestamp-micros": ("long",),
    "uuid": ("string",),
    "decimal": ("bytes", "fixed"),
}


def _logical_props(node: Node) -> str:
    """The leading ``logicalType`` (and decimal precision/scale) of a *valid* logical type;
    Avro ignores an invalid one, and so does normalisation."""
    name = node.props.get("logicalType")
    if not isinstance(name, str) or node.type not in _LOGICAL_BASES.get(name, ()):
        return ""
    if name != "decimal":
        return f',"logicalType":{json_text(name)}'
    precision = node.props.get("precision")
    scale = node.props.get("scale", 0)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (precision, scale)):
        return ""
    assert isinstance(precision, int) and isinstance(scale, int)
    if precision <= 0 or scale < 0 or scale > precision:
        return ""
    if isinstance(node, Fixed) and precision > math.floor(math.log10(2) * (8 * node.size - 1)):
        return ""
    text = f',"logicalType":"decimal","precision":{precision}'
    return text + (f',"scale":{scale}' if scale else "")
