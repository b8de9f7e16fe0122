"""Schema text -> node tree, refusing what Avro Java 1.11.4 refuses for a *new* schema.

Confluent parses a schema submitted for registration with strict name validation and
``validateDefaults=true`` (reference notes §12.4); what fails there is error 42201, so the
rules below are Java's, not the specification's and not fastavro's:

- the text must be one JSON document (no NaN/Infinity literals, nothing after it);
- a type is a primitive name, a defined name, a JSON array (union) or an object whose
  ``type`` is a string; ``{"type": {...}}`` is not a schema;
- names and enum symbols match ``[A-Za-z_][A-Za-z0-9_]*``; namespaces are dotted names
  (each part checked too, as Confluent's strict validator does); a named type cannot be
  defined twice nor be called after a primitive;
- records need a ``fields`` array with unique field names, enums a ``symbols`` array with
  unique symbols and an enum-level ``default`` among them, fixed an int ``size``; arrays need
  ``items``, maps ``values``; unions may not nest nor repeat a type (by name);
- a field default must fit the field's type: a union's default fits its **first** branch
  (Avro 1.11, which Confluent ships; fastavro and Avro 1.12 accept any branch), a record's
  default must give every field without a default of its own, int/long must be integral and in
  range. An enum or fixed field default is only checked to be a string, as in Java;
- a float/double field default written as a string ("NaN", "1.5") is read as a number, and
  a non-string enum-level ``default``, ``doc`` or ``namespace`` is ignored, as in Java.

Unknown keys are kept as custom properties, in their order, because Confluent keeps them in
the schema's identity.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from connect.registry.avro.errors import InvalidSchemaError
from connect.registry.avro.model import (
    MISSING,
    PRIMITIVE_TYPES,
    Array,
    Enum,
    Field,
    Fixed,
    Map,
    Named,
    Node,
    Primitive,
    Record,
    Union,
)

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# What Java's Double.valueOf accepts in practice for a float default given as a string.
_JAVA_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)[fFdD]?\Z")

_SCHEMA_RESERVED = frozenset(
    {"doc", "fields", "items", "name", "namespace", "size", "symbols", "values", "type",
     "aliases"}
)
_ENUM_RESERVED = _SCHEMA_RESERVED | {"default"}
_FIELD_RESERVED = frozenset({"default", "doc", "name", "order", "type", "aliases"})
_ORDERS = ("ascending", "descending", "ignore")

_INT_RANGE = (-(2**31), 2**31 - 1)
_LONG_RANGE = (-(2**63), 2**63 - 1)


def load_json(text: str) -> Any:
    """Parse JSON as Jackson does by default: NaN and Infinity literals are not JSON."""

    def refuse_constant(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON value")

    try:
        return json.loads(text, parse_constant=refuse_constant)
    except (ValueError, RecursionError) as exc:
        raise InvalidSchemaError(f"not valid JSON: {exc}") from None


class SchemaParser:
    """Parses schemas into one name space, as one Java ``Schema.Parser`` does.

    Referenced schemas are parsed first with the same parser, so the main schema can use
    their named types (and the compatibility checker sees them as the same nodes).
    """

    def __init__(self) -> None:
        self.names: dict[str, Named] = {}
        self._space: str | None = None

    def parse(self, text: str) -> Node:
        self._space = None
        return self._node(load_json(text), "")

    # -- names ---------------------------------------------------------------------------

    def _lookup(self, name: str) -> Node | None:
        """Java's ``Names.get``: primitive, then the current namespace, then the null one."""
        if name in PRIMITIVE_TYPES:
            return Primitive(name)
        if "." in name:
            return self.names.get(name)
        if self._space is not None:
            found = self.names.get(f"{self._space}.{name}")
            if found is not None:
                return found
        return self.names.get(name)

    def _split_name(self, name: str, space: str | None, path: str) -> tuple[str, str | None]:
        """A (simple name, namespace) pair, checked; a dotted name carries its namespace."""
        if "." in name:
            space, _, name = name.rpartition(".")
        _check_name(name, "name", path)
        if space == "":
            space = None
        if space is not None:
            for part in space.split("."):
                _check_name(part, "namespace part", path)
        return name, space

    def _define(self, node: Named, path: str) -> None:
        full = node.full_name
        if full in PRIMITIVE_TYPES:
            raise InvalidSchemaError(f"a named type may not be called after a primitive: "
                                     f"{full}", path=path)
        if full in self.names:
            raise InvalidSchemaError(f"the name {full} is already defined", path=path)
        self.names[full] = node

    # -- nodes ---------------------------------------------------------------------------

    def _node(self, value: Any, path: str) -> Node:
        if isinstance(value, str):
            found = self._lookup(value)
            if found is None:
                raise InvalidSchemaError(f"undefined name: {json.dumps(value)}", path=path)
            return found
        if isinstance(value, list):
            return self._union(value, path)
        if isinstance(value, dict):
            return self._object(value, path)
        raise InvalidSchemaError(f"a schema is a type name, an object or an array, "
                                 f"not {json.dumps(value)}", path=path)

    def _union(self, value: list[Any], path: str) -> Union:
        branches: list[Node] = []
        seen: set[str] = set()
        for i, item in enumerate(value):
            branch = self._node(item, f"{path}/{i}")
            if isinstance(branch, Union):
                raise InvalidSchemaError("a union may not directly contain another union",
                                         path=f"{path}/{i}")
            key = branch.full_name if isinstance(branch, Named) else branch.type
            if key in seen:
                raise InvalidSchemaError(f"the union contains {key} twice", path=f"{path}/{i}")
            seen.add(key)
            branches.append(branch)
        return Union("union", branches=branches)

    def _object(self, obj: dict[str, Any], path: str) -> Node:
        kind = obj.get("type")
        if kind is None:
            raise InvalidSchemaError('a schema object needs a "type"', path=path)
        if not isinstance(kind, str):
            raise InvalidSchemaError(
                'the "type" of a schema object must be a string; a nested type object or '
                "union belongs in a field's \"type\"", path=f"{path}/type")
        saved_space = self._space
        name: tuple[str, str | None] | None = None
        doc = None
        if kind in ("record", "error", "enum", "fixed"):
            space = obj.get("namespace")
            space = space if isinstance(space, str) else self._space
            raw_name = obj.get("name")
            if not isinstance(raw_name, str):
                raise InvalidSchemaError(f"a {kind} needs a string \"name\"", path=path)
            name = self._split_name(raw_name, space, f"{path}/name")
            doc = obj.get("doc") if isinstance(obj.get("doc"), str) else None
            self._space = name[1]
        try:
            node = self._typed(kind, obj, name, doc, path)
        finally:
            self._space = saved_space
        if node is None:  # {"type": "SomeName"}: a reference to a defined name
            found = self.names.get(_qualify(kind, self._space))
            if found is None:
                raise InvalidSchemaError(f"unknown type: {json.dumps(kind)}",
                                         path=f"{path}/type")
            return found
        reserved = _ENUM_RESERVED if isinstance(node, Enum) else _SCHEMA_RESERVED
        node.props = {k: v for k, v in obj.items() if k not in reserved}
        if isinstance(node, Named):
            for alias in _aliases(obj, path):
                node.aliases.append(self._split_name(alias, node.space, f"{path}/aliases"))
        return node

    def _typed(self, kind: str, obj: dict[str, Any], name: tuple[str, str | None] | None,
               doc: str | None, path: str) -> Node | None:
        if kind in PRIMITIVE_TYPES:
            return Primitive(kind)
        if kind in ("record", "error"):
            assert name is not None
            record = Record("record", name=name[0], space=name[1], doc=doc,
                            is_error=kind == "error")
            self._define(record, path)
            fields = obj.get("fields")
            if not isinstance(fields, list):
                raise InvalidSchemaError(f"record {record.full_name} needs a \"fields\" array",
                                         path=path)
            parsed: list[Field] = []
            for i, raw in enumerate(fields):
                f = self._field(raw, i, f"{path}/fields/{i}")
                if any(p.name == f.name for p in parsed):
                    raise InvalidSchemaError(
                        f"duplicate field {f.name} in record {record.full_name}",
                        path=f"{path}/fields/{i}")
                parsed.append(f)
            record.fields = parsed
            return record
        if kind == "enum":
            assert name is not None
            symbols = obj.get("symbols")
            if not isinstance(symbols, list):
                raise InvalidSchemaError("an enum needs a \"symbols\" array", path=path)
            for i, symbol in enumerate(symbols):
                if not isinstance(symbol, str):
                    raise InvalidSchemaError(f"enum symbol {json.dumps(symbol)} is not a string",
                                             path=f"{path}/symbols/{i}")
                _check_name(symbol, "enum symbol", f"{path}/symbols/{i}")
                if symbol in symbols[:i]:
                    raise InvalidSchemaError(f"duplicate enum symbol: {symbol}",
                                             path=f"{path}/symbols/{i}")
            default = obj.get("default")
            default = default if isinstance(default, str) else None
            if default is not None and default not in symbols:
                raise InvalidSchemaError(
                    f"the enum default {default} is not one of the symbols {json.dumps(symbols)}",
                    path=f"{path}/default")
            enum = Enum("enum", name=name[0], space=name[1], doc=doc, symbols=list(symbols),
                        default=default)
            self._define(enum, path)
            return enum
        if kind == "array":
            if "items" not in obj:
                raise InvalidSchemaError("an array needs \"items\"", path=path)
            return Array("array", items=self._node(obj["items"], f"{path}/items"))
        if kind == "map":
            if "values" not in obj:
                raise InvalidSchemaError("a map needs \"values\"", path=path)
            return Map("map", values=self._node(obj["values"], f"{path}/values"))
        if kind == "fixed":
            assert name is not None
            size = obj.get("size")
            if (not isinstance(size, int) or isinstance(size, bool)
                    or not 0 <= size <= _INT_RANGE[1]):
                raise InvalidSchemaError(f"a fixed needs a non-negative int \"size\", "
                                         f"not {json.dumps(size)}", path=f"{path}/size")
            fixed = Fixed("fixed", name=name[0], space=name[1], doc=doc, size=size)
            self._define(fixed, path)
            return fixed
        return None

    def _field(self, raw: Any, pos: int, path: str) -> Field:
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
            raise InvalidSchemaError("a field needs a string \"name\"", path=path)
        name = raw["name"]
        _check_name(name, "field name", f"{path}/name")
        if "type" not in raw:
            raise InvalidSchemaError(f"field {name} has no \"type\"", path=path)
        type_value = raw["type"]
        if isinstance(type_value, str) and self._lookup(type_value) is None:
            raise InvalidSchemaError(
                f"{json.dumps(type_value)} is not a defined name; the type of field {name} "
                "must be a defined name or a {\"type\": ...} expression", path=f"{path}/type")
        schema = self._node(type_value, f"{path}/type")
        order = raw.get("order", "ascending")
        if not isinstance(order, str) or order.lower() not in _ORDERS:
            raise InvalidSchemaError(f"field {name} has an invalid order {json.dumps(order)}",
                                     path=f"{path}/order")
        default = raw.get("default", MISSING)
        if default is not MISSING:
            if schema.type in ("float", "double") and isinstance(default, str):
                default = _java_double(default, name, f"{path}/default")
            _check_default(name, schema, default, f"{path}/default")
        doc = raw.get("doc")
        return Field(
            name=name, schema=schema, pos=pos, doc=doc if isinstance(doc, str) else None,
            default=default, order=order.lower(), aliases=list(_aliases(raw, path)),
            props={k: v for k, v in raw.items() if k not in _FIELD_RESERVED},
        )


def parse_with_references(text: str, references: Mapping[str, str] | None
                          ) -> tuple[Node, dict[str, Named]]:
    """The main schema's node and the named types its references define (full name -> node)."""
    parser = SchemaParser()
    for ref_name, ref_text in (references or {}).items():
        try:
            parser.parse(ref_text)
        except InvalidSchemaError as exc:
            raise InvalidSchemaError(f"referenced schema {ref_name}: {exc.reason}",
                                     path=exc.path) from None
    from_refs = dict(parser.names)
    return parser.parse(text), from_refs


def _qualify(name: str, space: str | None) -> str:
    return name if "." in name or not space else f"{space}.{name}"


def _check_name(name: str, what: str, path: str) -> None:
    if not _NAME.match(name):
        problem = "is empty" if not name else "must match [A-Za-z_][A-Za-z0-9_]*"
        raise InvalidSchemaError(f"{what} {json.dumps(name)} {problem}", path=path)


def _aliases(obj: dict[str, Any], path: str) -> list[str]:
    aliases = obj.get("aliases")
    if aliases is None:
        return []
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise InvalidSchemaError("\"aliases\" must be an array of strings",
                                 path=f"{path}/aliases")
    return list(dict.fromkeys(aliases))


def _java_double(text: str, field: str, path: str) -> float:
    stripped = text.strip()
    if not _JAVA_DOUBLE.match(stripped):
        raise InvalidSchemaError(f"invalid default for field {field}: {json.dumps(text)} "
                                 "is not a number", path=path)
    return float(stripped.rstrip("fFdD").replace("Infinity", "inf"))


def _is_int(value: Any, bounds: tuple[int, int]) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)
            and bounds[0] <= value <= bounds[1])


def is_valid_default(schema: Node, value: Any) -> bool:
    """Java's ``Schema.isValidDefault`` (1.11): the JSON value fits the schema."""
    kind = schema.type
    if kind in ("string", "bytes", "enum", "fixed"):
        return isinstance(value, str)
    if kind == "int":
        return _is_int(value, _INT_RANGE)
    if kind == "long":
        return _is_int(value, _LONG_RANGE)
    if kind in ("float", "double"):
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "null":
        return value is None
    if isinstance(schema, Array):
        return isinstance(value, list) and all(is_valid_default(schema.items, v) for v in value)
    if isinstance(schema, Map):
        return isinstance(value, dict) and all(
            is_valid_default(schema.values, v) for v in value.values())
    if isinstance(schema, Union):
        return is_valid_default(schema.branches[0], value)
    if isinstance(schema, Record):
        if not isinstance(value, dict):
            return False
        if schema.fields is None:  # a record used in its own definition's defaults
            return False
        for f in schema.fields:
            member = value.get(f.name, f.default)
            if member is MISSING or not is_valid_default(f.schema, member):
                return False
        return True
    return False


def _check_default(field: str, schema: Node, value: Any, path: str) -> None:
    if is_valid_default(schema, value):
        return
    from connect.registry.avro.canonical import canonical_text, json_text

    shown = json_text(value) if not (isinstance(value, float) and math.isnan(value)) else "NaN"
    hint = ""
    if isinstance(schema, Union):
        hint = (f" (a union field's default must match the union's first branch, "
                f"{canonical_text(schema.branches[0])})")
    raise InvalidSchemaError(
        f"invalid default for field {field}: {shown} is not a {canonical_text(schema)}{hint}",
        path=path)
