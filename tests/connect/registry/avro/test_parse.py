"""What Avro Java 1.11.4 refuses for a new schema (42201), and what it lets through."""

from __future__ import annotations

import json
from typing import Any

import fastavro
import pytest

from connect.registry.avro import AvroSchema, InvalidSchemaError
from tests.connect.registry.avro._schemas import enum, fixed, fld, rec, schema

INVALID_TEXT = [
    pytest.param("{", "not valid JSON", id="bad-json"),
    pytest.param('"int" "long"', "not valid JSON", id="dangling-content"),
    pytest.param('{"type":"record","name":"R","fields":[{"name":"a","type":"double",'
                 '"default":NaN}]}', "not valid JSON", id="nan-literal"),
    pytest.param("", "not valid JSON", id="empty"),
]

INVALID: list[Any] = [
    pytest.param("foo", "undefined name", id="unknown-type-name"),
    pytest.param({"type": "integer"}, "unknown type", id="unknown-type-object"),
    pytest.param(rec("R", fld("a", "Missing")), "is not a defined name", id="unknown-field-type"),
    pytest.param({"name": "x"}, 'needs a "type"', id="no-type"),
    pytest.param({"type": {"type": "int"}}, "must be a string", id="type-object-in-type"),
    pytest.param(42, "a schema is a type name", id="number"),
    pytest.param(rec("1R"), "must match", id="bad-record-name"),
    pytest.param(rec("R-1"), "must match", id="bad-record-name-dash"),
    pytest.param(rec(""), "is empty", id="empty-record-name"),
    pytest.param(rec("R", namespace="com.1acme"), "namespace part", id="bad-namespace"),
    pytest.param(rec("R", fld("a b", "int")), "field name", id="bad-field-name"),
    pytest.param(rec("R", aliases=["bad alias"]), "must match", id="bad-alias"),
    pytest.param(enum("E", "A", "1B"), "enum symbol", id="bad-enum-symbol"),
    pytest.param(enum("E", "A", 1), "is not a string", id="non-string-symbol"),
    pytest.param({"type": "record", "fields": []}, 'needs a string "name"', id="no-name"),
    pytest.param({"type": "record", "name": "R"}, '"fields" array', id="no-fields"),
    pytest.param({"type": "record", "name": "R", "fields": {}}, '"fields" array',
                 id="fields-not-array"),
    pytest.param(rec("R", fld("a", "int"), fld("a", "long")), "duplicate field a",
                 id="duplicate-field"),
    pytest.param(rec("R", {"type": "int"}), 'needs a string "name"', id="field-without-name"),
    pytest.param(rec("R", {"name": "a"}), 'has no "type"', id="field-without-type"),
    pytest.param(rec("R", fld("a", "int", order="sideways")), "invalid order", id="bad-order"),
    pytest.param(rec("R", fld("a", "int", aliases="b")), "aliases", id="aliases-not-array"),
    pytest.param(enum("E", "A", "A"), "duplicate enum symbol", id="duplicate-symbol"),
    pytest.param({"type": "enum", "name": "E"}, '"symbols" array', id="no-symbols"),
    pytest.param(enum("E", "A", "B", default="C"), "not one of the symbols",
                 id="enum-default-not-a-symbol"),
    pytest.param(fixed("F", "16"), "size", id="fixed-size-string"),
    pytest.param(fixed("F", 1.5), "size", id="fixed-size-float"),
    pytest.param(fixed("F", -1), "size", id="fixed-size-negative"),
    pytest.param({"type": "array"}, '"items"', id="array-no-items"),
    pytest.param({"type": "map"}, '"values"', id="map-no-values"),
    pytest.param(["null", ["int", "long"]], "another union", id="nested-union"),
    pytest.param(["int", "int"], "contains int twice", id="duplicate-union-type"),
    pytest.param([{"type": "array", "items": "int"}, {"type": "array", "items": "long"}],
                 "contains array twice", id="two-arrays-in-union"),
    pytest.param(["null", rec("R"), rec("R")], "already defined", id="redefined-name"),
    pytest.param(rec("R", fld("a", rec("R"))), "already defined", id="redefined-nested"),
    pytest.param(rec("int"), "called after a primitive", id="named-after-primitive"),
]

WRONG_DEFAULTS: list[Any] = [
    pytest.param("int", "1", id="int-given-string"),
    pytest.param("int", 1.5, id="int-given-float"),
    pytest.param("int", 1.0, id="int-given-integral-float"),
    pytest.param("int", 2**31, id="int-out-of-range"),
    pytest.param("int", True, id="int-given-boolean"),
    pytest.param("long", 2**63, id="long-out-of-range"),
    pytest.param("long", "5", id="long-given-string"),
    pytest.param("float", "abc", id="float-given-non-number-string"),
    pytest.param("float", True, id="float-given-boolean"),
    pytest.param("double", None, id="double-given-null"),
    pytest.param("boolean", 0, id="boolean-given-int"),
    pytest.param("boolean", "true", id="boolean-given-string"),
    pytest.param("string", None, id="string-given-null"),
    pytest.param("string", 1, id="string-given-int"),
    pytest.param("bytes", 1, id="bytes-given-int"),
    pytest.param("null", 0, id="null-given-int"),
    pytest.param(rec("In", fld("x", "int")), {"x": "one"}, id="record-member-wrong-type"),
    pytest.param(rec("In", fld("x", "int")), {}, id="record-member-missing"),
    pytest.param(rec("In", fld("x", "int")), [], id="record-given-array"),
    pytest.param({"type": "array", "items": "int"}, {}, id="array-given-object"),
    pytest.param({"type": "array", "items": "int"}, ["a"], id="array-item-wrong-type"),
    pytest.param({"type": "map", "values": "int"}, [], id="map-given-array"),
    pytest.param({"type": "map", "values": "int"}, {"a": "x"}, id="map-value-wrong-type"),
    pytest.param(["string", "null"], None, id="union-default-matches-later-branch-only"),
    pytest.param(["int", "string"], "x", id="union-default-second-branch"),
    pytest.param(enum("E", "A"), 1, id="enum-field-given-int"),
    pytest.param(fixed("F", 2), 1, id="fixed-field-given-int"),
]


def _refused(value: Any) -> InvalidSchemaError:
    with pytest.raises(InvalidSchemaError) as caught:
        schema(value)
    return caught.value


@pytest.mark.parametrize(("text", "message"), INVALID_TEXT)
def test_invalid_text(text: str, message: str) -> None:
    with pytest.raises(InvalidSchemaError, match=message):
        AvroSchema.parse(text)


@pytest.mark.parametrize(("value", "message"), INVALID)
def test_invalid_schema(value: Any, message: str) -> None:
    error = _refused(value)
    assert message in str(error)
    assert isinstance(error, ValueError)


@pytest.mark.parametrize(("field_type", "default"), WRONG_DEFAULTS)
def test_wrong_default_refused(field_type: Any, default: Any) -> None:
    error = _refused(rec("R", fld("f", field_type, default)))
    assert "invalid default for field f" in error.reason
    assert error.path == "/fields/0/default"


def test_union_default_message_names_the_first_branch() -> None:
    error = _refused(rec("R", fld("f", ["string", "null"], None)))
    assert "must match the union's first branch, \"string\"" in str(error)


def test_error_names_where() -> None:
    error = _refused(rec("R", fld("ok", "int"), fld("bad", rec("In", fld("x", "nope")))))
    assert error.path == "/fields/1/type/fields/0/type"
    assert str(error).startswith("Invalid Avro schema at /fields/1/type/fields/0/type:")


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(rec("R", fld("e", enum("E", "A", "B"), "C")),
                     id="enum-field-default-not-a-symbol-java-accepts"),
        pytest.param(rec("R", fld("f", fixed("F", 4), "toolongforfour")),
                     id="fixed-default-wrong-length-java-accepts"),
        pytest.param(rec("R", fld("d", "double", "NaN")), id="double-default-nan-string"),
        pytest.param(rec("R", fld("d", "float", "1.5")), id="float-default-numeric-string"),
        pytest.param(rec("R", fld("d", "double", 1)), id="double-default-int"),
        pytest.param(rec("R", fld("u", ["null", "int"], None)), id="union-default-first-branch"),
        pytest.param(rec("R", fld("r", rec("In", fld("x", "int"), fld("y", "int", 2)), {"x": 1})),
                     id="record-default-member-falls-back-to-its-default"),
        pytest.param(rec("R", fld("l", "long", 2**63 - 1)), id="long-max"),
        pytest.param(enum("E", "A", default=1), id="non-string-enum-default-ignored"),
        pytest.param(rec("R", doc=5), id="non-string-doc-ignored"),
        pytest.param(rec("R"), id="no-fields"),
        pytest.param(rec("R", fld("a", "int", order="DESCENDING")), id="order-any-case"),
        pytest.param({"type": "error", "name": "E", "fields": []}, id="error-type"),
        pytest.param(rec("R", namespace=""), id="empty-namespace"),
        pytest.param(rec("R", fld("n", ["null", "R"], None)), id="recursive"),
        pytest.param(rec("R", fld("a", rec("In")), fld("b", {"type": "In"})),
                     id="type-object-naming-a-defined-type"),
        pytest.param(["null", rec("A"), rec("B"), enum("E", "X"), fixed("F", 1)],
                     id="union-of-named-types"),
    ],
)
def test_accepted_like_java(value: Any) -> None:
    schema(value)


def test_non_string_schema_text() -> None:
    with pytest.raises(InvalidSchemaError, match="must be a string"):
        AvroSchema.parse(b'"int"')  # type: ignore[arg-type]


ADDRESS = json.dumps(rec("Address", fld("street", "string"), namespace="com.acme"))
COUNTRY = json.dumps(enum("Country", "NL", "DE", namespace="com.acme"))
PLACE = json.dumps(rec("Place", fld("address", "com.acme.Address"),
                       fld("country", "Country"), namespace="com.acme"))


def test_references_define_names() -> None:
    person = AvroSchema.parse(
        json.dumps(rec("Person", fld("home", "com.acme.Address"), namespace="com.people")),
        references={"com.acme.Address": ADDRESS})
    assert person.text == ('{"type":"record","name":"Person","namespace":"com.people",'
                           '"fields":[{"name":"home","type":"com.acme.Address"}]}')
    assert person.name == "com.people.Person"


def test_references_in_dependency_order() -> None:
    main = json.dumps(rec("Trip", fld("to", "com.acme.Place")))
    trip = AvroSchema.parse(main, references={"com.acme.Address": ADDRESS,
                                              "com.acme.Country": COUNTRY,
                                              "com.acme.Place": PLACE})
    assert '"type":"com.acme.Place"' in trip.text


def test_missing_reference_is_an_unknown_name() -> None:
    with pytest.raises(InvalidSchemaError, match="is not a defined name"):
        AvroSchema.parse(json.dumps(rec("P", fld("home", "com.acme.Address"))))


def test_bad_reference_is_named() -> None:
    with pytest.raises(InvalidSchemaError, match=r"referenced schema com\.acme\.Address"):
        AvroSchema.parse('"int"', references={"com.acme.Address": "{"})


def test_parsed_encodes_with_references() -> None:
    person = AvroSchema.parse(json.dumps(rec("Person", fld("home", "com.acme.Address"),
                                             fld("n", "long"))),
                              references={"com.acme.Address": ADDRESS})
    import io

    buffer = io.BytesIO()
    record = {"home": {"street": "Main"}, "n": 7}
    fastavro.schemaless_writer(buffer, person.parsed, record)
    buffer.seek(0)
    assert fastavro.schemaless_reader(buffer, person.parsed) == record


def test_name_of_top_level_type() -> None:
    assert schema(rec("R", namespace="a.b")).name == "a.b.R"
    assert schema(enum("E", "A")).name == "E"
    assert schema(fixed("x.F", 2)).name == "x.F"
    assert schema("string").name is None
    assert schema(["null", rec("R")]).name is None
