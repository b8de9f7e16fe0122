"""The schema cache and struct helpers every transform relies on."""

from __future__ import annotations

from connect.api import INT32_SCHEMA, Schema, Struct, Type
from connect.transforms._util import SchemaCache, field_values


def test_schema_cache_identity_equality_and_lru():
    cache: SchemaCache[str] = SchemaCache(size=2)
    a = Schema.struct([("a", INT32_SCHEMA)])
    cache.put(a, "A")
    assert cache.get(a) == "A"
    assert cache.get(Schema.struct([("a", INT32_SCHEMA)])) == "A"  # equal, not identical
    b, c = Schema(Type.STRING), Schema(Type.BOOLEAN)
    cache.put(b, "B")
    cache.get(Schema.struct([("a", INT32_SCHEMA)]))  # a is now the most recently used
    cache.put(c, "C")
    assert cache.get(Schema(Type.STRING)) is None  # b was evicted
    assert cache.get(Schema.struct([("a", INT32_SCHEMA)])) == "A"
    built = []
    assert cache.get_or_build(Schema(Type.INT8), lambda s: built.append(s) or "I") == "I"
    assert cache.get_or_build(Schema(Type.INT8), lambda s: "other") == "I"
    assert len(built) == 1


def test_field_values_defaults():
    schema = Schema.struct([("n", Schema(Type.INT32, optional=True, default=7))])
    struct = Struct(schema, {"n": None})
    assert field_values(struct) == [7]
    assert field_values(struct, replace_null_with_default=False) == [None]
