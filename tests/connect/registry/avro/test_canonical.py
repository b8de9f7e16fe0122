"""Canonical text (identity) as Java's Schema.toString, and Confluent's normalize."""

from __future__ import annotations

import json

import fastavro
import pytest

from connect.registry.avro import AvroSchema
from tests.connect.registry.avro._schemas import enum, fld, rec, schema

SAME = [
    pytest.param('{   "type":   "string"}', '"string"', id="whitespace-and-object-form"),
    pytest.param('{"type":"string"}', '"string"', id="primitive-object-form"),
    pytest.param('{"fields":[{"type":"int","name":"a"}],"name":"R","type":"record"}',
                 '{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}',
                 id="standard-key-order"),
    pytest.param('{"type":"record","name":"com.acme.R","fields":[]}',
                 '{"type":"record","name":"R","namespace":"com.acme","fields":[]}',
                 id="dotted-name-vs-namespace"),
    pytest.param('{"type":"record","name":"R","fields":[{"name":"a","type":"int",'
                 '"order":"ascending"}]}',
                 '{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}',
                 id="ascending-order-is-the-default"),
    pytest.param('{"type":"record","name":"R","namespace":"","fields":[]}',
                 '{"type":"record","name":"R","fields":[]}', id="empty-namespace-is-none"),
    pytest.param('{"type":"array","items":{"type":"int"}}',
                 '{"type":"array","items":"int"}', id="nested-primitive-object-form"),
]

DIFFERENT = [
    pytest.param(rec("R", fld("a", "int")), rec("R", fld("a", "int"), doc="d"), id="doc"),
    pytest.param(rec("R", fld("a", "int")), rec("R", fld("a", "int", doc="d")), id="field-doc"),
    pytest.param(rec("R", fld("a", "int", 1)), rec("R", fld("a", "int", 2)), id="default"),
    pytest.param(rec("R", fld("a", "int")), rec("R", fld("a", "int"), aliases=["Q"]),
                 id="aliases"),
    pytest.param(rec("R", fld("a", "int")), rec("R", fld("a", "int", order="descending")),
                 id="order"),
    pytest.param({"type": "int"}, {"type": "int", "logicalType": "date"}, id="logical-type"),
    pytest.param({"type": "int", "x": 1, "y": 2}, {"type": "int", "y": 2, "x": 1},
                 id="custom-property-order"),
    pytest.param(rec("R", fld("a", "int"), fld("b", "int")),
                 rec("R", fld("b", "int"), fld("a", "int")), id="field-order"),
    pytest.param(enum("E", "A", "B"), enum("E", "B", "A"), id="symbol-order"),
]


@pytest.mark.parametrize(("a", "b"), SAME)
def test_same_identity(a: str, b: str) -> None:
    first, second = AvroSchema.parse(a), AvroSchema.parse(b)
    assert first.text == second.text
    assert first == second and hash(first) == hash(second)
    assert first.fingerprint == second.fingerprint


@pytest.mark.parametrize(("a", "b"), DIFFERENT)
def test_different_identity(a: object, b: object) -> None:
    first, second = schema(a), schema(b)
    assert first.text != second.text
    assert first != second
    assert first.fingerprint != second.fingerprint


def test_java_key_order_and_relative_names() -> None:
    text = json.dumps({
        "aliases": ["Old"], "x-prop": {"k": [1, 2.5]}, "fields": [
            {"aliases": ["b"], "order": "ignore", "default": 1, "doc": "d", "type": "int",
             "name": "a", "p": True},
            {"name": "same", "type": {"type": "enum", "name": "E", "symbols": ["X"],
                                      "default": "X", "doc": "e"}},
            {"name": "other", "type": {"type": "fixed", "name": "F", "namespace": "z",
                                       "size": 2}},
            {"name": "none", "type": {"type": "record", "name": "N", "namespace": "",
                                      "fields": []}},
            {"name": "again", "type": "E"},
            {"name": "qualified", "type": "z.F"},
        ],
        "doc": "top", "namespace": "a.b", "name": "R", "type": "record",
    })
    assert AvroSchema.parse(text).text == (
        '{"type":"record","name":"R","namespace":"a.b","doc":"top","fields":['
        '{"name":"a","type":"int","doc":"d","default":1,"order":"ignore","aliases":["b"],'
        '"p":true},'
        '{"name":"same","type":{"type":"enum","name":"E","doc":"e","symbols":["X"],'
        '"default":"X"}},'
        '{"name":"other","type":{"type":"fixed","name":"F","namespace":"z","size":2}},'
        '{"name":"none","type":{"type":"record","name":"N","namespace":"","fields":[]}},'
        '{"name":"again","type":"E"},'
        '{"name":"qualified","type":"z.F"}],'
        '"x-prop":{"k":[1,2.5]},"aliases":["Old"]}'
    )


@pytest.mark.parametrize(
    ("default", "written"),
    [(1.0, "1.0"), (1e10, "1.0E10"), (1.5e-5, "1.5E-5"), (0.001, "0.001"), (1234567.0,
                                                                              "1234567.0"),
     (12345678.0, "1.2345678E7"), (-0.0, "-0.0"), (1, "1"), ("NaN", '"NaN"'),
     ("-Infinity", '"-Infinity"')],
)
def test_doubles_written_as_java(default: object, written: str) -> None:
    text = schema(rec("R", fld("d", "double", default))).text
    assert text.endswith(f'"default":{written}}}]}}')


def test_text_round_trips_and_fastavro_reads_it() -> None:
    original = schema(rec("R", fld("a", ["null", rec("In", fld("x", "long"))], None),
                          fld("e", enum("E", "A"), "A"), namespace="n", doc="é \"q\""))
    again = AvroSchema.parse(original.text)
    assert again.text == original.text
    fastavro.parse_schema(json.loads(original.text))


def test_confluent_normalization_example() -> None:
    text = ('{"type":"record","name":"myrecord","doc":"hi\\"there","fields":'
            '[{"type":"string","name":"f1","doc":"bye\\"now"}]}')
    expected = ('{"type":"record","name":"myrecord","doc":"hi\\"there","fields":'
                '[{"name":"f1","type":"string","doc":"bye\\"now"}]}')
    assert AvroSchema.parse(text).text == expected
    assert AvroSchema.parse(text).normalized().text == expected
    assert AvroSchema.parse(text, normalize=True).text == expected


def test_normalize_sorts_properties_and_aliases() -> None:
    a = schema(rec("R", fld("a", "int", aliases=["z", "y"], q=1, p=2), aliases=["B", "A"],
                   y=1, x=2))
    b = schema(rec("R", fld("a", "int", p=2, q=1, aliases=["y", "z"]), x=2, y=1,
                   aliases=["A", "B"]))
    assert a.text != b.text
    assert a.normalized().text == b.normalized().text
    assert a.normalized().text == (
        '{"type":"record","name":"R","fields":[{"name":"a","type":"int","aliases":["y","z"],'
        '"p":2,"q":1}],"x":2,"y":1,"aliases":["A","B"]}')


def test_normalize_keeps_logical_type_first() -> None:
    decimal = {"type": "bytes", "scale": 2, "precision": 5, "connect.name": "x",
               "logicalType": "decimal"}
    assert schema(decimal).normalized().text == (
        '{"type":"bytes","logicalType":"decimal","precision":5,"scale":2,"connect.name":"x"}')
    invalid = {"type": "string", "zeta": 1, "logicalType": "date"}
    assert schema(invalid).normalized().text == (
        '{"type":"string","logicalType":"date","zeta":1}')


def test_normalize_types_defaults_and_drops_empty_doc() -> None:
    a = schema(rec("R", fld("d", "double", 1), fld("f", "float", 0.1), doc=""))
    assert a.text == ('{"type":"record","name":"R","doc":"","fields":['
                      '{"name":"d","type":"double","default":1},'
                      '{"name":"f","type":"float","default":0.1}]}')
    assert a.normalized().text == ('{"type":"record","name":"R","fields":['
                                   '{"name":"d","type":"double","default":1.0},'
                                   '{"name":"f","type":"float","default":0.1}]}')


def test_normalize_is_idempotent_and_keeps_docs_and_defaults() -> None:
    s = schema(rec("R", fld("a", ["null", "int"], None, doc="x"), namespace="n", doc="top",
                   aliases=["n.Q"]))
    once = s.normalized()
    assert once.normalized() == once
    assert '"doc":"top"' in once.text and '"default":null' in once.text


def test_normalize_with_references() -> None:
    address = json.dumps(rec("Address", fld("street", "string"), namespace="com.acme"))
    text = json.dumps(rec("P", fld("home", "com.acme.Address"), z=1, a=2))
    s = AvroSchema.parse(text, references={"com.acme.Address": address}, normalize=True)
    assert s.text == ('{"type":"record","name":"P","fields":[{"name":"home",'
                      '"type":"com.acme.Address"}],"a":2,"z":1}')
