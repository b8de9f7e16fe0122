"""Arrow columns → Confluent-framed Avro messages, a column at a time
(`AvroConverter.from_arrow`).

Why: fastavro writes a record in a few microseconds, almost all of it Python work per
field. Avro's binary encoding of a flat record is just its fields' encodings one after
the other, so every field's bytes can be computed for all rows at once with numpy, and
the rows' pieces laid end to end in C++:

    message = header (magic 0 + 4-byte big-endian id) ‖ field 1 ‖ field 2 ‖ …

A field's bytes (the Avro specification's binary encoding, as fastavro writes them):

| Connect (Arrow)                | Avro                | bytes                                  |
| int8/16/32 (int8/16/32)        | int                 | zig-zag varint                         |
| int64 (int64)                  | long                | zig-zag varint                         |
| float32 / float64              | float / double      | 4 / 8 bytes little-endian              |
| boolean                        | boolean             | one byte, 0 or 1                       |
| string / bytes                 | string / bytes      | varint length, then the bytes          |
| Decimal (decimal128)           | bytes, decimal      | varint length, big-endian two's        |
|                                |                     | complement in (bit_length(|x|)+8)//8   |
|                                |                     | bytes (fastavro's rule: 0 → 00, -128 → |
|                                |                     | ff80, not the minimal 80)              |
| Date (date32)                  | int, date           | varint of days since 1970-01-01        |
| Time (time32[ms])              | int, time-millis    | varint of ms since midnight            |
| Timestamp (timestamp[ms, UTC]) | long, timestamp-ms  | varint of ms since the epoch           |
| optional T                     | union with null     | varint branch index, then T if present |
| a null where T has a default   | T or [T, "null"]    | the default, as fastavro writes it     |

How:

1. Each field's bytes come in parts: a small one per row (branch index, varint, fixed
   bytes, decimal length and bytes) as an (n, width) byte matrix and a mask of the
   bytes each row keeps, and for strings and bytes the column itself (no copy).
2. Neighbouring small parts, the header's included, are compacted together (numpy's
   boolean indexing) into one binary array, so a record of ten fields with four
   strings makes about eleven arrays.
3. The arrays are concatenated and `take`n in row order (`_interleave`): the rows'
   bytes lie end to end, every k-th offset starts a message, and `to_pylist` cuts the
   messages out as bytes objects in C++.

Supported means byte for byte what `AvroConverter.from_connect_batch` writes for the
values `connect.api.arrow.to_connect` reads from the columns. `plan_fields` answers
None for anything else: a writer schema that is not a flat record of the types above,
an enum or fixed (enhanced schema support), a union other than null and one type, or a
field whose Connect and Avro types are not the pair `to_avro` makes. `encode` answers
None for values the record path refuses or converts differently: a null without a
default in a field with no null branch, a decimal with more digits than its precision,
a date, time or timestamp outside Python's range, and invalid UTF-8. The converter
then leaves the batch to the record path, which raises the proper error per record.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from dataclasses import dataclass
from io import BytesIO
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from fastavro import parse_schema, schemaless_writer

from connect.api.arrow import arrow_type
from connect.api.data import Field, Schema, Type
from connect.api.errors import DataError
from connect.api.logical import Date, Decimal, Time, Timestamp

__all__ = ["BOUNDS", "INT_KINDS", "Slot", "encode", "plan_fields"]

# Connect type (no logical name) → (Avro type, kind).
_PLAIN: dict[Type, tuple[str, str]] = {
    Type.INT8: ("int", "int8"),
    Type.INT16: ("int", "int16"),
    Type.INT32: ("int", "int32"),
    Type.INT64: ("long", "int64"),
    Type.FLOAT32: ("float", "float"),
    Type.FLOAT64: ("double", "double"),
    Type.BOOLEAN: ("boolean", "boolean"),
    Type.STRING: ("string", "string"),
    Type.BYTES: ("bytes", "bytes"),
}
# Connect logical name → (its Connect type, Avro type, Avro logicalType, kind).
_LOGICAL: dict[str, tuple[Type, str, str, str]] = {
    Decimal.LOGICAL_NAME: (Type.BYTES, "bytes", "decimal", "decimal"),
    Date.LOGICAL_NAME: (Type.INT32, "int", "date", "date"),
    Time.LOGICAL_NAME: (Type.INT32, "int", "time-millis", "time"),
    Timestamp.LOGICAL_NAME: (Type.INT64, "long", "timestamp-millis", "timestamp"),
}
#: Inclusive bounds of the integer kinds whose Python value the record path builds
#: (`datetime.date`, `datetime.time`, `datetime.datetime` from `to_pylist`, or a
#: fixed-width int): outside them it fails, so the columns do not take these values.
BOUNDS: dict[str, tuple[int, int]] = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "date": (
        _dt.date.min.toordinal() - _dt.date(1970, 1, 1).toordinal(),
        _dt.date.max.toordinal() - _dt.date(1970, 1, 1).toordinal(),
    ),
    "time": (0, 86_400_000 - 1),
    "timestamp": (-62_135_596_800_000, 253_402_300_799_999),  # years 1 to 9999, in ms
}
INT_KINDS = {"int8": "<i1", "int16": "<i2", "int32": "<i4", "int64": "<i8", "date": "<i4"}
INT_KINDS |= {"time": "<i4", "timestamp": "<i8"}
#: Binary arrays have 32-bit offsets: batches whose messages would pass this are
#: encoded in halves.
_MAX_BYTES = 2**31 - 1


@dataclass(frozen=True, slots=True)
class Slot:
    """One field of a flat record, as the Avro and Arrow sides both see it."""

    name: str
    kind: str  # a key of _PLAIN's / _LOGICAL's kinds: how its bytes are laid out
    arrow: pa.DataType  # the column's type (`connect.api.arrow.arrow_type`)
    null_byte: int | None  # the null branch's index as its one-byte varint; None: none
    value_byte: int | None  # the value branch's, likewise; None: the field is no union
    precision: int  # decimals: the most digits both sides hold (else 0)
    #: What the record path writes for a null (the writer's plan only): the field's
    #: Connect default as fastavro writes it, else the null branch's index; None when
    #: it fails on a null (no default, no null branch, or a default fastavro refuses).
    null_bytes: bytes | None


def plan_fields(schema: Schema, parsed: Any, *, defaults: bool) -> list[Slot] | None:
    """The slots of a flat record whose Connect schema is `schema` and whose Avro schema
    (fastavro's `parse_schema` output) is `parsed`, or None when the pair is not a flat
    record of supported fields. `defaults`: encode each field's default (the writer
    needs them; the reader does not)."""
    if schema.type is not Type.STRUCT or schema.optional or not isinstance(parsed, dict):
        return None
    if parsed.get("type") != "record":
        return None
    avro_fields = parsed.get("fields")
    if not isinstance(avro_fields, list) or len(avro_fields) != len(schema.fields):
        return None
    if not avro_fields:
        return None  # a batch of no columns has no rows to carry
    slots = []
    for field, avro_field in zip(schema.fields, avro_fields, strict=True):
        if not isinstance(avro_field, dict) or avro_field.get("name") != field.name:
            return None
        slot = _slot(field, avro_field["type"], defaults=defaults)
        if slot is None:
            return None
        slots.append(slot)
    return slots


def _slot(field: Field, avro: Any, *, defaults: bool) -> Slot | None:
    schema = field.schema
    null_byte = value_byte = None
    node = avro
    if isinstance(avro, list):
        if len(avro) != 2 or avro.count("null") != 1:
            return None
        null_index = avro.index("null")
        node = avro[1 - null_index]
        null_byte, value_byte = 2 * null_index, 2 * (1 - null_index)  # zig-zag of 0 / 1
    base = _primitive(node)
    if base is None:
        return None
    avro_type, logical, props = base
    if schema.name in _LOGICAL:
        connect_type, want_type, want_logical, kind = _LOGICAL[schema.name]
        if schema.type is not connect_type:
            return None
    elif schema.type in _PLAIN:
        (want_type, kind), want_logical = _PLAIN[schema.type], None
    else:
        return None  # struct, array or map
    if (avro_type, logical) != (want_type, want_logical):
        return None
    try:
        arrow = arrow_type(schema)
    except DataError:
        return None
    precision = 0
    if kind == "decimal":
        avro_scale, avro_precision = props.get("scale", 0), props.get("precision")
        if type(avro_scale) is not int or type(avro_precision) is not int or avro_precision < 1:
            return None
        if not pa.types.is_decimal128(arrow) or arrow.scale != avro_scale or avro_scale < 0:
            return None
        precision = min(avro_precision, arrow.precision)
    null_bytes = None if null_byte is None else bytes([null_byte])
    if defaults and schema.default is not None:
        null_bytes = _encoded_default(avro, schema.default)
    return Slot(field.name, kind, arrow, null_byte, value_byte, precision, null_bytes)


def _primitive(node: Any) -> tuple[str, str | None, dict[str, Any]] | None:
    """(Avro type, logicalType, properties) of a primitive type node, else None."""
    if isinstance(node, str):
        return (node, None, {}) if node in _AVRO_PRIMITIVES else None
    if isinstance(node, dict) and node.get("type") in _AVRO_PRIMITIVES:
        return node["type"], node.get("logicalType"), node
    return None


_AVRO_PRIMITIVES = {"int", "long", "float", "double", "boolean", "string", "bytes"}


def _encoded_default(avro: Any, default: Any) -> bytes | None:
    """`default` as fastavro writes it in a field of type `avro` — exactly the bytes
    the record path writes for a null in that field (Connect's `Struct.get` reads a
    null as the default, and primitives pass through to fastavro unchanged)."""
    buf = BytesIO()
    try:
        schemaless_writer(buf, parse_schema(avro), default)
    except Exception:  # the record path fails on it too: leave nulls to that path
        return None
    return buf.getvalue()


# ---------------------------------------------------------------- encoding


def encode(slots: Sequence[Slot], header: bytes, batch: pa.RecordBatch) -> list[bytes] | None:
    """Every row of `batch` (columns in slot order) as one message starting with
    `header`, or None when a value is one the record path refuses or writes another
    way (see the module docstring)."""
    n = batch.num_rows
    if n == 0:
        return []
    head = np.broadcast_to(np.frombuffer(header, np.uint8), (n, len(header)))
    parts: list[_Bytes | pa.Array] = [_Bytes(head, None, None)]
    for slot, column in zip(slots, batch.columns, strict=True):
        got = _field_parts(slot, column)
        if got is None:
            return None
        parts.extend(got)
    size = sum(p.mat.size if isinstance(p, _Bytes) else p.nbytes for p in parts)
    if size > _MAX_BYTES:
        if n == 1:
            return None
        half = n // 2
        first = encode(slots, header, batch.slice(0, half))
        second = encode(slots, header, batch.slice(half))
        return None if first is None or second is None else first + second
    # Neighbouring small parts (a header, ints, floats, a string's length) become one
    # binary array: interleaving costs about as much per array and row as compacting
    # a few more bytes per row does.
    pieces: list[pa.Array] = []
    group: list[_Bytes] = []
    for part in parts:
        if isinstance(part, _Bytes):
            group.append(part)
            continue
        if group:
            pieces.append(_compact(group))
            group = []
        pieces.append(part)
    if group:
        pieces.append(_compact(group))
    return _interleave(pieces, n).to_pylist()


def _interleave(pieces: Sequence[pa.Array], n: int) -> pa.Array:
    """Row i of the result is row i of every piece, end to end. All pieces go into one
    array, which `take` reads row by row: one memcpy per piece and row in C++, half
    the time `binary_join_element_wise` takes. The rows' bytes then lie end to end,
    and every k-th offset of the result is where a message starts."""
    k = len(pieces)
    if k == 1:
        return pieces[0]
    # A null of a nullable column (a null branch or a default went into its first
    # piece) is empty: a null slot's offsets may span bytes all the same.
    every = pa.concat_arrays([p.fill_null(b"") if p.null_count else p for p in pieces])
    order = (np.arange(k, dtype=np.int64) * n)[None, :] + np.arange(n, dtype=np.int64)[:, None]
    laid = every.take(pa.array(order.ravel()))
    offsets = np.frombuffer(laid.buffers()[1], np.int32, count=k * n + 1, offset=laid.offset * 4)
    starts = np.ascontiguousarray(offsets[::k])
    return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(starts), laid.buffers()[2]])


class _Bytes(NamedTuple):
    """At most `mat.shape[1]` bytes per row: row i's are `mat[i][mask[i]]`, `lens[i]`
    of them (mask and lens None: the whole row)."""

    mat: np.ndarray
    mask: np.ndarray | None
    lens: np.ndarray | None


def _field_parts(slot: Slot, column: pa.Array) -> list[_Bytes | pa.Array] | None:
    """The parts of one field's bytes, in order: small ones as byte matrices, and the
    data of strings and bytes as the column itself. A null row holds the null branch's
    index or the default's bytes in the first part, and is null in the others (which
    the join skips)."""
    if column.type != slot.arrow:
        return None
    valid = filler = None
    if column.null_count:
        filler = slot.null_bytes
        if filler is None:
            return None  # the record path fails on this field's null
        valid = column.is_valid().to_numpy(zero_copy_only=False)
    parts = _BUILDERS[slot.kind](slot, column, valid)
    if parts is None or valid is None or filler is None:
        return parts
    first = parts[0]
    assert isinstance(first, _Bytes)
    if len(filler) > _WIDE_FILLER:  # not worth widening every row's matrix for
        array = _compact([first], valid=valid)
        parts[0] = pc.fill_null(array, pa.scalar(filler, pa.binary()))
    else:
        parts[0] = _fill(first, ~valid, filler)
    return parts


#: Longest default written into the byte matrix of its field's first part.
_WIDE_FILLER = 32


def _fill(part: _Bytes, nulls: np.ndarray, filler: bytes) -> _Bytes:
    n, width = part.mat.shape
    size = len(filler)
    wide = max(width, size)
    mat = np.zeros((n, wide), np.uint8)
    mat[:, :width] = part.mat
    mask = np.zeros((n, wide), bool)
    mask[:, :width] = True if part.mask is None else part.mask
    lens = np.full(n, width, np.int32) if part.lens is None else part.lens.copy()
    mat[nulls, :size] = np.frombuffer(filler, np.uint8)
    mask[nulls] = np.arange(wide) < size
    lens[nulls] = size
    return _Bytes(mat, mask, lens)


def _compact(group: Sequence[_Bytes], *, valid: np.ndarray | None = None) -> pa.Array:
    """One binary array of the parts' bytes, row by row."""
    n = len(group[0].mat)
    if len(group) == 1:
        mat, mask, lens = group[0]
    else:
        mat = np.concatenate([g.mat for g in group], axis=1)
        mask = lens = None
        if any(g.mask is not None for g in group):
            mask = np.concatenate(
                [np.ones(g.mat.shape, bool) if g.mask is None else g.mask for g in group], axis=1
            )
            lens = sum(
                (g.mat.shape[1] if g.lens is None else g.lens for g in group),
                start=np.zeros(n, np.int32),
            )
    if mask is None:
        width = mat.shape[1]
        offsets = np.arange(0, width * (n + 1), width, dtype=np.int32)
        data = np.ascontiguousarray(mat)
    else:
        assert lens is not None
        offsets = np.zeros(n + 1, np.int32)
        np.cumsum(lens, out=offsets[1:])
        data = mat[mask]
    bitmap = None if valid is None else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(
        pa.binary(), n, [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)]
    )


def _leading(mat: np.ndarray, lens: np.ndarray) -> _Bytes:
    """The part whose row i is the first `lens[i]` bytes of `mat[i]`."""
    low, high = int(lens.min()), int(lens.max())
    if low == high:
        return _Bytes(mat[:, :high], None, None)
    return _Bytes(mat, np.arange(mat.shape[1]) < lens[:, None], lens)


def _values(column: pa.Array, dtype: str) -> np.ndarray:
    """The data buffer of a fixed-width column as numpy (zero copy; null slots hold
    whatever the buffer holds there)."""
    n, width = len(column), np.dtype(dtype).itemsize
    buf = column.buffers()[1]
    return np.frombuffer(buf, dtype, count=n, offset=column.offset * width)


def _zigzag(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.int64, copy=False)
    return ((x << 1) ^ (x >> 63)).view(np.uint64)


def _varints(
    z: np.ndarray, prefix: int | None, valid: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """An (n, [1 +] width) byte matrix whose rows hold `prefix` (if any) and the
    base-128 varint of `z` (unsigned), and each row's length. Null rows' `z` count as
    0, so that what their slots hold does not widen the matrix."""
    n = len(z)
    p = 0 if prefix is None else 1
    if valid is not None:
        z = np.where(valid, z, np.uint64(0))
    top = int(z.max())
    width = max(1, (top.bit_length() + 6) // 7)
    lens = np.ones(n, np.int32)
    for k in range(1, width):
        lens += (z >> np.uint64(7 * k)) != 0
    mat = np.empty((n, p + width), np.uint8)
    if p:
        mat[:, 0] = prefix
    for k in range(width):
        byte = (z >> np.uint64(7 * k)) & np.uint64(0x7F)
        if k + 1 < width:
            byte |= (lens > k + 1).astype(np.uint64) << np.uint64(7)
        mat[:, p + k] = byte
    return mat, lens + p


Parts = list[_Bytes | pa.Array] | None


def _ints(slot: Slot, column: pa.Array, valid: np.ndarray | None) -> Parts:
    x = _values(column, INT_KINDS[slot.kind])
    if slot.kind in ("date", "time", "timestamp"):
        low, high = BOUNDS[slot.kind]
        inside = (x >= low) & (x <= high)
        if not (inside.all() if valid is None else inside[valid].all()):
            return None  # `to_pylist` cannot make a Python value of it
    return [_leading(*_varints(_zigzag(x), slot.value_byte, valid))]


def _fixed(slot: Slot, column: pa.Array, valid: np.ndarray | None) -> Parts:
    n = len(column)
    if slot.kind == "boolean":
        bits = np.frombuffer(column.buffers()[1], np.uint8)
        raw = np.unpackbits(bits, bitorder="little", count=column.offset + n)[column.offset :]
        width = 1
    elif slot.kind == "float":
        # Through a double and back, as the record path's Python float does: the
        # same bits, except that a signalling NaN comes back quiet.
        with np.errstate(invalid="ignore"):
            raw = _values(column, "<f4").astype(np.float64).astype("<f4").view(np.uint8)
        width = 4
    else:
        raw = _values(column, "<f8").view(np.uint8)
        width = 8
    raw = raw.reshape(n, width)
    if slot.value_byte is None:
        return [_Bytes(raw, None, None)]
    mat = np.empty((n, 1 + width), np.uint8)
    mat[:, 0] = slot.value_byte
    mat[:, 1:] = raw
    return [_Bytes(mat, None, None)]


def _strings(slot: Slot, column: pa.Array, valid: np.ndarray | None) -> Parts:
    if slot.kind == "string":
        try:
            column.validate(full=True)  # `to_pylist` refuses invalid UTF-8
        except pa.ArrowInvalid:
            return None
    n = len(column)
    offsets = np.frombuffer(column.buffers()[1], np.int32, count=n + 1, offset=column.offset * 4)
    lengths = np.diff(offsets)
    data = column.view(pa.binary()) if slot.kind == "string" else column
    return [_leading(*_varints(_zigzag(lengths), slot.value_byte, valid)), data]


def _decimals(slot: Slot, column: pa.Array, valid: np.ndarray | None) -> Parts:
    """Layout of a row: [branch index] length (one byte: 2 × at most 16) and the value's
    big-endian bytes, right-aligned in `width` columns, of which the mask keeps the
    last `nbytes`."""
    n = len(column)
    words = np.frombuffer(
        column.buffers()[1], "<u8", count=2 * n, offset=column.offset * 16
    ).reshape(n, 2)
    lo, hi = words[:, 0], words[:, 1]
    # fastavro refuses more digits than the precision (Arrow holds at most 38), and
    # writes (bit_length(|x|) + 8) // 8 bytes: 1 + #{k ≥ 1: |x| ≥ 2^(8k-1)}.
    bound = 10**slot.precision
    width = ((bound - 1).bit_length() + 8) // 8
    signed = lo.view(np.int64)
    if width <= 8 and bool((hi.view(np.int64) == signed >> 63).all()):
        # Fits 64 bits (precision ≤ 18, the usual): plain int64 arithmetic.
        magnitude = np.abs(signed).view(np.uint64)
        fits = magnitude < np.uint64(bound)
        nbytes = np.ones(n, np.int32)
        for k in range(1, width):
            nbytes += magnitude >= np.uint64(1 << (8 * k - 1))
        big_endian = signed.astype(">i8").view(np.uint8).reshape(n, 8)[:, 8 - width :]
    else:
        negative = (hi >> np.uint64(63)).astype(bool)
        # |x| as (hi, lo): two's complement negation where negative.
        mag_lo = np.where(negative, ~lo + np.uint64(1), lo)
        mag_hi = np.where(negative, ~hi + (mag_lo == 0).astype(np.uint64), hi)
        b_hi, b_lo = np.uint64(bound >> 64), np.uint64(bound & (2**64 - 1))
        fits = (mag_hi < b_hi) | ((mag_hi == b_hi) & (mag_lo < b_lo))
        nbytes = np.ones(n, np.int32)
        for k in range(1, width):
            bit = 8 * k - 1
            if bit < 64:
                nbytes += (mag_hi != 0) | (mag_lo >= np.uint64(1 << bit))
            else:
                nbytes += mag_hi >= np.uint64(1 << (bit - 64))
        big_endian = words.view(np.uint8).reshape(n, 16)[:, ::-1][:, 16 - width :]
    if not (fits.all() if valid is None else fits[valid].all()):
        return None
    if valid is not None:
        nbytes[~valid] = 1
    p = 0 if slot.value_byte is None else 1
    mat = np.empty((n, p + 1 + width), np.uint8)
    if p:
        mat[:, 0] = slot.value_byte
    mat[:, p] = 2 * nbytes  # the zig-zag varint of a length ≤ 16: one byte
    mat[:, p + 1 :] = big_endian
    mask = np.empty(mat.shape, bool)
    mask[:, : p + 1] = True
    mask[:, p + 1 :] = np.arange(width) >= (width - nbytes)[:, None]
    return [_Bytes(mat, mask, nbytes + (p + 1))]


_BUILDERS = {
    **dict.fromkeys(INT_KINDS, _ints),
    **dict.fromkeys(("float", "double", "boolean"), _fixed),
    **dict.fromkeys(("string", "bytes"), _strings),
    "decimal": _decimals,
}
