"""ExtractField, HoistField, Flatten, ReplaceField, ValueToKey, SetSchemaMetadata."""

from __future__ import annotations

import pytest

from connect.api import (
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_INT32_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    ConfigError,
    DataError,
    Schema,
    SchemaError,
    Struct,
    Type,
)
from connect.transforms.extract import ExtractFieldKey, ExtractFieldValue
from connect.transforms.flatten import FlattenKey, FlattenValue
from connect.transforms.hoist import HoistFieldKey, HoistFieldValue
from connect.transforms.replace import ReplaceFieldKey, ReplaceFieldValue
from connect.transforms.schema_metadata import SetSchemaMetadataKey, SetSchemaMetadataValue
from connect.transforms.value_to_key import ValueToKey

from .conftest import configured

PERSON = Schema.struct(
    [("id", INT32_SCHEMA), ("name", STRING_SCHEMA), ("age", OPTIONAL_INT32_SCHEMA)],
    name="Person",
    version=1,
)


def person(**values) -> Struct:
    base = {"id": 1, "name": "ann", "age": 30}
    base.update(values)
    return Struct(PERSON, base)


# ---------------------------------------------------------------- ExtractField


def test_extract_with_schema(sink):
    out = configured(ExtractFieldValue, field="name").apply(
        sink(value_schema=PERSON, value=person())
    )
    assert out.value == "ann" and out.value_schema == STRING_SCHEMA


def test_extract_key_schemaless(sink):
    xf = configured(ExtractFieldKey, field="id")
    assert xf.apply(sink(key={"id": 7})).key == 7
    assert xf.apply(sink(key={"other": 7})).key is None
    assert xf.apply(sink(key=None)).key is None


def test_extract_unknown_field_with_schema(sink):
    with pytest.raises(DataError, match="Unknown field"):
        configured(ExtractFieldValue, field="nope").apply(sink(value_schema=PERSON, value=person()))


def test_extract_tombstone_keeps_field_schema(sink):
    out = configured(ExtractFieldValue, field="age").apply(sink(value_schema=PERSON, value=None))
    assert out.value is None and out.value_schema == OPTIONAL_INT32_SCHEMA


def test_extract_field_default_replaces_null(sink):
    schema = Schema.struct([("n", Schema(Type.INT32, optional=True, default=9))])
    record = sink(value_schema=schema, value=Struct(schema, {"n": None}))
    assert configured(ExtractFieldValue, field="n").apply(record).value == 9
    plain = configured(ExtractFieldValue, field="n", replace__null__with__default="false")
    assert plain.apply(record).value is None


def test_extract_nested_path_v2(sink):
    inner = Schema.struct([("b.c", INT32_SCHEMA)])
    outer = Schema.struct([("a", inner)])
    record = sink(value_schema=outer, value=Struct(outer, {"a": Struct(inner, {"b.c": 4})}))
    xf = configured(ExtractFieldValue, field="a.`b.c`", field__syntax__version="V2")
    assert xf.apply(record).value == 4
    assert xf.apply(sink(value={"a": {"b.c": 5}})).value == 5
    # V1 (the default) reads the name as is.
    assert configured(ExtractFieldValue, field="a.b").apply(sink(value={"a.b": 1})).value == 1


# ------------------------------------------------------------------ HoistField


def test_hoist_with_schema(sink):
    out = configured(HoistFieldValue, field="wrapped").apply(
        sink(value_schema=INT64_SCHEMA, value=5)
    )
    assert out.value_schema.fields[0].name == "wrapped"
    assert out.value_schema.fields[0].schema == INT64_SCHEMA
    assert out.value.get("wrapped") == 5
    out.value.validate()


def test_hoist_schemaless_key(sink):
    assert configured(HoistFieldKey, field="k").apply(sink(key=3)).key == {"k": 3}


def test_hoist_null_into_required_field_fails(sink):
    with pytest.raises(SchemaError):
        configured(HoistFieldValue, field="v").apply(sink(value_schema=INT64_SCHEMA, value=None))


# --------------------------------------------------------------------- Flatten


def test_flatten_nested_structs_with_delimiter(sink):
    leaf = Schema.struct([("x", INT32_SCHEMA), ("tags", Schema.array(STRING_SCHEMA))])
    mid = Schema.struct([("leaf", leaf), ("y", STRING_SCHEMA)], optional=True)
    top = Schema.struct([("mid", mid), ("z", INT32_SCHEMA)], name="Top")
    value = Struct(
        top,
        {"mid": Struct(mid, {"leaf": Struct(leaf, {"x": 1, "tags": ["a"]}), "y": "w"}), "z": 2},
    )
    out = configured(FlattenValue, delimiter="_").apply(sink(value_schema=top, value=value))
    names = [f.name for f in out.value_schema.fields]
    assert names == ["mid_leaf_x", "mid_leaf_tags", "mid_y", "z"]
    assert out.value.to_dict() == {"mid_leaf_x": 1, "mid_leaf_tags": ["a"], "mid_y": "w", "z": 2}
    # Under an optional struct every flattened field is optional; arrays are kept.
    assert out.value_schema.field("mid_leaf_x").schema.optional
    assert out.value_schema.field("mid_leaf_tags").schema.value_schema == STRING_SCHEMA
    assert not out.value_schema.field("z").schema.optional
    assert out.value_schema.name == "Top"
    out.value.validate()
    empty = configured(FlattenValue).apply(
        sink(value_schema=top, value=Struct(top, {"mid": None, "z": 3}))
    )
    assert empty.value.to_dict() == {
        "mid.leaf.x": None,
        "mid.leaf.tags": None,
        "mid.y": None,
        "z": 3,
    }


def test_flatten_schemaless(sink):
    nested = {"a": {"b": {"c": 1}, "d": [1, {"e": 2}]}, "f": None}
    out = configured(FlattenKey).apply(sink(key=nested))
    assert out.key == {"a.b.c": 1, "a.d": [1, {"e": 2}], "f": None}


def test_flatten_tombstone(sink):
    record = sink(value=None)
    assert configured(FlattenValue).apply(record) is record


# ---------------------------------------------------------------- ReplaceField


def test_replace_exclude_include_rename_with_schema(sink):
    xf = configured(ReplaceFieldValue, exclude="age", renames="name:full_name,id:pk")
    out = xf.apply(sink(value_schema=PERSON, value=person()))
    assert [f.name for f in out.value_schema.fields] == ["pk", "full_name"]
    assert out.value.to_dict() == {"pk": 1, "full_name": "ann"}
    assert out.value_schema.name == "Person"
    only = configured(ReplaceFieldValue, include="id,age").apply(
        sink(value_schema=PERSON, value=person())
    )
    assert only.value.to_dict() == {"id": 1, "age": 30}


def test_replace_exclude_wins_over_include(sink):
    out = configured(ReplaceFieldKey, include="a,b", exclude="b").apply(
        sink(key={"a": 1, "b": 2, "c": 3})
    )
    assert out.key == {"a": 1}


def test_replace_deprecated_names(sink):
    out = configured(ReplaceFieldValue, blacklist="b").apply(sink(value={"a": 1, "b": 2}))
    assert out.value == {"a": 1}
    out = configured(ReplaceFieldValue, whitelist="b").apply(sink(value={"a": 1, "b": 2}))
    assert out.value == {"b": 2}
    # The current name wins when both are given.
    out = configured(ReplaceFieldValue, exclude="a", blacklist="b").apply(
        sink(value={"a": 1, "b": 2})
    )
    assert out.value == {"b": 2}


def test_replace_tombstone_and_bad_renames(sink):
    record = sink(value=None)
    assert configured(ReplaceFieldValue, exclude="a").apply(record) is record
    for bad in ("a", "a:b:c", ":b"):
        with pytest.raises(ConfigError) as info:
            configured(ReplaceFieldValue, renames=bad)
        assert info.value.name == "renames"


# ------------------------------------------------------------------ ValueToKey


def test_value_to_key_with_schema(sink):
    out = configured(ValueToKey, fields="id,name").apply(
        sink(key=None, value_schema=PERSON, value=person())
    )
    assert [f.name for f in out.key_schema.fields] == ["id", "name"]
    assert out.key.to_dict() == {"id": 1, "name": "ann"}
    assert out.value == person()


def test_value_to_key_schemaless_and_errors(sink):
    out = configured(ValueToKey, fields="a").apply(sink(value={"a": 1, "b": 2}))
    assert out.key == {"a": 1} and out.key_schema is None
    with pytest.raises(DataError, match="Field does not exist"):
        configured(ValueToKey, fields="nope").apply(sink(value_schema=PERSON, value=person()))
    with pytest.raises(ConfigError) as info:
        configured(ValueToKey, fields="")
    assert info.value.name == "fields"


# ------------------------------------------------------------- SetSchemaMetadata


def test_set_schema_metadata(sink):
    xf = configured(SetSchemaMetadataValue, schema__name="com.example.P", schema__version="3")
    out = xf.apply(sink(value_schema=PERSON, value=person()))
    assert out.value_schema.name == "com.example.P" and out.value_schema.version == 3
    assert out.value.schema is out.value_schema
    assert out.value.to_dict() == person().to_dict()
    key = configured(SetSchemaMetadataKey, schema__version="2").apply(
        sink(key_schema=OPTIONAL_STRING_SCHEMA, key=None)
    )
    assert key.key_schema.version == 2 and key.key_schema.type is Type.STRING


def test_set_schema_metadata_needs_a_schema_and_a_setting(sink):
    with pytest.raises(DataError, match="Schema required"):
        configured(SetSchemaMetadataValue, schema__name="x").apply(sink(value={"a": 1}))
    with pytest.raises(ConfigError):
        configured(SetSchemaMetadataValue)
    with pytest.raises(ConfigError) as info:
        configured(SetSchemaMetadataValue, schema__version="one")
    assert info.value.name == "schema.version"
