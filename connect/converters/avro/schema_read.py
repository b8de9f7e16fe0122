"""Avro schemas → Connect schemas (`to_connect`), and Avro defaults → Connect values
(`default_from_avro`): the reading half of the mapping `schema` documents (its module
docstring has the table both directions share). `_ToConnect.convert` says its steps.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from connect.api.data import Schema, Struct, Type
from connect.api.errors import DataError
from connect.api.logical import Date, Decimal, Time, Timestamp
from connect.converters.avro.schema import (
    AVRO_ENUM_DEFAULT_PREFIX_PROP,
    AVRO_ENUM_DOC_PREFIX_PROP,
    AVRO_FIELD_DEFAULT_FLAG_PROP,
    AVRO_FIELD_DOC_PREFIX_PROP,
    AVRO_RECORD_DOC_PROP,
    AVRO_TYPE_ENUM,
    AVRO_TYPE_UNION,
    CONNECT_DECIMAL_PRECISION_PROP,
    CONNECT_DEFAULT_VALUE_PROP,
    CONNECT_DOC_PROP,
    CONNECT_FIXED_SIZE_PROP,
    CONNECT_INTERNAL_TYPE_NAME,
    CONNECT_NAME_PROP,
    CONNECT_PARAMETERS_PROP,
    CONNECT_TYPE_PROP,
    CONNECT_VERSION_PROP,
    DECIMAL_PRECISION_DEFAULT,
    DEFAULT_SCHEMA_FULL_NAME,
    KEY_FIELD,
    MAP_ENTRY_TYPE_NAME,
    NAMESPACE,
    VALUE_FIELD,
)

__all__ = ["default_from_avro", "to_connect"]

_GENERATED_NAME = re.compile(re.escape(NAMESPACE) + r"\.(ConnectDefault|MapEntry)\d*")
_NO_DEFAULT: Any = object()  # "this Avro field has no default" (null is a default)


def to_connect(avro: Any, *, version: int | None = None) -> Schema:
    """The Connect schema for a parsed Avro schema (fastavro's `parse_schema` output:
    full names, named types referenced by full name). `version` (a registry version)
    fills in the Connect version when the schema carries no `connect.version`."""
    return _ToConnect().convert(avro, version=version)


@dataclass(slots=True)
class _Shape:
    """What an Avro type says of itself (step 2 of `_ToConnect.convert`): the Connect
    type, name, version, parameters and children, before the `connect.*` properties."""

    type: Type
    params: dict[str, str] = field(default_factory=dict)
    name: str | None = None
    version: int | None = None
    fields: list[tuple[str, Schema]] = field(default_factory=list)
    key_schema: Schema | None = None
    value_schema: Schema | None = None


class _ToConnect:
    """One conversion (a schema and the named types it defines as it goes).

    `convert` maps one Avro schema in five steps:
    1. resolve: a name refers to a type defined earlier, a union becomes the optional
       schema or the Connect union struct, a type nested in `type` is followed; a
       record, enum or fixed registers its name (a recursive one is refused);
    2. shape: what the Avro type says of itself (`_shape`, one helper per kind);
    3. Connect properties: `connect.version`, `connect.parameters`, the `avro*`
       properties and `connect.name` are checked against the shape and override it;
    4. build the Schema (a struct through `Schema.struct`);
    5. default: an Avro field default wins over `connect.default`.
    """

    def __init__(self) -> None:
        self.named: dict[str, Any] = {}  # full name → its parsed Avro definition
        self.in_progress: set[str] = set()

    def convert(
        self,
        avro: Any,
        *,
        optional: bool = False,
        field_default: Any = _NO_DEFAULT,
        version: int | None = None,
    ) -> Schema:
        # Step 1: resolve.
        has_field_default = field_default is not _NO_DEFAULT
        if isinstance(avro, str):
            avro = self.named.get(avro, {"type": avro})
        if isinstance(avro, list):
            return self._union(
                avro,
                optional=optional,
                field_default=field_default,
                has_field_default=has_field_default,
            )
        kind = avro["type"]
        if isinstance(kind, (dict, list)):
            return self.convert(kind, optional=optional, field_default=field_default)
        if kind in self.named and kind not in ("record", "enum", "fixed"):
            return self.convert(self.named[kind], optional=optional, field_default=field_default)
        if kind in ("record", "enum", "fixed"):
            full = avro["name"]
            if full in self.in_progress:
                raise DataError(f"recursive Avro type {full!r} has no Connect equivalent")
            self.named[full] = avro
        # Step 2: shape.
        shape = self._shape(avro, kind)
        # Step 3: Connect properties.
        shape.version = _connect_version(avro, shape.version, version)
        _connect_parameters(avro, shape.params)
        shape.name = _connect_name(avro, kind, shape.name)
        # Step 4: build.
        schema = _build(shape, optional=optional, doc=avro.get(CONNECT_DOC_PROP))
        # Step 5: default.
        return _with_default(schema, avro, field_default, has_field_default=has_field_default)

    def _shape(self, avro: Mapping[str, Any], kind: Any) -> _Shape:
        """Step 2: what the Avro type of `kind` says of itself."""
        logical = avro.get("logicalType")
        if kind == "boolean":
            return _Shape(Type.BOOLEAN)
        if kind in ("bytes", "fixed"):
            return _bytes_shape(avro, kind, logical)
        if kind == "double":
            return _Shape(Type.FLOAT64)
        if kind == "float":
            return _Shape(Type.FLOAT32)
        if kind == "int":
            return _int_shape(avro, logical)
        if kind == "long":
            if logical == "timestamp-millis":
                return _Shape(Type.INT64, name=Timestamp.LOGICAL_NAME, version=1)
            return _Shape(Type.INT64)
        if kind == "string":
            return _Shape(Type.STRING)
        if kind == "enum":
            return _enum_shape(avro)
        if kind == "array":
            return self._array_shape(avro)
        if kind == "map":
            return _Shape(
                Type.MAP, key_schema=Schema(Type.STRING), value_schema=self.convert(avro["values"])
            )
        if kind == "record":
            return self._record_shape(avro)
        if kind == "null":
            raise DataError("Standalone null schemas are not supported by this converter")
        raise DataError(f"Couldn't translate unsupported schema type {kind}.")

    def _array_shape(self, avro: Mapping[str, Any]) -> _Shape:
        """An array, or a map written as an array of key/value records (a map whose
        keys are not required strings: see the module docstring)."""
        items = avro["items"]
        entry = self.named.get(items, items) if isinstance(items, str) else items
        if not _is_map_entry(entry):
            return _Shape(Type.ARRAY, value_schema=self.convert(items))
        self.convert(items)  # registers the entry's name
        by_name = {f["name"]: f for f in entry["fields"]}
        if len(entry["fields"]) != 2 or set(by_name) != {KEY_FIELD, VALUE_FIELD}:
            raise DataError(
                "Found map encoded as array of key-value pairs, but array elements "
                "do not match the expected format."
            )
        return _Shape(
            Type.MAP,
            key_schema=self.convert(by_name[KEY_FIELD]["type"]),
            value_schema=self.convert(by_name[VALUE_FIELD]["type"]),
        )

    def _record_shape(self, avro: Mapping[str, Any]) -> _Shape:
        """A struct: one field per Avro field, each with its Avro default; the docs of
        the record and of its fields kept as parameters."""
        shape = _Shape(Type.STRUCT, name=avro["name"])
        self.in_progress.add(avro["name"])
        if avro.get("doc") is not None:
            shape.params[AVRO_RECORD_DOC_PROP] = avro["doc"]
        for f in avro["fields"]:
            if f.get("doc") is not None:
                shape.params[AVRO_FIELD_DOC_PREFIX_PROP + f["name"]] = f["doc"]
            fdefault = f.get("default", _NO_DEFAULT)
            shape.fields.append((f["name"], self.convert(f["type"], field_default=fdefault)))
        self.in_progress.discard(avro["name"])
        return shape

    def _union(
        self, branches: list[Any], *, optional: bool, field_default: Any, has_field_default: bool
    ) -> Schema:
        if len(branches) == 2 and "null" in branches:
            other = branches[0] if branches[1] == "null" else branches[1]
            return self.convert(other, optional=True, field_default=field_default)
        fields: list[tuple[str, Schema]] = []
        is_optional = optional
        for branch in branches:
            if branch == "null":
                is_optional = True
                continue
            member = self.convert(branch, optional=True)
            field_name = _union_field_name(branch, self.named)
            if any(n == field_name for n, _ in fields):
                raise DataError("Multiple union schemas map to the Connect union field name")
            fields.append((field_name, member))
        return Schema.struct(fields, name=AVRO_TYPE_UNION, optional=is_optional)


def _union_field_name(branch: Any, named: Mapping[str, Any]) -> str:
    if isinstance(branch, str):
        if branch in named:
            return branch.rpartition(".")[2]
        return branch
    kind = branch["type"]
    if kind in ("record", "enum", "fixed"):
        return str(branch["name"]).rpartition(".")[2]
    if isinstance(kind, str) and kind in named:
        return kind.rpartition(".")[2]
    return str(kind)


def _bytes_shape(avro: Mapping[str, Any], kind: str, logical: Any) -> _Shape:
    """bytes or fixed (its size kept as `connect.fixed.size`), either of them a
    Decimal when its logical type says so."""
    shape = _Shape(Type.BYTES)
    if kind == "fixed":
        shape.params[CONNECT_FIXED_SIZE_PROP] = str(avro["size"])
        shape.name = avro["name"]
    if logical == "decimal":
        scale = avro.get("scale", 0)
        if not isinstance(scale, int):
            raise DataError("scale must be specified and must be a number")
        shape.params[Decimal.SCALE_FIELD] = str(scale)
        precision = avro.get("precision")
        if precision is not None and precision != DECIMAL_PRECISION_DEFAULT:
            shape.params[CONNECT_DECIMAL_PRECISION_PROP] = str(precision)
        shape.name, shape.version = Decimal.LOGICAL_NAME, 1
    return shape


def _int_shape(avro: Mapping[str, Any], logical: Any) -> _Shape:
    """int32, a Date or Time by its logical type, or int8/int16 by `connect.type`."""
    if logical == "date":
        return _Shape(Type.INT32, name=Date.LOGICAL_NAME, version=1)
    if logical == "time-millis":
        return _Shape(Type.INT32, name=Time.LOGICAL_NAME, version=1)
    connect_type = avro.get(CONNECT_TYPE_PROP)
    if connect_type is not None and logical is None:
        if connect_type not in ("int8", "int16"):
            raise DataError(f"unknown connect.type {connect_type!r} on an Avro int")
        return _Shape(Type(connect_type))
    return _Shape(Type.INT32)


def _enum_shape(avro: Mapping[str, Any]) -> _Shape:
    """A string whose parameters keep the enum's name, doc, default and symbols, so
    writing the schema back gives the same enum."""
    shape = _Shape(Type.STRING)
    short = avro["name"].rpartition(".")[2]
    if avro.get("doc") is not None:
        shape.params[AVRO_ENUM_DOC_PREFIX_PROP + short] = avro["doc"]
    if avro.get("default") is not None:
        shape.params[AVRO_ENUM_DEFAULT_PREFIX_PROP + short] = avro["default"]
    shape.params[AVRO_TYPE_ENUM] = avro["name"]
    for symbol in avro["symbols"]:
        shape.params[f"{AVRO_TYPE_ENUM}.{symbol}"] = symbol
    shape.name = avro["name"]
    return shape


def _connect_version(
    avro: Mapping[str, Any], shaped: int | None, version: int | None
) -> int | None:
    """Step 3: `connect.version` (which must agree with a logical type's version),
    else the shape's, else the registry version the caller gave."""
    connect_version = avro.get(CONNECT_VERSION_PROP)
    if connect_version is not None:
        if not isinstance(connect_version, int) or isinstance(connect_version, bool):
            raise DataError(f"Invalid Connect version found: {connect_version}")
        if shaped is not None and shaped != connect_version:
            raise DataError(f"Mismatched versions: {shaped} differs from {connect_version}")
        return connect_version
    if shaped is None and version is not None:
        return version
    return shaped


def _connect_parameters(avro: Mapping[str, Any], params: dict[str, str]) -> None:
    """Step 3: `connect.parameters` (strings only), then every `avro*` property, added
    to `params` after the shape's own (the order writing the schema back keeps)."""
    connect_params = avro.get(CONNECT_PARAMETERS_PROP)
    if connect_params is not None:
        if not isinstance(connect_params, Mapping):
            raise DataError(
                f"Expected JSON object for schema parameters but found: {connect_params}"
            )
        for k, v in connect_params.items():
            if not isinstance(v, str):
                raise DataError(f"Expected schema parameter values to be strings: {v!r}")
            params[k] = v
    for k, v in avro.items():
        if k.startswith("avro"):
            params[k] = v if isinstance(v, str) else str(v)


def _connect_name(avro: Mapping[str, Any], kind: Any, name: str | None) -> str | None:
    """Step 3: `connect.name` (a logical type's must match; a record or enum may be
    renamed), and no name at all for the names Connect's own writer made up."""
    connect_name = avro.get(CONNECT_NAME_PROP)
    if connect_name is not None:
        if not isinstance(connect_name, str):
            raise DataError(f"Invalid schema name: {connect_name}")
        if name is not None and name != connect_name and kind not in ("record", "enum"):
            raise DataError(f"Mismatched names: {name} differs from {connect_name}")
        name = connect_name
    if name is not None and (name == DEFAULT_SCHEMA_FULL_NAME or _GENERATED_NAME.fullmatch(name)):
        return None
    return name


def _build(shape: _Shape, *, optional: bool, doc: str | None) -> Schema:
    """Step 4: the Schema of a finished shape."""
    if shape.type is Type.STRUCT:
        return Schema.struct(
            shape.fields,
            name=shape.name,
            optional=optional,
            version=shape.version,
            doc=doc,
            parameters=shape.params,
        )
    return Schema(
        shape.type,
        optional=optional,
        name=shape.name,
        version=shape.version,
        doc=doc,
        parameters=shape.params,
        key_schema=shape.key_schema,
        value_schema=shape.value_schema,
    )


def _with_default(
    schema: Schema, avro: Mapping[str, Any], field_default: Any, *, has_field_default: bool
) -> Schema:
    """Step 5: an Avro field default wins over `connect.default`; a field whose Avro
    default is null has no default."""
    connect_default = avro.get(CONNECT_DEFAULT_VALUE_PROP)
    if has_field_default and field_default is not None:
        # Marks a default that came from the Avro field, so writing the schema back
        # does not add a `connect.default` for it (a null default needs no mark).
        if connect_default is None:
            schema = schema.with_(
                parameters={**schema.parameters, AVRO_FIELD_DEFAULT_FLAG_PROP: "true"}
            )
        default_json = field_default
    elif has_field_default:
        default_json = None
    else:
        default_json = connect_default
    if default_json is not None:
        schema = schema.with_(default=default_from_avro(schema, default_json))
    return schema


def _is_map_entry(avro: Any) -> bool:
    if not isinstance(avro, dict) or avro.get("type") != "record":
        return False
    name = str(avro.get("name", ""))
    return (
        name == f"{NAMESPACE}.{MAP_ENTRY_TYPE_NAME}"
        or bool(_GENERATED_NAME.fullmatch(name) and MAP_ENTRY_TYPE_NAME in name)
        or avro.get(CONNECT_INTERNAL_TYPE_NAME) == MAP_ENTRY_TYPE_NAME
    )


def default_from_avro(schema: Schema, value: Any) -> Any:
    """The JSON of an Avro default as a Connect value of `schema`."""
    if value is None:
        return None
    name = schema.name
    try:
        if name == Decimal.LOGICAL_NAME:
            if isinstance(value, str):
                value = value.encode("iso-8859-1")
            return Decimal.to_logical(schema, value)
        if name == Date.LOGICAL_NAME:
            return Date.to_logical(schema, int(value))
        if name == Time.LOGICAL_NAME:
            return Time.to_logical(schema, int(value))
        if name == Timestamp.LOGICAL_NAME:
            return Timestamp.to_logical(schema, int(value))
        t = schema.type
        if t is Type.BYTES:
            return value.encode("iso-8859-1") if isinstance(value, str) else bytes(value)
        if t in (Type.FLOAT32, Type.FLOAT64):
            return float(value)
        if t is Type.ARRAY:
            assert schema.value_schema is not None
            return [default_from_avro(schema.value_schema, v) for v in value]
        if t is Type.MAP:
            assert schema.key_schema is not None and schema.value_schema is not None
            if isinstance(value, list):
                return {
                    default_from_avro(schema.key_schema, e[KEY_FIELD]): default_from_avro(
                        schema.value_schema, e[VALUE_FIELD]
                    )
                    for e in value
                }
            return {k: default_from_avro(schema.value_schema, v) for k, v in value.items()}
        if t is Type.STRUCT:
            if schema.name == AVRO_TYPE_UNION:
                return None  # a union default is its first branch: not representable here
            # Each field's value is this function's reading of the field's default:
            # not checked again (a default is the schema author's, read as written).
            return Struct.trusted(
                schema,
                [
                    default_from_avro(f.schema, value[f.name]) if f.name in value else None
                    for f in schema.fields
                ],
            )
    except (TypeError, ValueError, AttributeError, KeyError) as exc:
        raise DataError(f"invalid default {value!r} for {schema!r}: {exc}") from exc
    return value
