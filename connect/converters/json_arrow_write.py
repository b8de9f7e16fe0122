"""JsonConverter's messages written straight from Arrow columns (`from_arrow`).

Why: a `SourceBatch` arrives as Arrow columns. Turning each row into a Struct only to
write it as JSON costs microseconds per row; building the text a column at a time
with `pyarrow.compute` and numpy costs a fraction of that. The contract is the one of
`Converter.from_arrow`: the messages are byte for byte what `from_connect_batch`
writes for the same values (what `SourceBatch.records()` makes of the columns), so a
topic does not change when a source moves to batches.

How each column becomes text (every step a C loop over the column; Python touches
each row only as the bytes object it returns):

| Arrow column (see connect.api.arrow) | JSON text                                          |
| int8 … int64, date32, time32[ms],    | the integer, cast to string (days, ms of the day,  |
| timestamp[ms, UTC]                   | ms since the epoch)                                |
| bool                                 | `true` / `false` by `if_else`                      |
| string                               | quoted; `\\` and `"` escaped, control characters as |
|                                      | orjson writes them (`\\n`, `\\u001f`); UTF-8 as is   |
| binary, decimal (BASE64)             | quoted base64 made with numpy (a decimal: of its   |
|                                      | unscaled value's shortest two's complement)        |
| decimal (NUMERIC)                    | Arrow's decimal text, which is Python's `str`      |
| float32 / float64                    | see below                                          |
| struct                               | `{"name":text,…}` of its fields, recursively       |

Floats. The record path hands orjson the float when 1e-3 ≤ |x| < 1e7 (or x is 0), and
Java's `Double.toString` form otherwise (`1.0E16`, `9.9E-4`, `"NaN"`, `"Infinity"`).
Arrow's cast writes the same shortest digits: plain in that range (`3` where orjson
writes `3.0`, fixed by appending `.0` to integral values), and either plain or `1e+16`
outside it, which is taken apart with one regular expression into sign, digits and
exponent and put back together in Java's form. A float32 is widened to float64 first,
as Python widens it.

Nulls become the field's default (with `replace.null.with.default`), else `null` for
an optional field; a null in a required field, a column of another Arrow type than
the mapping's, a type with no column writer here (arrays, maps) or a decimal too long
for the decimal context's precision (the record path rounds it) make the whole batch
answer None, and the runtime then goes record by record, which also names the bad
record. Rows are assembled by one `binary_join_element_wise` over the field texts and
the constant pieces (`{"name":`, the quotes of strings that cannot be null, `}`, and
in batches of 256 rows or more the text of a column holding the same bytes in every
row, such as a CDC envelope's `source` block and `op`, written once by the record
path's encoder), neighbouring constants merged first; the schema envelope's prefix is
put before each row's bytes last.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from connect.api.arrow import arrow_type, to_connect
from connect.api.data import Schema, Type
from connect.api.errors import DataError
from connect.api.json_values import compile_encoder
from connect.api.logical import Date, Decimal, Time, Timestamp

__all__ = ["ArrowWriter", "compile_arrow_writer", "write_arrow"]

#: (record batch, envelope prefix, envelope suffix) → the messages, or None when the
#: batch must go record by record.
ArrowWriter = Callable[[Any, bytes, bytes], "list[bytes] | None"]

#: A column's text as pieces joined per row: a str shared by every row, or a string
#: array with one text per row.
_Pieces = list[Any]


class _Refuse(Exception):
    """This batch cannot be written here; the caller answers None."""


#: A column without nulls (or whose null slots are overwritten after) → its pieces
_ColumnWriter = Callable[[pa.Array], _Pieces]

_INT_TYPES = frozenset({Type.INT8, Type.INT16, Type.INT32, Type.INT64})
#: orjson's escapes of the control characters (the only other bytes it escapes are
#: `"` and `\`); DEL, U+2028 and every other character are written as they are.
_CONTROL_ESCAPES = {c: orjson.dumps(chr(c))[1:-1].decode("ascii") for c in range(0x20)}
_B64 = np.frombuffer(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", dtype=np.uint8
)
_SHIFTS = np.array([18, 12, 6, 0], dtype=np.uint32)
_BIT_LENGTH = np.array([int(b).bit_length() for b in range(256)], dtype=np.int64)
#: The fewest rows for which a column is looked at for one constant value (`_constant`).
_CONSTANT_MIN_ROWS = 256
#: The bytes of a value of the fixed-width Arrow types `_constant` compares.
_FIXED_BYTES = {
    t.id: t.bit_width // 8
    for t in (
        pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.float32(), pa.float64(),
        pa.date32(), pa.time32("ms"), pa.timestamp("ms", tz="UTC"), pa.decimal128(38, 0),
    )
}  # fmt: skip
_FLOAT_PARTS = r"^(?P<sign>-?)(?P<int>[0-9]+)(?:\.(?P<frac>[0-9]+))?(?:e\+?(?P<exp>-?[0-9]+))?$"


def write_arrow(
    schema: Schema,
    batch: Any,
    *,
    numeric_decimals: bool,
    replace_null: bool,
    prefix: bytes = b"",
    suffix: bytes = b"",
) -> list[bytes] | None:
    """The messages of `batch` (a RecordBatch of `schema`'s fields), each wrapped in
    `prefix` and `suffix` (the schema envelope), or None (see the module docstring)."""
    writer = compile_arrow_writer(
        schema, numeric_decimals=numeric_decimals, replace_null=replace_null
    )
    if writer is None:
        return None
    return writer(batch, prefix, suffix)


@functools.lru_cache(maxsize=256)
def compile_arrow_writer(
    schema: Schema, *, numeric_decimals: bool, replace_null: bool
) -> ArrowWriter | None:
    """The batch writer of a struct schema, or None when some field has no column
    writer here. Cached: a source's batches share one schema object."""
    if schema.type is not Type.STRUCT:
        return None
    try:
        struct = _StructWriter(schema, numeric_decimals, replace_null)
    except (_Refuse, DataError):
        return None

    def write(batch: Any, prefix: bytes, suffix: bytes) -> list[bytes] | None:
        if not isinstance(batch, pa.RecordBatch) or batch.num_columns != len(schema.fields):
            return None
        n = batch.num_rows
        if n == 0:
            return []
        try:
            pieces = struct.row_pieces(list(batch.columns))
        except _Refuse:
            return None
        payloads = _join([*pieces, suffix.decode("utf-8")], n).cast(pa.binary()).to_pylist()
        if not prefix:
            return payloads
        # Why the schema prefix is added here and not in the join: it is most of a
        # message (a CDC envelope's schema: ~3 KB against a payload of a few hundred
        # bytes), and joined by Arrow it was copied twice per row, once into the
        # joined array and once into each bytes object.
        return list(map(prefix.__add__, payloads))

    return write


def _merge(pieces: _Pieces) -> _Pieces:
    """Neighbouring constant pieces merged into one."""
    merged: _Pieces = []
    for piece in pieces:
        if type(piece) is str and merged and type(merged[-1]) is str:
            merged[-1] += piece
        else:
            merged.append(piece)
    return merged


def _join(pieces: _Pieces, n: int) -> pa.Array:
    """One string array of the row texts of `pieces`."""
    pieces = _merge(pieces)
    if len(pieces) == 1:
        only = pieces[0]
        return pa.array([only] * n, pa.string()) if type(only) is str else only
    return pc.binary_join_element_wise(*pieces, "")


# ------------------------------------------------------------------ columns


def _null_text(schema: Schema, numeric: bool, replace_null: bool) -> str | None:
    """The text a null becomes (the default's, or `null`); None: a null is refused."""
    if schema.default is not None and replace_null:
        encode = compile_encoder(schema, numeric_decimals=numeric, replace_null=replace_null)
        return orjson.dumps(encode(None)).decode("utf-8")
    return "null" if schema.optional else None


class _Column:
    """One field's writer: the type its column must have, the writer of its present
    values, and what a null becomes."""

    def __init__(self, schema: Schema, numeric: bool, replace_null: bool) -> None:
        self.null_text = _null_text(schema, numeric, replace_null)
        self.struct: _StructWriter | None = None
        self.expected: pa.DataType = arrow_type(schema)
        self.write: _ColumnWriter
        self.schema = schema
        #: a value's encoder on the record path, for constant columns (`_one_text`)
        self.one: Callable[[Any], Any] | None = None
        name, t = schema.name, schema.type
        if t is not Type.STRUCT:
            with contextlib.suppress(DataError):
                self.one = compile_encoder(
                    schema, numeric_decimals=numeric, replace_null=replace_null
                )
        if name == Decimal.LOGICAL_NAME:
            scale = Decimal.scale(schema)
            if scale < 0:
                raise _Refuse
            self.write = _decimal_numeric if numeric else _decimal_base64
        elif name in (Date.LOGICAL_NAME, Time.LOGICAL_NAME):
            self.write = _int_view(pa.int32())
        elif name == Timestamp.LOGICAL_NAME:
            self.write = _int_view(pa.int64())
        elif t in _INT_TYPES:
            self.write = _ints
        elif t in (Type.FLOAT32, Type.FLOAT64):
            self.write = _floats
        elif t is Type.BOOLEAN:
            self.write = _booleans
        elif t is Type.STRING:
            self.write = _strings
        elif t is Type.BYTES:
            self.write = _binary
        elif t is Type.STRUCT:
            self.struct = _StructWriter(schema, numeric, replace_null)
            self.write = self._struct
        else:
            raise _Refuse  # arrays and maps: the record path

    def _one_text(self, column: pa.Array) -> str | None:
        """The text of a constant column's value, written as the record path writes
        it (its encoder and orjson: a few microseconds, where a cast and a join of one
        row cost tens); None when the encoder refuses it (the column writer decides)."""
        assert self.one is not None
        try:
            value = to_connect(self.schema, column.slice(0, 1))[0]
            return orjson.dumps(self.one(value)).decode("utf-8")
        except (DataError, orjson.JSONEncodeError):
            return None

    def _struct(self, column: pa.Array) -> _Pieces:
        assert self.struct is not None
        return self.struct.row_pieces([column.field(i) for i in range(column.type.num_fields)])

    def accepts(self, typ: pa.DataType) -> bool:
        expected = self.expected
        if pa.types.is_decimal(expected):
            return pa.types.is_decimal128(typ) and typ.scale == expected.scale
        return typ == expected

    def pieces(self, column: pa.Array) -> _Pieces:
        if not self.accepts(column.type):
            raise _Refuse
        if column.null_count == 0:
            if self.one is not None and _constant(column):
                text = self._one_text(column)
                if text is not None:
                    return [text]  # merged into the constant pieces around it
            return self.write(column)
        if self.null_text is None:
            raise _Refuse  # a null in a required field: the record path says where
        if column.null_count == len(column):
            return [self.null_text]
        valid = column.is_valid()
        if self.struct is not None:
            # a null struct's fields may hold anything, nulls in required ones too:
            # only the present structs are written
            present = _join(self.write(column.filter(valid)), int(len(column) - column.null_count))
            blank = pa.array([self.null_text] * len(column), pa.string())
            return [pc.replace_with_mask(blank, valid, present)]
        text = _join(self.write(column), len(column))
        return [pc.if_else(valid, text, self.null_text)]


def _constant(column: pa.Array) -> bool:
    """Whether every row holds the first row's bytes (no nulls): a batch's constant
    fields, such as a CDC envelope's `source` block, `op` and times, which then cost
    one value's text instead of a cast and a join per row. Compared as bytes by
    memcmp (Arrow's scalars and kernels cost tens of microseconds a column), and
    bytes, not values: 0.0 and -0.0, equal as values, print apart. The last row is
    compared first, so a column that varies almost always costs one comparison.
    Booleans (bits) and structs (whose fields are looked at one by one) are not looked
    at. Below `_CONSTANT_MIN_ROWS` rows the look costs about what it saves."""
    n = len(column)
    if n < _CONSTANT_MIN_ROWS:
        return False
    typ = column.type
    if pa.types.is_string(typ) or pa.types.is_binary(typ):
        offsets = np.frombuffer(column.buffers()[1], dtype=np.int32)
        offsets = offsets[column.offset : column.offset + n + 1]
        first, width = int(offsets[0]), int(offsets[1] - offsets[0])
        if int(offsets[n]) - first != n * width:
            return False
        if width and not (np.diff(offsets) == width).all():
            return False
        start, size = first, width
        data = column.buffers()[2]
    else:
        size = _FIXED_BYTES.get(typ.id)
        if size is None:
            return False
        start, data = column.offset * size, column.buffers()[1]
    if size == 0:
        return True
    rows = memoryview(data)[start : start + n * size]
    one = rows[:size].tobytes()
    # (a memoryview's == compares item by item in Python's struct code: bytes here)
    return rows[-size:].tobytes() == one and rows.tobytes() == one * n


class _StructWriter:
    """A struct's text from its field columns: `{"name":` heads between the fields'
    pieces."""

    def __init__(self, schema: Schema, numeric: bool, replace_null: bool) -> None:
        self.heads = [
            ("{" if i == 0 else ",") + orjson.dumps(f.name).decode("utf-8") + ":"
            for i, f in enumerate(schema.fields)
        ]
        self.columns = [_Column(f.schema, numeric, replace_null) for f in schema.fields]

    def row_pieces(self, columns: list[pa.Array]) -> _Pieces:
        if not self.columns:
            return ["{}"]
        out: _Pieces = []
        for head, writer, column in zip(self.heads, self.columns, columns, strict=True):
            out.append(head)
            out.extend(writer.pieces(column))
        out.append("}")
        return _merge(out)


def _ints(column: pa.Array) -> _Pieces:
    return [pc.cast(column, pa.string())]


def _int_view(typ: pa.DataType) -> _ColumnWriter:
    def ints(column: pa.Array) -> _Pieces:
        return [pc.cast(column.view(typ), pa.string())]

    return ints


def _booleans(column: pa.Array) -> _Pieces:
    return [pc.if_else(column, "true", "false")]


def _strings(column: pa.Array) -> _Pieces:
    """Quoted and escaped as orjson writes a str: a pass per escape that occurs."""
    data = _value_bytes(column)
    if data.size:
        if (data == 0x5C).any():
            column = pc.replace_substring(column, "\\", "\\\\")
        if (data == 0x22).any():
            column = pc.replace_substring(column, '"', '\\"')
        controls = data[data < 0x20]
        if controls.size:
            for c in np.unique(controls).tolist():
                column = pc.replace_substring(column, chr(c), _CONTROL_ESCAPES[c])
    return ['"', column, '"']


def _value_bytes(column: pa.Array) -> np.ndarray:
    """The bytes of a string or binary column's values (all rows, as one array)."""
    offsets = np.frombuffer(column.buffers()[1], dtype=np.int32)
    start = int(offsets[column.offset])
    end = int(offsets[column.offset + len(column)])
    buffer = column.buffers()[2]
    if buffer is None or end == start:
        return np.empty(0, dtype=np.uint8)
    return np.frombuffer(buffer, dtype=np.uint8)[start:end]


# ------------------------------------------------------------------ floats


def _floats(column: pa.Array) -> _Pieces:
    values = column.fill_null(0).to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
    text = pc.cast(pa.array(values, pa.float64()), pa.string())
    with np.errstate(invalid="ignore"):  # NaN compares false, as meant
        magnitude = np.abs(values)
        plain = (magnitude == 0.0) | ((magnitude >= 1e-3) & (magnitude < 1e7))
        integral = plain & (np.floor(values) == values)
    if integral.any():
        text = pc.if_else(pa.array(integral), pc.binary_join_element_wise(text, ".0", ""), text)
    if not plain.all():
        java = ~plain
        text = pc.replace_with_mask(text, pa.array(java), _java_doubles(values[java]))
    return [text]


def _java_doubles(values: np.ndarray) -> pa.Array:
    """Java's `Double.toString` (as `connect.api.json_values.java_double` writes it) of
    floats outside [1e-3, 1e7), with NaN and the infinities as the strings Jackson
    writes."""
    finite = np.isfinite(values)
    out = pa.array(
        np.where(np.isnan(values), '"NaN"', np.where(values > 0, '"Infinity"', '"-Infinity"'))
    )
    if not finite.any():
        return out
    text = pc.cast(pa.array(values[finite], pa.float64()), pa.string())
    parts = pc.extract_regex(text, _FLOAT_PARTS)
    if parts.null_count:
        raise _Refuse  # a form of Arrow's this parser does not know
    sign, whole, frac, exp = (parts.field(i) for i in range(4))
    digits = pc.binary_join_element_wise(whole, frac, "")
    stripped = pc.utf8_ltrim(digits, "0")
    lead = pc.subtract(pc.utf8_length(digits), pc.utf8_length(stripped))
    significant = pc.utf8_rtrim(stripped, "0")
    shift = pc.cast(pc.if_else(pc.equal(exp, ""), "0", exp), pa.int32())
    power = pc.add(pc.subtract(pc.subtract(pc.utf8_length(whole), 1), lead), shift)
    rest = pc.utf8_slice_codeunits(significant, 1)
    rest = pc.if_else(pc.equal(rest, ""), "0", rest)
    java = pc.binary_join_element_wise(
        sign,
        pc.utf8_slice_codeunits(significant, 0, 1),
        ".",
        rest,
        "E",
        pc.cast(power, pa.string()),
        "",
    )
    return pc.replace_with_mask(out, pa.array(finite), java)


# ------------------------------------------------------------------ base64


def _binary(column: pa.Array) -> _Pieces:
    offsets = np.frombuffer(column.buffers()[1], dtype=np.int32)[
        column.offset : column.offset + len(column) + 1
    ]
    return [_quoted_base64(offsets.astype(np.int64), _value_bytes(column), offsets[0])]


def _quoted_base64(offsets: np.ndarray, data: np.ndarray, base: int) -> pa.Array:
    """`"<base64>"` of each row of a binary column given as offsets into `data`
    (which starts at offset `base`): 3 bytes → 4 characters, `=`-padded, in numpy."""
    n = len(offsets) - 1
    starts = offsets[:-1] - base
    lengths = np.diff(offsets)
    groups = (lengths + 2) // 3
    out_lengths = 4 * groups + 2
    out_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(out_lengths, out=out_offsets[1:])
    out = np.empty(int(out_offsets[-1]), dtype=np.uint8)
    out[out_offsets[:-1]] = out[out_offsets[1:] - 1] = ord('"')
    total = int(groups.sum())
    if total:
        row = np.repeat(np.arange(n), groups)
        nth = np.arange(total) - np.repeat(np.cumsum(groups) - groups, groups)
        at = starts[row] + 3 * nth
        end = starts[row] + lengths[row]
        padded = np.concatenate([data, np.zeros(2, dtype=np.uint8)]).astype(np.uint32)
        b1_in = at + 1 < end
        b2_in = at + 2 < end
        word = (
            (padded[at] << 16)
            | (np.where(b1_in, padded[at + 1], 0) << 8)
            | np.where(b2_in, padded[at + 2], 0)
        )
        chars = np.empty((total, 4), dtype=np.uint8)
        chars[:, 0] = _B64[word >> 18]
        chars[:, 1] = _B64[(word >> 12) & 63]
        chars[:, 2] = np.where(b1_in, _B64[(word >> 6) & 63], ord("="))
        chars[:, 3] = np.where(b2_in, _B64[word & 63], ord("="))
        first = out_offsets[row] + 1 + 4 * nth
        out[first[:, None] + np.arange(4)] = chars
    return pa.StringArray.from_buffers(
        n, pa.py_buffer(out_offsets.astype(np.int32)), pa.py_buffer(out)
    )


# ------------------------------------------------------------------ decimals


def _decimal_numeric(column: pa.Array) -> _Pieces:
    """Arrow's decimal text is Python's `str` of the same Decimal (plain, or `1E-10`
    once the exponent is below -6), which is what NUMERIC writes."""
    return [pc.cast(column, pa.string())]


def _decimal_base64(column: pa.Array) -> _Pieces:
    """Quoted base64 of each unscaled value's shortest big-endian two's complement."""
    n = len(column)
    words = np.frombuffer(column.buffers()[1], dtype=np.int64).reshape(-1, 2)
    low, high = words[column.offset : column.offset + n].T
    if column.type.precision <= 18 and (high == (low >> 63)).all():
        return [_base64_int64(low)]
    return [_base64_int128(column)]


def _base64_int64(values: np.ndarray) -> pa.Array:
    """The common case (precision ≤ 18): each value's bytes are the top ones of its
    int64 shifted left, and the sextets are read off that word."""
    magnitude = np.where(values < 0, ~values, values)
    lengths = np.ones(len(values), dtype=np.int64)
    for k in range(1, 8):  # k bytes hold up to 2**(8k-1) - 1
        lengths += magnitude >= 1 << (8 * k - 1)
    word = values.view(np.uint64) << (64 - 8 * lengths).astype(np.uint64)
    aligned = np.zeros((len(values), 9), dtype=np.uint8)
    aligned[:, :8] = word.byteswap().view(np.uint8).reshape(-1, 8)  # big-endian
    return _quoted_sextets(_sextets(aligned[:, : 3 * ((int(lengths.max()) + 2) // 3)]), lengths)


def _base64_int128(column: pa.Array) -> pa.Array:
    """Any decimal128: the big-endian bytes left-aligned in whole 3-byte groups."""
    n = len(column)
    raw = np.frombuffer(column.buffers()[1], dtype=np.uint8).reshape(-1, 16)
    little = raw[column.offset : column.offset + n]
    # the bit length of n (n ≥ 0) or ~n (n < 0) gives the length
    magnitude = little ^ np.where(little[:, 15] >= 0x80, 0xFF, 0).astype(np.uint8)[:, None]
    nonzero = magnitude != 0
    top = 15 - np.argmax(nonzero[:, ::-1], axis=1)
    bits = np.where(nonzero.any(axis=1), top * 8 + _BIT_LENGTH[magnitude[np.arange(n), top]], 0)
    lengths = bits // 8 + 1
    width = 3 * ((int(lengths.max()) + 2) // 3)
    at = (16 - lengths)[:, None] + np.arange(width)
    aligned = np.take_along_axis(little[:, ::-1], np.minimum(at, 15), axis=1)
    aligned[at >= 16] = 0
    return _quoted_sextets(_sextets(aligned), lengths)


def _sextets(aligned: np.ndarray) -> np.ndarray:
    """The base64 digit values of rows of bytes in whole 3-byte groups."""
    wide = aligned.astype(np.uint32)
    word = (wide[:, 0::3] << 16) | (wide[:, 1::3] << 8) | wide[:, 2::3]
    sextets = (word[:, :, None] >> _SHIFTS) & 63
    return sextets.reshape(len(aligned), -1)


def _quoted_sextets(sextets: np.ndarray, lengths: np.ndarray) -> pa.Array:
    """`"<base64>"` per row from a matrix of each row's sextets (left-aligned, as wide
    as the longest row) and its byte length: `=` past the last byte, then each row's
    own cells in row order."""
    n, cells = sextets.shape
    chars = _B64[sextets]
    chars[np.arange(cells) >= ((4 * lengths + 2) // 3)[:, None]] = ord("=")
    size = 4 * ((lengths + 2) // 3) + 2
    text = np.empty((n, cells + 2), dtype=np.uint8)
    text[:, 0] = ord('"')
    text[:, 1:-1] = chars
    text[np.arange(n), size - 1] = ord('"')
    data = text[np.arange(cells + 2) < size[:, None]]
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(size, out=offsets[1:])
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data))
