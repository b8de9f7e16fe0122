"""Reader/writer pairs against Avro Java's SchemaCompatibility, rule by rule, both ways.

Each case: (reader, writer, expected) where expected is None for compatible, or the
(location, incompatibility type) the first reason must carry. Cases were written from the
rules in the reference notes (§12.2/12.3); where Java and the specification disagree the
case follows Java and says so in its id.
"""

from __future__ import annotations

from typing import Any

import pytest

from connect.registry.avro import (
    AvroSchema,
    Incompatibility,
    check_compatibility,
    find_incompatibilities,
)
from tests.connect.registry.avro._schemas import arr, enum, fixed, fld, mapof, rec, schema

PRIMITIVES = ["null", "boolean", "int", "long", "float", "double", "bytes", "string"]
PROMOTES = {  # writer -> readers that accept it besides itself
    "int": {"long", "float", "double"},
    "long": {"float", "double"},
    "float": {"double"},
    "string": {"bytes"},
    "bytes": {"string"},
}


def _primitive_cases() -> list[Any]:
    cases = []
    for reader in PRIMITIVES:
        for writer in PRIMITIVES:
            ok = reader == writer or reader in PROMOTES.get(writer, set())
            expected = None if ok else ("/", "TYPE_MISMATCH")
            cases.append(pytest.param(reader, writer, expected, id=f"{reader}<-{writer}"))
    return cases


R_INT = rec("R", fld("a", "int"))
R_LONG = rec("R", fld("a", "long"))
R_AB = rec("R", fld("a", "int"), fld("b", "string"))
R_AB_DEFAULT = rec("R", fld("a", "int"), fld("b", "string", "x"))
NODE = rec("Node", fld("value", "int"), fld("next", ["null", "Node"], None))
NODE_LONG = rec("Node", fld("value", "long"), fld("next", ["null", "Node"], None))
NODE_STRING = rec("Node", fld("value", "string"), fld("next", ["null", "Node"], None))
NODE_EXTRA_DEFAULT = rec("Node", fld("value", "int"), fld("next", ["null", "Node"], None),
                         fld("tag", "string", ""))
NODE_EXTRA = rec("Node", fld("value", "int"), fld("next", ["null", "Node"], None),
                 fld("tag", "string"))
TREE = rec("Tree", fld("children", arr("Tree")), fld("label", "string"))
TREE_BYTES = rec("Tree", fld("children", arr("Tree")), fld("label", "bytes"))
TREE_INT = rec("Tree", fld("children", arr("Tree")), fld("label", "int"))
PING = rec("Ping", fld("pong", ["null", rec("Pong", fld("ping", ["null", "Ping"], None),
                                            fld("n", "int"))], None))
PING_LONG = rec("Ping", fld("pong", ["null", rec("Pong", fld("ping", ["null", "Ping"], None),
                                                 fld("n", "long"))], None))
SUIT = enum("Suit", "HEARTS", "SPADES")
SUIT3 = enum("Suit", "HEARTS", "SPADES", "CLUBS")
SUIT3_DEFAULT = enum("Suit", "HEARTS", "SPADES", "UNKNOWN", default="UNKNOWN")


CASES = [
    # -- records: fields by name, defaults, writer-only fields, order ---------------------
    pytest.param(R_AB_DEFAULT, R_INT, None, id="record-reader-adds-field-with-default"),
    pytest.param(R_AB, R_INT, ("/fields/1", "READER_FIELD_MISSING_DEFAULT_VALUE"),
                 id="record-reader-adds-field-without-default"),
    pytest.param(R_INT, R_AB, None, id="record-writer-only-field-skipped"),
    pytest.param(R_INT, R_AB_DEFAULT, None, id="record-writer-only-field-with-default-skipped"),
    pytest.param(R_LONG, R_INT, None, id="record-field-promoted-int-to-long"),
    pytest.param(R_INT, R_LONG, ("/fields/0/type", "TYPE_MISMATCH"),
                 id="record-field-long-to-int-refused"),
    pytest.param(rec("R", fld("b", "string"), fld("a", "int")), R_AB, None,
                 id="record-field-order-irrelevant"),
    pytest.param(R_AB, rec("R", fld("b", "string"), fld("a", "int")), None,
                 id="record-field-order-irrelevant-reverse"),
    pytest.param(rec("R", fld("a", "int"), fld("b", ["null", "string"], None)), R_INT, None,
                 id="record-optional-field-added-null-default"),
    pytest.param(rec("R", fld("a", "int"), fld("b", ["string", "null"])), R_INT,
                 ("/fields/1", "READER_FIELD_MISSING_DEFAULT_VALUE"),
                 id="record-optional-field-added-without-default"),
    pytest.param(rec("R"), R_AB, None, id="record-empty-reader-reads-anything-named-R"),
    pytest.param(R_INT, rec("R"), ("/fields/0", "READER_FIELD_MISSING_DEFAULT_VALUE"),
                 id="record-reader-field-missing-from-empty-writer"),
    pytest.param(rec("R", fld("a", "int", 0), fld("b", "int", 0)), rec("R"), None,
                 id="record-all-defaults-reads-empty"),
    pytest.param(rec("R", fld("x", "int"), fld("y", "string")),
                 rec("R", fld("x", "string"), fld("y", "int")),
                 ("/fields/0/type", "TYPE_MISMATCH"), id="record-collects-every-problem"),
    # -- field aliases: reader aliases only ------------------------------------------------
    pytest.param(rec("R", fld("renamed", "int", aliases=["a"])), R_INT, None,
                 id="field-renamed-with-reader-alias"),
    pytest.param(R_INT, rec("R", fld("renamed", "int", aliases=["a"])),
                 ("/fields/0", "READER_FIELD_MISSING_DEFAULT_VALUE"),
                 id="field-writer-alias-never-consulted"),
    pytest.param(rec("R", fld("renamed", "long", aliases=["a"])), R_INT, None,
                 id="field-alias-then-promotion"),
    pytest.param(rec("R", fld("renamed", "string", aliases=["a"])), R_INT,
                 ("/fields/0/type", "TYPE_MISMATCH"), id="field-alias-then-type-mismatch"),
    pytest.param(rec("R", fld("a", "int", aliases=["b"])), R_AB,
                 ("/fields/0", "AMBIGUOUS_FIELD_ALIAS"),
                 id="field-name-and-alias-match-two-writer-fields-java-throws"),
    pytest.param(rec("R", fld("z", "int", aliases=["a", "b"])), R_AB,
                 ("/fields/0", "AMBIGUOUS_FIELD_ALIAS"), id="field-two-aliases-match-two"),
    # -- named types: unqualified names, reader aliases -----------------------------------
    pytest.param(rec("New", fld("a", "int")), R_INT, ("/name", "NAME_MISMATCH"),
                 id="record-renamed"),
    pytest.param(rec("New", fld("a", "int"), aliases=["R"]), R_INT, None,
                 id="record-renamed-reader-alias"),
    pytest.param(R_INT, rec("New", fld("a", "int"), aliases=["R"]),
                 ("/name", "NAME_MISMATCH"), id="record-writer-alias-never-consulted"),
    pytest.param(rec("R", fld("a", "int"), namespace="x"), rec("R", fld("a", "int"),
                                                              namespace="y"),
                 None, id="record-namespace-ignored-java"),
    pytest.param(rec("x.R", fld("a", "int")), R_INT, None, id="record-dotted-name-same-simple"),
    pytest.param(rec("New", fld("a", "int"), namespace="a", aliases=["Old"]),
                 rec("Old", fld("a", "int"), namespace="a"), None,
                 id="alias-qualified-with-reader-namespace"),
    pytest.param(rec("New", fld("a", "int"), namespace="a", aliases=["Old"]),
                 rec("Old", fld("a", "int"), namespace="b"), ("/name", "NAME_MISMATCH"),
                 id="alias-in-reader-namespace-misses-other-namespace"),
    pytest.param(rec("New", fld("a", "int"), namespace="a", aliases=["b.Old"]),
                 rec("Old", fld("a", "int"), namespace="b"), None, id="alias-full-name"),
    pytest.param(rec("New", fld("a", "int"), aliases=["Old"]),
                 rec("Old", fld("a", "int"), namespace="b"), ("/name", "NAME_MISMATCH"),
                 id="alias-without-namespace-misses-namespaced-writer"),
    pytest.param({"type": "error", "name": "R", "fields": [fld("a", "int")]}, R_INT, None,
                 id="error-reads-record"),
    # -- nested records ------------------------------------------------------------------
    pytest.param(rec("Outer", fld("inner", rec("In", fld("a", "long")))),
                 rec("Outer", fld("inner", rec("In", fld("a", "int")))), None,
                 id="nested-record-promotion"),
    pytest.param(rec("Outer", fld("inner", rec("In", fld("a", "int")))),
                 rec("Outer", fld("inner", rec("In", fld("a", "string")))),
                 ("/fields/0/type/fields/0/type", "TYPE_MISMATCH"),
                 id="nested-record-mismatch-location"),
    pytest.param(rec("Outer", fld("x", "int", 0), fld("inner", rec("In", fld("a", "int"),
                                                                     fld("b", "int")))),
                 rec("Outer", fld("inner", rec("In", fld("a", "int")))),
                 ("/fields/1/type/fields/1", "READER_FIELD_MISSING_DEFAULT_VALUE"),
                 id="nested-record-missing-default-location"),
    pytest.param(rec("Outer", fld("inner", rec("Renamed", fld("a", "int")))),
                 rec("Outer", fld("inner", rec("In", fld("a", "int")))),
                 ("/fields/0/type/name", "NAME_MISMATCH"), id="nested-record-renamed"),
    # -- enums --------------------------------------------------------------------------
    pytest.param(SUIT3, SUIT, None, id="enum-reader-adds-symbol"),
    pytest.param(SUIT, SUIT3, ("/symbols", "MISSING_ENUM_SYMBOLS"),
                 id="enum-reader-lacks-writer-symbol"),
    pytest.param(SUIT3_DEFAULT, SUIT3, None, id="enum-reader-default-covers-missing-symbol"),
    pytest.param(enum("Suit", "A", "B", default="A"), enum("Suit", "C", "D"), None,
                 id="enum-reader-default-covers-disjoint-symbols"),
    pytest.param(SUIT3, SUIT3_DEFAULT, ("/symbols", "MISSING_ENUM_SYMBOLS"),
                 id="enum-writer-default-does-not-help"),
    pytest.param(enum("Suit", "SPADES", "HEARTS"), SUIT, None, id="enum-symbol-order-free"),
    pytest.param(enum("Colour", "HEARTS", "SPADES"), SUIT, ("/name", "NAME_MISMATCH"),
                 id="enum-renamed"),
    pytest.param(enum("Colour", "HEARTS", "SPADES", aliases=["Suit"]), SUIT, None,
                 id="enum-renamed-reader-alias"),
    pytest.param(rec("R", fld("s", SUIT)), rec("R", fld("s", SUIT3)),
                 ("/fields/0/type/symbols", "MISSING_ENUM_SYMBOLS"), id="enum-in-field"),
    pytest.param(rec("R", fld("a", "int"), fld("s", SUIT3_DEFAULT)), R_INT,
                 ("/fields/1/type", "TYPE_MISMATCH"),
                 id="enum-field-with-enum-default-missing-in-writer-java-quirk"),
    pytest.param(rec("R", fld("a", "int"), fld("s", SUIT, "HEARTS")), R_INT, None,
                 id="enum-field-with-field-default-missing-in-writer"),
    pytest.param("string", SUIT, ("/", "TYPE_MISMATCH"), id="enum-to-string-refused"),
    pytest.param(SUIT, "string", ("/", "TYPE_MISMATCH"), id="string-to-enum-refused"),
    # -- fixed --------------------------------------------------------------------------
    pytest.param(fixed("F", 16), fixed("F", 16), None, id="fixed-same"),
    pytest.param(fixed("F", 16), fixed("F", 8), ("/size", "FIXED_SIZE_MISMATCH"),
                 id="fixed-size-differs"),
    pytest.param(fixed("F", 8), fixed("F", 16), ("/size", "FIXED_SIZE_MISMATCH"),
                 id="fixed-size-differs-reverse"),
    pytest.param(fixed("G", 16), fixed("F", 16), ("/name", "NAME_MISMATCH"),
                 id="fixed-renamed"),
    pytest.param(fixed("G", 16, aliases=["F"]), fixed("F", 16), None,
                 id="fixed-renamed-reader-alias"),
    pytest.param("bytes", fixed("F", 4), ("/", "TYPE_MISMATCH"), id="fixed-to-bytes-refused"),
    pytest.param(fixed("F", 4), "bytes", ("/", "TYPE_MISMATCH"), id="bytes-to-fixed-refused"),
    pytest.param(rec("R", fld("f", fixed("F", 4))), rec("R", fld("f", fixed("F", 5))),
                 ("/fields/0/type/size", "FIXED_SIZE_MISMATCH"), id="fixed-in-field"),
    # -- arrays and maps ----------------------------------------------------------------
    pytest.param(arr("long"), arr("int"), None, id="array-items-promoted"),
    pytest.param(arr("int"), arr("long"), ("/items", "TYPE_MISMATCH"), id="array-items-narrowed"),
    pytest.param(arr("string"), arr("bytes"), None, id="array-bytes-to-string"),
    pytest.param(arr(arr("double")), arr(arr("float")), None, id="array-of-arrays"),
    pytest.param(arr(arr("int")), arr(arr("string")), ("/items/items", "TYPE_MISMATCH"),
                 id="array-of-arrays-mismatch"),
    pytest.param(arr(R_AB), arr(R_INT), ("/items/fields/1", "READER_FIELD_MISSING_DEFAULT_VALUE"),
                 id="array-of-records-missing-default"),
    pytest.param(mapof("double"), mapof("int"), None, id="map-values-promoted"),
    pytest.param(mapof("int"), mapof("double"), ("/values", "TYPE_MISMATCH"),
                 id="map-values-narrowed"),
    pytest.param(mapof(arr("long")), mapof(arr("int")), None, id="map-of-arrays"),
    pytest.param(mapof(SUIT), mapof(SUIT3), ("/values/symbols", "MISSING_ENUM_SYMBOLS"),
                 id="map-of-enums"),
    pytest.param(arr("int"), mapof("int"), ("/", "TYPE_MISMATCH"), id="map-to-array-refused"),
    pytest.param(mapof("int"), arr("int"), ("/", "TYPE_MISMATCH"), id="array-to-map-refused"),
    pytest.param(R_INT, mapof("int"), ("/", "TYPE_MISMATCH"), id="map-to-record-refused"),
    pytest.param(mapof("int"), R_INT, ("/", "TYPE_MISMATCH"), id="record-to-map-refused"),
    # -- reader unions ------------------------------------------------------------------
    pytest.param(["null", "int"], "int", None, id="reader-union-has-writer-type"),
    pytest.param(["null", "long"], "int", None, id="reader-union-branch-promotes"),
    pytest.param(["null", "string"], "int", ("/", "MISSING_UNION_BRANCH"),
                 id="reader-union-lacks-writer-type"),
    pytest.param(["null", "bytes"], "string", None, id="reader-union-string-to-bytes"),
    pytest.param(["null", R_AB, rec("Other", fld("a", "int"), aliases=["R"])], R_INT, None,
                 id="reader-union-later-branch-by-alias-java-any-branch"),
    pytest.param(["null", R_AB], R_INT, ("/", "MISSING_UNION_BRANCH"),
                 id="reader-union-record-branch-incompatible"),
    pytest.param(["int", "string"], SUIT, ("/", "MISSING_UNION_BRANCH"),
                 id="reader-union-no-enum-branch"),
    pytest.param(["null", SUIT3], SUIT, None, id="reader-union-enum-branch"),
    pytest.param(["null", arr("long")], arr("int"), None, id="reader-union-array-branch"),
    pytest.param(["null", mapof("int")], arr("int"), ("/", "MISSING_UNION_BRANCH"),
                 id="reader-union-map-not-array"),
    # -- writer unions ------------------------------------------------------------------
    pytest.param("double", ["int", "long", "float"], None, id="writer-union-all-promote"),
    pytest.param("int", ["null", "int"], ("/0", "TYPE_MISMATCH"),
                 id="writer-union-null-branch-unreadable"),
    pytest.param("long", ["int", "string"], ("/1", "TYPE_MISMATCH"),
                 id="writer-union-string-branch-unreadable"),
    pytest.param("int", ["int"], None, id="writer-single-branch-union"),
    pytest.param(["int"], "int", None, id="reader-single-branch-union"),
    pytest.param(R_LONG, [R_INT], None, id="writer-union-of-one-record"),
    pytest.param(R_INT, ["null", R_LONG], ("/0", "TYPE_MISMATCH"),
                 id="writer-union-record-and-null"),
    # -- union to union -----------------------------------------------------------------
    pytest.param(["null", "int"], ["null", "int"], None, id="union-same"),
    pytest.param(["int", "null"], ["null", "int"], None, id="union-branch-order-free"),
    pytest.param(["null", "int", "string"], ["null", "int"], None, id="union-reader-superset"),
    pytest.param(["null", "int"], ["null", "int", "string"], ("/2", "MISSING_UNION_BRANCH"),
                 id="union-reader-subset"),
    pytest.param(["null", "long"], ["null", "int"], None, id="union-branch-promotion"),
    pytest.param(["null", "int"], ["null", "long"], ("/1", "MISSING_UNION_BRANCH"),
                 id="union-branch-narrowing"),
    pytest.param(["null", "string"], ["null", "bytes"], None, id="union-bytes-to-string"),
    pytest.param(["null", R_LONG], ["null", R_INT], None, id="union-of-records-promotion"),
    pytest.param(["null", R_AB], ["null", R_INT], ("/1", "MISSING_UNION_BRANCH"),
                 id="union-of-records-missing-default"),
    pytest.param(rec("R", fld("u", ["null", "int", "string"], None)),
                 rec("R", fld("u", ["null", "int"], None)), None, id="union-field-widened"),
    pytest.param(rec("R", fld("u", ["null", "int"], None)),
                 rec("R", fld("u", ["null", "int", "string"], None)),
                 ("/fields/0/type/2", "MISSING_UNION_BRANCH"), id="union-field-narrowed"),
    pytest.param(rec("R", fld("u", ["null", "int"], None)), rec("R", fld("u", "int")), None,
                 id="field-made-optional"),
    pytest.param(rec("R", fld("u", "int")), rec("R", fld("u", ["null", "int"], None)),
                 ("/fields/0/type/0", "TYPE_MISMATCH"), id="field-made-required"),
    # -- recursive types ----------------------------------------------------------------
    pytest.param(NODE, NODE, None, id="recursive-list-self"),
    pytest.param(NODE_LONG, NODE, None, id="recursive-list-promotion"),
    pytest.param(NODE, NODE_LONG, ("/fields/0/type", "TYPE_MISMATCH"),
                 id="recursive-list-narrowing"),
    pytest.param(NODE_STRING, NODE, ("/fields/0/type", "TYPE_MISMATCH"),
                 id="recursive-list-mismatch"),
    pytest.param(NODE_EXTRA_DEFAULT, NODE, None, id="recursive-list-field-added-with-default"),
    pytest.param(NODE_EXTRA, NODE, ("/fields/2", "READER_FIELD_MISSING_DEFAULT_VALUE"),
                 id="recursive-list-field-added-without-default"),
    pytest.param(NODE, NODE_EXTRA, None, id="recursive-list-field-dropped"),
    pytest.param(TREE, TREE, None, id="recursive-tree-through-array"),
    pytest.param(TREE, TREE_BYTES, None, id="recursive-tree-bytes-to-string"),
    pytest.param(TREE, TREE_INT, ("/fields/1/type", "TYPE_MISMATCH"),
                 id="recursive-tree-mismatch"),
    pytest.param(PING_LONG, PING, None, id="mutual-recursion-promotion"),
    pytest.param(PING, PING_LONG, ("/fields/0/type/1", "MISSING_UNION_BRANCH"),
                 id="mutual-recursion-narrowing"),
    # -- logical types are ignored (Java), doc/order/props too ----------------------------
    pytest.param({"type": "long", "logicalType": "timestamp-millis"},
                 {"type": "long", "logicalType": "timestamp-micros"}, None,
                 id="logical-timestamp-units-ignored-java"),
    pytest.param({"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2},
                 {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 4}, None,
                 id="logical-decimal-precision-ignored-java"),
    pytest.param({"type": "int", "logicalType": "date"}, "int", None, id="logical-date-is-int"),
    pytest.param({"type": "string", "logicalType": "uuid"}, "bytes", None,
                 id="logical-uuid-reads-bytes"),
    pytest.param({"type": "int", "logicalType": "date"}, "long", ("/", "TYPE_MISMATCH"),
                 id="logical-date-from-long-refused"),
    pytest.param(rec("R", fld("a", "int", doc="new doc", order="descending", extra="x")),
                 rec("R", fld("a", "int"), doc="old"), None, id="doc-order-props-ignored"),
]


def _check(reader: Any, writer: Any, expected: tuple[str, str] | None) -> None:
    reasons = check_compatibility(reader=schema(reader), writer=schema(writer))
    found = find_incompatibilities(reader=schema(reader), writer=schema(writer))
    if expected is None:
        assert reasons == [], reasons
        return
    location, kind = expected
    assert reasons, "expected an incompatibility"
    assert reasons[0].startswith(f"{location}: "), reasons
    assert found[0].location == location
    assert found[0].type == kind
    assert all(isinstance(i, Incompatibility) for i in found)


@pytest.mark.parametrize(("reader", "writer", "expected"), _primitive_cases())
def test_primitive_pairs(reader: str, writer: str, expected: tuple[str, str] | None) -> None:
    _check(reader, writer, expected)


@pytest.mark.parametrize(("reader", "writer", "expected"), CASES)
def test_reader_writer_pairs(reader: Any, writer: Any, expected: tuple[str, str] | None) -> None:
    _check(reader, writer, expected)


def test_reasons_read_like_java() -> None:
    reasons = check_compatibility(reader=schema(R_INT), writer=schema(rec("R", fld("a",
                                                                                   "string"))))
    assert reasons == ["/fields/0/type: reader type: INT not compatible with writer type: STRING"]
    [missing] = check_compatibility(reader=schema(R_AB), writer=schema(R_INT))
    assert missing == "/fields/1: reader field 'b' has no default value and is missing in the " \
                      "writer"
    [symbols] = find_incompatibilities(reader=schema(SUIT), writer=schema(enum(
        "Suit", "HEARTS", "SPADES", "DIAMONDS", "CLUBS")))
    assert symbols.message == "[CLUBS, DIAMONDS]"
    [size] = find_incompatibilities(reader=schema(fixed("F", 8)), writer=schema(fixed("F", 16)))
    assert size.message == "expected: 16, found: 8"
    [name] = find_incompatibilities(reader=schema(rec("New", fld("a", "int"))),
                                    writer=schema(rec("Old", fld("a", "int"), namespace="x")))
    assert name.message == "expected: x.Old"
    [branch] = find_incompatibilities(reader=schema(["null", "int"]), writer=schema("string"))
    assert branch.message == "reader union lacking writer type: STRING"


def test_every_problem_is_reported() -> None:
    reader = rec("R", fld("x", "int"), fld("y", "string"), fld("z", "boolean"))
    writer = rec("R", fld("x", "string"), fld("y", "int"))
    found = find_incompatibilities(reader=schema(reader), writer=schema(writer))
    assert [(i.location, i.type) for i in found] == [
        ("/fields/0/type", "TYPE_MISMATCH"),
        ("/fields/1/type", "TYPE_MISMATCH"),
        ("/fields/2", "READER_FIELD_MISSING_DEFAULT_VALUE"),
    ]


def test_ambiguous_alias_is_the_only_reason() -> None:
    reader = rec("R", fld("a", "string", aliases=["b"]), fld("c", "int"))
    reasons = check_compatibility(reader=schema(reader), writer=schema(R_AB))
    assert len(reasons) == 1
    assert "matches several writer fields (a, b)" in reasons[0]


def test_confluent_wording() -> None:
    [missing] = find_incompatibilities(reader=schema(R_AB), writer=schema(R_INT))
    assert missing.confluent(reader_role="new", writer_role="old") == (
        "{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'b' at path "
        "'/fields/1' in the new schema has no default value and is missing in the old schema', "
        "additionalInfo:'b'}")
    [mismatch] = find_incompatibilities(reader=schema(R_INT), writer=schema(R_LONG))
    assert mismatch.confluent(reader_role="old", writer_role="new") == (
        "{errorType:'TYPE_MISMATCH', description:'The type (path '/fields/0/type') of a field "
        "in the old schema does not match with the new schema', additionalInfo:'reader type: "
        "INT not compatible with writer type: LONG'}")


def test_references_resolve_to_shared_types() -> None:
    address = '{"type":"record","name":"Address","namespace":"a","fields":[' \
              '{"name":"street","type":"string"}]}'
    address2 = '{"type":"record","name":"Address","namespace":"a","fields":[' \
               '{"name":"street","type":"string"},{"name":"zip","type":"string"}]}'
    main = '{"type":"record","name":"P","fields":[{"name":"home","type":"a.Address"}]}'
    old = AvroSchema.parse(main, references={"a.Address": address})
    new = AvroSchema.parse(main, references={"a.Address": address2})
    assert check_compatibility(reader=old, writer=new) == []
    assert check_compatibility(reader=new, writer=old) == [
        "/fields/0/type/fields/1: reader field 'zip' has no default value and is missing in "
        "the writer"]


def test_deep_recursion_terminates() -> None:
    reader = schema(rec("A", fld("b", ["null", rec("B", fld("c", ["null", rec(
        "C", fld("a", ["null", "A"], None), fld("n", "long"))], None))], None)))
    writer = schema(rec("A", fld("b", ["null", rec("B", fld("c", ["null", rec(
        "C", fld("a", ["null", "A"], None), fld("n", "int"))], None))], None)))
    assert check_compatibility(reader=reader, writer=writer) == []
    assert check_compatibility(reader=writer, writer=reader) != []
