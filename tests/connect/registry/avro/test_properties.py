"""Properties over generated schemas: self-reading, stable text, the promotion lattice."""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from connect.registry.avro import AvroSchema, check_compatibility
from tests.connect.registry.avro._schemas import fld, rec, schema

PRIMITIVES = ["null", "boolean", "int", "long", "float", "double", "bytes", "string"]
_names = itertools.count()


def _fresh(prefix: str) -> str:
    return f"{prefix}{next(_names)}"


def _with_names(value: Any) -> Any:
    """Give every named type a fresh name so generated schemas never redefine one."""
    if isinstance(value, dict):
        out = {k: _with_names(v) for k, v in value.items()}
        if out.get("type") in ("record", "enum", "fixed"):
            out["name"] = _fresh(out["type"].capitalize())
        return out
    if isinstance(value, list):
        return [_with_names(v) for v in value]
    return value


def _compound(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    fields = st.lists(inner, min_size=0, max_size=4).map(
        lambda types: {"type": "record", "name": "R",
                       "fields": [{"name": f"f{i}", "type": t} for i, t in enumerate(types)]})
    union = st.lists(st.sampled_from(PRIMITIVES), min_size=1, max_size=4, unique=True)
    return st.one_of(
        st.builds(lambda t: {"type": "array", "items": t}, inner),
        st.builds(lambda t: {"type": "map", "values": t}, inner),
        fields,
        union,
    )


SCHEMAS = st.recursive(
    st.one_of(
        st.sampled_from(PRIMITIVES),
        st.lists(st.sampled_from(["A", "B", "C", "D"]), min_size=1, max_size=4, unique=True)
        .map(lambda s: {"type": "enum", "name": "E", "symbols": s}),
        st.integers(0, 32).map(lambda n: {"type": "fixed", "name": "F", "size": n}),
    ),
    _compound,
    max_leaves=8,
).map(_with_names)


@settings(max_examples=150, deadline=None)
@given(SCHEMAS)
def test_every_schema_reads_itself(value: Any) -> None:
    s = schema(value)
    assert check_compatibility(reader=s, writer=s) == []
    assert check_compatibility(reader=s, writer=AvroSchema.parse(s.text)) == []


@settings(max_examples=150, deadline=None)
@given(SCHEMAS)
def test_text_is_a_fixed_point(value: Any) -> None:
    s = schema(value)
    again = AvroSchema.parse(s.text)
    assert again.text == s.text
    assert s.normalized().normalized().text == s.normalized().text
    assert json.loads(s.text) is not None


@settings(max_examples=100, deadline=None)
@given(SCHEMAS, st.sampled_from(PRIMITIVES))
def test_adding_a_field_with_default_is_backward_compatible(value: Any, extra: str) -> None:
    defaults = {"null": None, "boolean": False, "int": 0, "long": 0, "float": 0.0,
                "double": 0.0, "bytes": "", "string": ""}
    old = schema(rec("Wrap", fld("x", value)))
    new = AvroSchema.parse(json.dumps(rec("Wrap", fld("x", json.loads(old.text)["fields"][0][
        "type"]), fld("added", extra, defaults[extra]))))
    assert check_compatibility(reader=new, writer=old) == []
    assert check_compatibility(reader=old, writer=new) == []


def _reads(reader: str, writer: str) -> bool:
    return check_compatibility(reader=schema(reader), writer=schema(writer)) == []


def test_promotion_lattice_is_reflexive_and_transitive() -> None:
    for a in PRIMITIVES:
        assert _reads(a, a)
        for b, c in itertools.product(PRIMITIVES, repeat=2):
            if _reads(a, b) and _reads(b, c):
                assert _reads(a, c), (a, b, c)
    # and numeric promotion only widens
    assert not _reads("int", "long") and not _reads("float", "double")


@given(st.sampled_from(PRIMITIVES), st.sampled_from(PRIMITIVES))
def test_union_reader_with_both_reads_either(a: str, b: str) -> None:
    reader = schema([a] if a == b else [a, b])
    assert check_compatibility(reader=reader, writer=schema(a)) == []
    assert check_compatibility(reader=reader, writer=schema(b)) == []
    writer = schema([a] if a == b else [a, b])
    assert check_compatibility(reader=writer, writer=writer) == []
