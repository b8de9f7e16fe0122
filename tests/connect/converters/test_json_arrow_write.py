"""`JsonConverter.from_arrow` writes byte for byte what the record path writes for the
same values (`SourceBatch.records()`), or answers None; it never writes other bytes."""

from __future__ import annotations

import decimal
import math
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connect.api import Date, Decimal, Schema, Time, Timestamp, Type
from connect.api.arrow import TIMESTAMP, schema_of
from connect.api.batches import SourceBatch
from connect.converters import JsonConverter

_EXACT = decimal.Context(prec=80)
#: Python's datetime range (years 1..9999) in ms since the epoch
_MS_MIN, _MS_MAX = -62_135_596_800_000, 253_402_300_799_999
_FLOAT_EDGES = [
    0.0, -0.0, 3.0, -3.0, 0.1, 1e-3, -1e-3, 0.00099, 9999999.0, 9999999.999, 1e7, 1e15,
    1e16, 1e21, 1e22, 1e-5, 1e-7, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
    123456789.0, 12345678.9, 0.000123456789, math.nan, math.inf, -math.inf,
]  # fmt: skip
_STRING_EDGES = [
    "",
    '"',
    "\\",
    '\\"',
    "".join(map(chr, range(0x20))),
    "\x7f\u2028\u2029",
    "é😀中",
    "a\x00b",
    '{"k":"v"}',
]


@dataclass(frozen=True)
class Kind:
    """A field type: its Connect schema, its Arrow type, and its values as pyarrow
    takes them."""

    name: str
    schema: Schema
    arrow: pa.DataType
    values: st.SearchStrategy[Any]
    #: a Connect default for the schema, when it can take one
    default: Any = None


def _decimal(scale: int, precision: int | None, digits: int) -> Kind:
    unscaled = st.integers(-(10**digits) + 1, 10**digits - 1)
    return Kind(
        f"decimal({precision},{scale})",
        Decimal.schema(scale, precision=precision),
        pa.decimal128(min(precision or 38, 38), scale),
        unscaled.map(lambda n: decimal.Decimal(n).scaleb(-scale, context=_EXACT)),
        decimal.Decimal(7).scaleb(-scale),
    )


INNER = Schema.struct(
    [("x", Schema(Type.INT32)), ("s", Schema(Type.STRING, optional=True))], optional=True
)

KINDS = [
    Kind("int8", Schema(Type.INT8), pa.int8(), st.integers(-(2**7), 2**7 - 1), 1),
    Kind("int16", Schema(Type.INT16), pa.int16(), st.integers(-(2**15), 2**15 - 1)),
    Kind("int32", Schema(Type.INT32), pa.int32(), st.integers(-(2**31), 2**31 - 1)),
    Kind("int64", Schema(Type.INT64), pa.int64(), st.integers(-(2**63), 2**63 - 1), -1),
    Kind("float32", Schema(Type.FLOAT32), pa.float32(), st.floats(width=32), 1.5),
    Kind(
        "float64",
        Schema(Type.FLOAT64),
        pa.float64(),
        st.floats() | st.sampled_from(_FLOAT_EDGES) | st.integers(-(10**17), 10**17).map(float),
        1e20,
    ),
    Kind("boolean", Schema(Type.BOOLEAN), pa.bool_(), st.booleans(), True),
    Kind(
        "string",
        Schema(Type.STRING),
        pa.string(),
        st.text() | st.sampled_from(_STRING_EDGES),
        'de"fault',
    ),
    Kind("bytes", Schema(Type.BYTES), pa.binary(), st.binary(max_size=40), b"\x00\xff"),
    _decimal(2, 12, 12),
    _decimal(0, None, 20),
    _decimal(10, 38, 28),
    _decimal(5, 20, 20),
    Kind(
        "date",
        Date.schema(),
        pa.date32(),
        st.integers(-719_162, 2_932_896),
    ),
    Kind("time", Time.schema(), pa.time32("ms"), st.integers(0, 86_399_999)),
    Kind("timestamp", Timestamp.schema(), TIMESTAMP, st.integers(_MS_MIN, _MS_MAX)),
    Kind(
        "struct",
        INNER,
        pa.struct([("x", pa.int32()), ("s", pa.string())]),
        st.fixed_dictionaries(
            {"x": st.integers(-(2**31), 2**31 - 1), "s": st.none() | st.text(max_size=5)}
        ),
    ),
]


def _array(kind: Kind, values: list[Any]) -> pa.Array:
    if kind.arrow in (pa.date32(), pa.time32("ms")):
        return pa.array(values, pa.int32()).view(kind.arrow)
    if kind.arrow == TIMESTAMP:
        return pa.array(values, pa.int64()).view(kind.arrow)
    return pa.array(values, kind.arrow)


@st.composite
def batches(draw: st.DrawFn) -> tuple[Schema, pa.RecordBatch]:
    """A struct schema of random field kinds (required, optional or with a default)
    and a batch of its values, sometimes a slice of a larger one."""
    kinds = draw(st.lists(st.sampled_from(KINDS), min_size=1, max_size=6))
    rows = draw(st.integers(0, 12))
    skip = draw(st.integers(0, 3))
    fields, arrays = [], []
    for i, kind in enumerate(kinds):
        mode = draw(st.sampled_from(["required", "optional", "default"]))
        schema = kind.schema
        if mode == "optional" or (mode == "default" and kind.default is None):
            schema = schema.with_(optional=True)
        elif mode == "default":
            schema = schema.with_(optional=True, default=kind.default)
        item = kind.values if mode == "required" else st.none() | kind.values
        values = draw(st.lists(item, min_size=rows + skip, max_size=rows + skip))
        fields.append((f"f{i}", schema))
        arrays.append(_array(kind, values))
    schema = Schema.struct(fields, name="row")
    batch = pa.RecordBatch.from_arrays(arrays, schema=schema_of(schema))
    return schema, batch.slice(skip)


def _converter(**configs: Any) -> JsonConverter:
    converter = JsonConverter()
    converter.configure(configs, is_key=False)
    return converter


def _record_path(converter: JsonConverter, schema: Schema, batch: pa.RecordBatch) -> list[Any]:
    records = SourceBatch(topic="t", value_schema=schema, values=batch).records()
    return converter.from_connect_batch("t", [schema] * len(records), [r.value for r in records])


CONFIGS = [
    {"schemas.enable": enable, "decimal.format": fmt, "replace.null.with.default": replace}
    for enable in (True, False)
    for fmt in ("BASE64", "NUMERIC")
    for replace in (True, False)
]


@pytest.mark.parametrize("configs", CONFIGS, ids=lambda c: "-".join(map(str, c.values())))
@settings(max_examples=150, deadline=None)
@given(data=batches())
def test_equals_the_record_path(configs: dict[str, Any], data: tuple[Schema, Any]) -> None:
    schema, batch = data
    converter = _converter(**configs)
    got = converter.from_arrow("t", schema, batch)
    assert got is not None
    assert got == _record_path(converter, schema, batch)


def test_the_benchmark_shapes_take_the_fast_path() -> None:
    """Keys `{"id": int64}` without schemas, and the ten-column value of the bench."""
    key_schema = Schema.struct([("id", Schema(Type.INT64))])
    keys = pa.RecordBatch.from_pydict({"id": [1, 2, -3]}, schema=schema_of(key_schema))
    key_converter = JsonConverter()
    key_converter.configure({"schemas.enable": False}, is_key=True)
    assert key_converter.from_arrow("t", key_schema, keys) == [
        b'{"id":1}',
        b'{"id":2}',
        b'{"id":-3}',
    ]
    value_schema = Schema.struct(
        [
            ("id", Schema(Type.INT64)),
            ("a", Schema(Type.STRING)),
            ("b", Schema(Type.STRING)),
            ("c", Schema(Type.STRING)),
            ("d", Schema(Type.STRING)),
            ("n", Schema(Type.INT32)),
            ("x", Schema(Type.FLOAT64)),
            ("price", Decimal.schema(2, precision=12)),
            ("note", Schema(Type.STRING, optional=True)),
            ("at", Schema(Type.STRING)),
            ("ok", Schema(Type.BOOLEAN)),
        ]
    )
    columns = {
        "id": [1, 2],
        "a": ["x", 'q"uote'],
        "b": ["é", "\n"],
        "c": ["", "c"],
        "d": ["d", "d"],
        "n": [7, -7],
        "x": [3.0, 1e-7],
        "price": [decimal.Decimal("12.50"), decimal.Decimal("-0.01")],
        "note": [None, "n"],
        "at": ["2024-01-01 00:00:00", "2024-01-02 00:00:00"],
        "ok": [True, False],
    }
    values = pa.RecordBatch.from_pydict(columns, schema=schema_of(value_schema))
    converter = _converter()
    got = converter.from_arrow("t", value_schema, values)
    assert got is not None
    assert got == _record_path(converter, value_schema, values)


@pytest.mark.parametrize("text", _STRING_EDGES)
def test_strings_are_escaped_as_orjson_escapes_them(text: str) -> None:
    schema = Schema.struct([("s", Schema(Type.STRING))])
    batch = pa.RecordBatch.from_pydict({"s": [text, "plain"]}, schema=schema_of(schema))
    converter = _converter(**{"schemas.enable": False})
    assert converter.from_arrow("t", schema, batch) == _record_path(converter, schema, batch)


@pytest.mark.parametrize("width", [pa.float32(), pa.float64()])
def test_floats_print_as_the_record_path_prints_them(width: pa.DataType) -> None:
    kind = Type.FLOAT32 if width == pa.float32() else Type.FLOAT64
    schema = Schema.struct([("f", Schema(kind))])
    batch = pa.RecordBatch.from_pydict({"f": _FLOAT_EDGES}, schema=schema_of(schema))
    converter = _converter(**{"schemas.enable": False})
    got = converter.from_arrow("t", schema, batch)
    assert got == _record_path(converter, schema, batch)
    if width == pa.float64():
        assert got is not None
        assert got[:3] == [b'{"f":0.0}', b'{"f":-0.0}', b'{"f":3.0}']
        assert b'{"f":1.0E16}' in got and b'{"f":"NaN"}' in got and b'{"f":9.9E-4}' in got


def test_the_envelope_carries_the_schema() -> None:
    schema = Schema.struct([("id", Schema(Type.INT64))], name="k")
    batch = pa.RecordBatch.from_pydict({"id": [5]}, schema=schema_of(schema))
    got = _converter().from_arrow("t", schema, batch)
    assert got == [
        b'{"schema":{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"}],'
        b'"optional":false,"name":"k"},"payload":{"id":5}}'
    ]


def test_an_empty_batch_is_no_messages() -> None:
    schema = Schema.struct([("id", Schema(Type.INT64))])
    batch = pa.RecordBatch.from_pydict({"id": []}, schema=schema_of(schema))
    assert _converter().from_arrow("t", schema, batch) == []


def test_a_null_in_a_required_field_goes_record_by_record() -> None:
    """The record path then names the bad record."""
    schema = Schema.struct([("id", Schema(Type.INT64))])
    batch = pa.RecordBatch.from_pydict({"id": [1, None]}, schema=schema_of(schema))
    assert _converter().from_arrow("t", schema, batch) is None


def test_a_null_struct_hides_its_fields() -> None:
    """A null optional struct is `null`, whatever its (required) fields hold."""
    schema = Schema.struct([("inner", INNER)])
    inner = pa.StructArray.from_arrays(
        [pa.array([1, None], pa.int32()), pa.array(["a", None])],
        fields=list(schema_of(schema).field(0).type),
        mask=pa.array([False, True]),
    )
    batch = pa.RecordBatch.from_arrays([inner], schema=schema_of(schema))
    converter = _converter(**{"schemas.enable": False})
    got = converter.from_arrow("t", schema, batch)
    assert got == [b'{"inner":{"x":1,"s":"a"}}', b'{"inner":null}']
    assert got == _record_path(converter, schema, batch)


@pytest.mark.parametrize(
    ("field", "column"),
    [
        (Schema(Type.INT32), pa.array([1], pa.int64())),  # not the mapping's type
        (Schema.array(Schema(Type.INT32)), pa.array([[1]], pa.list_(pa.int32()))),
        (
            Schema.map(Schema(Type.STRING), Schema(Type.INT32)),
            pa.array([[("a", 1)]], pa.map_(pa.string(), pa.int32())),
        ),
        (Decimal.schema(-2), pa.array([decimal.Decimal(100)], pa.decimal128(10, -2))),
    ],
)
def test_what_it_cannot_write_goes_record_by_record(field: Schema, column: pa.Array) -> None:
    schema = Schema.struct([("f", field)])
    batch = pa.RecordBatch.from_arrays([column], names=["f"])
    assert _converter().from_arrow("t", schema, batch) is None


def test_a_decimal_longer_than_the_context_is_written_exactly() -> None:
    """38 digits, past Python's default 28: the record path no longer rounds them
    (Decimal.EXACT), so the columns are written as they are, and equal to it."""
    schema = Schema.struct([("d", Decimal.schema(0, precision=38))])
    big = decimal.Decimal(10**37 + 1)
    batch = pa.RecordBatch.from_pydict({"d": [big]}, schema=schema_of(schema))
    got = _converter().from_arrow("t", schema, batch)
    assert got is not None and got == _record_path(_converter(), schema, batch)
    assert _converter().to_connect_data("t", got[0]).value.get("d") == big


@pytest.mark.parametrize("configs", CONFIGS, ids=lambda c: "-".join(map(str, c.values())))
def test_columns_of_one_value_are_written_as_the_record_path_writes_them(
    configs: dict[str, Any],
) -> None:
    """A batch long enough for the constant-column path (a CDC envelope's `source`
    block and `op`): columns of one value of every kind, a column whose first and last
    rows agree and one in the middle does not, strings whose bytes repeat the first
    row's but split otherwise, and floats 0.0 and -0.0 (equal to Arrow, printed apart),
    each compared with the record path, also from a sliced batch."""
    from connect.converters.json_arrow_write import _CONSTANT_MIN_ROWS

    n = _CONSTANT_MIN_ROWS + 2
    middle = [7] * n
    middle[n // 2] = 8
    split = ["aa", *["a", "aaa"] * ((n - 2) // 2), "aa"]
    inner = Schema.struct([("x", Schema(Type.INT32)), ("s", Schema(Type.STRING))])
    fields: list[tuple[str, Schema, pa.Array]] = [
        ("i8", Schema(Type.INT8), pa.array([-3] * n, pa.int8())),
        ("i64", Schema(Type.INT64), pa.array([2**62] * n, pa.int64())),
        ("mid", Schema(Type.INT32), pa.array(middle, pa.int32())),
        ("s", Schema(Type.STRING), pa.array(['q"\\\n\x01é'] * n)),
        ("empty", Schema(Type.STRING), pa.array([""] * n)),
        ("b", Schema(Type.BYTES), pa.array([b"\x00\xffab"] * n)),
        ("ok", Schema(Type.BOOLEAN), pa.array([True] * n)),
        ("split", Schema(Type.STRING), pa.array(split)),
        ("z", Schema(Type.FLOAT64), pa.array([0.0] + [-0.0] * (n - 2) + [0.0])),
        ("neg", Schema(Type.FLOAT32), pa.array([-0.0] * n, pa.float32())),
        ("big", Schema(Type.FLOAT64), pa.array([1e16] * n)),
        ("dec", Decimal.schema(2, precision=12), pa.array([decimal.Decimal("-1.25")] * n)),
        ("day", Date.schema(), pa.array([19000] * n, pa.int32())),
        ("ms", Time.schema(), pa.array([1234] * n, pa.int32())),
        ("at", Timestamp.schema(), pa.array([1_700_000_000_123] * n, TIMESTAMP)),
        (
            "inner",
            inner,
            pa.StructArray.from_arrays(
                [pa.array([1] * n, pa.int32()), pa.array(["v"] * n)], names=["x", "s"]
            ),
        ),
    ]
    schema = Schema.struct([(name, s) for name, s, _ in fields], name="row")
    batch = pa.RecordBatch.from_arrays([a for *_, a in fields], schema=schema_of(schema))
    converter = _converter(**configs)
    for part in (batch, batch.slice(1)):
        got = converter.from_arrow("t", schema, part)
        assert got is not None
        assert got == _record_path(converter, schema, part)
    assert b'"z":-0.0' in got[0] and b'"mid":8' in got[n // 2 - 1]
    assert b'"split":"a",' in got[0] and b'"big":1.0E16' in got[0]
