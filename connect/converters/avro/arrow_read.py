"""Confluent-framed Avro messages → Arrow columns, a column at a time
(`AvroConverter.to_arrow`).

Why: fastavro reads a record in microseconds, building a dict and a Python object
per field, and `connect.api.arrow.batch_from_values` then turns those objects back
into columns. A flat record's fields are laid out one after the other (the byte
layout is in `arrow_write`'s docstring), so all rows can be read a field at a time:

1. `frame` joins the messages into one buffer and checks every header (magic byte 0,
   at least 5 bytes); messages with the same schema id one after the other (nulls,
   tombstones, skipped) make one run.
2. `decode` keeps each row's read position in one numpy array and, field by field,
   reads the union branch index, the varint, the fixed bytes or the length of every
   row at once, then advances the positions. Fixed-width reads (a header's schema id,
   a float, a decimal's last 8 bytes, a varint's first 8) gather each row's bytes in
   one go through an unaligned strided view of the buffer (`_gather`), not a row of
   byte indices per row. A varint of up to 8 bytes (values below 2**56: nearly all)
   is decoded from its row's 8-byte word with a handful of whole-column integer
   operations, whatever its length; only the rows with a longer one are read a byte
   at a time.
3. Strings and bytes are cut out of the buffer with Arrow's `take` over a binary array
   whose offsets alternate value start and value end (so the even elements are the
   values and the odd ones the bytes between them): one memcpy per value in C++; a
   column without nulls is that array itself, its offsets made by the `take`.

The batch is the one `batch_from_values(schema, values)` builds from the values
`AvroConverter.to_connect_batch` reads. `decode` answers None where the record path
would fail or read differently: a position past the end of its message, bytes left
over after the last field, a varint of more than 10 bytes, a union index other than
the two branches, a negative length, invalid UTF-8, an int outside its Connect width,
a date, time or timestamp outside Python's range, or a decimal that does not fit its
precision (fastavro would round it) or 16 bytes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import chain, compress, pairwise
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from connect.converters.avro.arrow_write import BOUNDS, INT_KINDS, Slot

__all__ = ["Framing", "decode", "frame"]

HEADER_SIZE = 5
# A field's reads go at most 36 bytes past where its message ends before `decode`
# notices (a branch index's 10, a length's 10, a decimal's 16), and a decimal's reads
# start up to 16 bytes before its end: the buffer is padded at both ends so that no
# read leaves it.
_PAD = bytes(64)


class Framing(NamedTuple):
    """Messages laid end to end: `buf` (padded), where each starts and ends, its
    schema id, and its position in the input."""

    blob: bytes
    buf: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    ids: np.ndarray
    rows: np.ndarray

    def runs(self) -> Iterator[tuple[int, slice]]:
        """(schema id, slice of the arrays above) for each run of one schema id."""
        ids = self.ids
        if not len(ids):
            return
        cuts = [0, *(np.flatnonzero(ids[1:] != ids[:-1]) + 1).tolist(), len(ids)]
        for a, b in pairwise(cuts):
            yield int(ids[a]), slice(a, b)


def frame(data: Sequence[bytes | None] | pa.BinaryArray) -> Framing | None:
    """The framing of `data`, or None when a non-null message is too short for the
    header or its magic byte is not 0 (the record path says which, and why)."""
    if isinstance(data, pa.BinaryArray):
        return _frame_array(data)
    n = len(data)
    messages: Sequence[Any] = data
    if None in data:
        objects = np.empty(n, dtype=object)
        objects[:] = list(data)
        present = np.not_equal(objects, None).astype(bool)  # per message, in C
        rows = np.flatnonzero(present)
        messages = list(compress(data, present))
    else:
        rows = np.arange(n, dtype=np.int64)
    m = len(messages)
    lengths = np.fromiter(map(len, messages), np.int64, count=m)
    if m and int(lengths.min()) < HEADER_SIZE:
        return None
    blob = b"".join(chain((_PAD,), messages, (_PAD,)))
    ends = np.cumsum(lengths) + len(_PAD)
    return _headers(blob, ends - lengths, ends, rows)


def _frame_array(data: pa.BinaryArray) -> Framing | None:
    """`frame` of messages already laid end to end (a log batch's values, handed
    over as they are stored): one copy of their bytes between the pads, no Python
    object per message."""
    n = len(data)
    bounds = np.frombuffer(data.buffers()[1], np.int32, n + 1, 4 * data.offset).astype(np.int64)
    first, last = int(bounds[0]), int(bounds[-1])
    held = data.buffers()[2]
    body = b"" if held is None or last == first else memoryview(held)[first:last]
    blob = b"".join((_PAD, body, _PAD))
    starts, ends = bounds[:-1] + (len(_PAD) - first), bounds[1:] + (len(_PAD) - first)
    rows = np.arange(n, dtype=np.int64)
    if data.null_count:
        rows = np.flatnonzero(data.is_valid().to_numpy(zero_copy_only=False))
        starts, ends = starts[rows], ends[rows]
    if len(rows) and int((ends - starts).min()) < HEADER_SIZE:
        return None
    return _headers(blob, starts, ends, rows)


def _headers(blob: bytes, starts: np.ndarray, ends: np.ndarray, rows: np.ndarray) -> Framing | None:
    """The framing of the messages at [starts, ends) of `blob` (each at least a
    header long), None when a magic byte is not 0."""
    buf = np.frombuffer(blob, np.uint8)
    m = len(starts)
    if m and buf[starts].any():
        return None  # a magic byte other than 0
    # Gathered in the machine's byte order and swapped after: numpy's gather of a
    # big-endian dtype is twice as slow.
    ids = _gather(blob, "<u4", starts + 1).byteswap().astype(np.int64)
    return Framing(blob, buf, starts, ends, ids, rows)


def decode(
    slots: Sequence[Slot], arrow_schema: pa.Schema, framing: Framing, run: slice
) -> pa.RecordBatch | None:
    """The rows of one run as a record batch of `arrow_schema` (columns in slot order),
    or None (see the module docstring)."""
    buf, blob = framing.buf, framing.blob
    pos = framing.starts[run] + HEADER_SIZE
    ends = framing.ends[run]
    n = len(pos)
    arrays = []
    for slot in slots:
        valid = at = None
        if slot.null_byte is not None:
            got = _varint(buf, pos, blob)
            if got is None:
                return None
            branch, width = got
            is_value = branch == slot.value_byte
            if not (is_value | (branch == slot.null_byte)).all():
                return None
            pos += width
            if not is_value.all():
                valid = is_value
                at = np.flatnonzero(is_value)
        here = pos if at is None else pos[at]
        got_column = _READERS[slot.kind](slot, buf, blob, here, n, at)
        if got_column is None:
            return None
        array, after = got_column
        if at is None:
            pos = after
        else:
            pos[at] = after
        if (pos > ends).any():
            return None  # read past the end of a message
        if valid is not None:
            array = _with_validity(array, valid)
        arrays.append(array)
    if (pos != ends).any():
        return None  # bytes left after the last field: the record path reads it its way
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema)


# ---------------------------------------------------------------- fields


def _gather(blob: bytes, dtype: str, at: np.ndarray) -> np.ndarray:
    """The values of `dtype` that start at the byte positions `at` of `blob`: one
    gather through a view with a stride of one byte (numpy reads it unaligned)."""
    size = np.dtype(dtype).itemsize
    view = np.ndarray((len(blob) - size + 1,), dtype, buffer=blob, strides=(1,))
    return view[at]


_HIGH = np.uint64(0x8080808080808080)
_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
# Masks and shifts that pack the 7-bit groups of a word: bytes into 14-bit pairs,
# pairs into 28-bit quads, quads into the 56-bit value.
_PACK = tuple(
    (np.uint64(keep), np.uint64(move), np.uint64(shift))
    for keep, move, shift in (
        (0x007F007F007F007F, 0x7F007F007F007F00, 1),
        (0x00003FFF00003FFF, 0x3FFF00003FFF0000, 2),
        (0x000000000FFFFFFF, 0x0FFFFFFF00000000, 4),
    )
)
_ONE = np.uint64(1)
_SEVEN, _TOP = np.uint64(7), np.uint64(56)
_LENGTHS = np.uint64(0x0102030405060708)


def _varint(
    buf: np.ndarray, at: np.ndarray, blob: bytes
) -> tuple[np.ndarray, np.ndarray] | None:
    """The unsigned base-128 varints at `at` and their lengths, or None for one of more
    than 10 bytes or past 64 bits (fastavro's reader keeps 64 bits).

    A row whose first byte has no continuation bit is done; the others read their
    first 8 bytes as one little-endian word (`_varint_words`): the lowest byte without
    a continuation bit ends the varint (`stop`'s lowest set bit, 8 * length - 1), the
    bytes above it are masked off and the 7-bit groups packed together. Rows whose 8
    bytes all continue (a varint of 9 or 10 bytes, or malformed) go to `_varint_bytes`."""
    first = buf[at]
    continues = first >= 0x80
    if not continues.any():  # all one byte: a string's length, a small int, a branch index
        return first.astype(np.uint64), np.ones(len(at), np.int64)
    if continues.all():  # an id, a timestamp
        z, width = _varint_words(blob, at)
    else:
        more = np.flatnonzero(continues)
        z, width = first.astype(np.uint64), np.ones(len(at), np.int64)
        z[more], width[more] = _varint_words(blob, at[more])
    long = np.flatnonzero(width == 0)
    if long.size:
        got = _varint_bytes(buf, at[long])
        if got is None:
            return None
        z[long], width[long] = got
    return z, width


def _varint_words(blob: bytes, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The varints at `at` read from each row's 8-byte word (the lengths 0 where no
    byte of the 8 ends it)."""
    word = _gather(blob, "<u8", at)
    # In place: each step is a pass over the column, not a new array.
    stop = np.invert(word)
    stop &= _HIGH
    lowest = np.negative(stop)  # two's complement: the lowest set bit survives the &
    lowest &= stop
    mask = lowest << _ONE
    mask -= _ONE
    mask &= _LOW7
    word &= mask
    moved = np.empty_like(word)
    for keep, move, shift in _PACK:
        np.bitwise_and(word, move, out=moved)
        moved >>= shift
        word &= keep
        word |= moved
    # `lowest` >> 7 is 256**(length - 1): times _LENGTHS (bytes 8, 7, ..., 1 from the
    # low end) it moves byte 8 - length, the length, to the top (0 where no byte stops).
    lowest >>= _SEVEN
    lowest *= _LENGTHS
    lowest >>= _TOP
    return word, lowest.view(np.int64)


def _varint_bytes(buf: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """`_varint` a byte at a time over the rows that still have a continuation bit."""
    first = buf[at]
    z = (first & 0x7F).astype(np.uint64)
    width = np.ones(len(at), np.int64)
    more = np.flatnonzero(first & 0x80)
    k = 1
    while more.size:
        if k == 10:
            return None
        byte = buf[at[more] + k]
        if k == 9 and (byte > 1).any():
            return None
        z[more] |= (byte & 0x7F).astype(np.uint64) << np.uint64(7 * k)
        width[more] += 1
        more = more[(byte & 0x80) != 0]
        k += 1
    return z, width


def _unzigzag(z: np.ndarray) -> np.ndarray:
    return (z >> np.uint64(1)).view(np.int64) ^ -(z & np.uint64(1)).view(np.int64)


def _lengths(z: np.ndarray) -> np.ndarray | None:
    """The zig-zag varints `z` as lengths, None when one is negative (odd)."""
    if (z & _ONE).any():
        return None
    return (z >> _ONE).view(np.int64)


def _scatter(values: np.ndarray, n: int, at: np.ndarray | None) -> np.ndarray:
    """`values` of the rows `at` (all rows: None) spread over `n` rows, zeros between."""
    if at is None:
        return values
    full = np.zeros((n, *values.shape[1:]), values.dtype)
    full[at] = values
    return full


def _with_validity(array: pa.Array, valid: np.ndarray) -> pa.Array:
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(array.type, len(array), [bitmap, *array.buffers()[1:]])


Read = tuple[pa.Array, np.ndarray] | None


def _ints(
    slot: Slot, buf: np.ndarray, blob: bytes, at: np.ndarray, n: int, rows: np.ndarray | None
) -> Read:
    got = _varint(buf, at, blob)
    if got is None:
        return None
    z, width = got
    x = _unzigzag(z)
    low, high = BOUNDS[slot.kind]
    if x.size and (int(x.min()) < low or int(x.max()) > high):
        return None  # the Connect value cannot be made, or does not fit its column
    values = _scatter(x.astype(INT_KINDS[slot.kind]), n, rows)
    return pa.Array.from_buffers(slot.arrow, n, [None, pa.py_buffer(values)]), at + width


def _fixed(
    slot: Slot, buf: np.ndarray, blob: bytes, at: np.ndarray, n: int, rows: np.ndarray | None
) -> Read:
    if slot.kind == "boolean":
        values = _scatter(buf[at] != 0, n, rows)  # fastavro: any byte but 0 is true
        bits = pa.py_buffer(np.packbits(values, bitorder="little"))
        return pa.Array.from_buffers(pa.bool_(), n, [None, bits]), at + 1
    width = 4 if slot.kind == "float" else 8
    if width == 4:
        # fastavro reads a C float into a Python float (a double); Arrow writes that
        # back as a float: a signalling NaN comes out quiet, as here.
        with np.errstate(invalid="ignore"):
            values = _gather(blob, "<f4", at).astype(np.float64).astype("<f4")
    else:
        values = _gather(blob, "<u8", at).view("<f8")  # the bits as they are
    values = _scatter(values, n, rows)
    return pa.Array.from_buffers(slot.arrow, n, [None, pa.py_buffer(values)]), at + width


def _strings(
    slot: Slot, buf: np.ndarray, blob: bytes, at: np.ndarray, n: int, rows: np.ndarray | None
) -> Read:
    got = _varint(buf, at, blob)
    if got is None:
        return None
    z, width = got
    lengths = _lengths(z)
    if lengths is None:
        return None
    begins = at + width
    after = begins + lengths
    if after.size and int(after.max()) > len(blob) - len(_PAD):
        return None  # past the last message (decode's check covers the others)
    taken = _cut(blob, begins, after)
    if rows is None and taken.type == pa.binary():
        array = taken.view(slot.arrow)  # its offsets are the column's: no copy, no sum
    else:
        full = _scatter(lengths, n, rows)
        offsets = np.zeros(n + 1, np.int32)
        if full.size and int(full.sum()) >= 2**31:
            return None
        np.cumsum(full, out=offsets[1:])
        first = np.frombuffer(taken.buffers()[1], _OFFSETS[taken.type], 1, taken.offset)
        data = taken.buffers()[2].slice(int(first[0]))
        array = pa.Array.from_buffers(slot.arrow, n, [None, pa.py_buffer(offsets), data])
    if slot.kind == "string":
        try:
            array.validate(full=True)  # fastavro decodes strictly
        except pa.ArrowInvalid:
            return None
    return array, after


_OFFSETS = {pa.binary(): np.int32, pa.large_binary(): np.int64}


def _cut(blob: bytes, begins: np.ndarray, after: np.ndarray) -> pa.Array:
    """The bytes [begins[i], after[i]) of `blob` as a binary array (large past 2 GiB).
    The spans are in order and do not overlap, so one binary array over the whole
    blob, with offsets alternating begin and end, holds the spans at its even
    positions: Arrow's `take` of those copies each with one memcpy."""
    k = len(begins)
    if k == 0:
        return pa.array([], pa.binary())
    large = len(blob) >= 2**31
    bounds = np.empty(2 * k, np.int64 if large else np.int32)
    bounds[0::2] = begins
    bounds[1::2] = after
    spans = pa.Array.from_buffers(
        pa.large_binary() if large else pa.binary(),
        2 * k - 1,
        [None, pa.py_buffer(bounds), pa.py_buffer(blob)],
    )
    evens = pa.array(np.arange(0, 2 * k - 1, 2, dtype=np.int32 if not large else np.int64))
    return pc.take(spans, evens, boundscheck=False)  # in range by construction


def _decimals(
    slot: Slot, buf: np.ndarray, blob: bytes, at: np.ndarray, n: int, rows: np.ndarray | None
) -> Read:
    got = _varint(buf, at, blob)
    if got is None:
        return None
    z, width = got
    lengths = _lengths(z)
    if lengths is None or (lengths.size and int(lengths.max()) > 16):
        return None  # more than decimal128 holds (or malformed)
    begins = at + width
    after = begins + lengths
    bound = 10**slot.precision
    if bound < 2**63 and (not lengths.size or int(lengths.max()) <= 8):
        # Fits 64 bits (precision ≤ 18, the usual): the 8 bytes that end where the
        # value ends, as a big-endian int64, shifted left and back to sign-extend.
        shift = (8 * (8 - np.maximum(lengths, 1))).astype(np.int64)
        x = (_gather(blob, "<i8", after - 8).byteswap() << shift) >> shift
        x[lengths == 0] = 0  # no bytes: 0, as int.from_bytes(b"") is
        if x.size and int(np.abs(x).view(np.uint64).max()) >= bound:
            return None  # fastavro rounds to the precision; Arrow refuses the digits
        words = np.empty((len(x), 2), np.int64)
        words[:, 0] = x
        words[:, 1] = x >> 63
        values = _scatter(words, n, rows)
        return pa.Array.from_buffers(slot.arrow, n, [None, pa.py_buffer(values)]), after
    # Little-endian byte j is big-endian byte (after - 1 - j); above the length, the
    # sign extends. (The buffer is padded in front: the index stays positive.)
    j = np.arange(16)
    inside = j < lengths[:, None]
    picked = buf[after[:, None] - 1 - j]
    negative = (lengths > 0) & (buf[begins] >= 0x80)
    sign = np.where(negative, np.uint8(0xFF), np.uint8(0))
    little = np.where(inside, picked, sign[:, None]).astype(np.uint8)
    halves = little.view("<u8")
    lo, hi = halves[:, 0], halves[:, 1]
    mag_lo = np.where(negative, ~lo + np.uint64(1), lo)
    mag_hi = np.where(negative, ~hi + (mag_lo == 0).astype(np.uint64), hi)
    b_hi, b_lo = np.uint64(bound >> 64), np.uint64(bound & (2**64 - 1))
    if not ((mag_hi < b_hi) | ((mag_hi == b_hi) & (mag_lo < b_lo))).all():
        return None  # fastavro rounds to the precision; Arrow refuses the digits
    values = _scatter(little, n, rows)
    return pa.Array.from_buffers(slot.arrow, n, [None, pa.py_buffer(values)]), after


_READERS = {
    **dict.fromkeys(INT_KINDS, _ints),
    **dict.fromkeys(("float", "double", "boolean"), _fixed),
    **dict.fromkeys(("string", "bytes"), _strings),
    "decimal": _decimals,
}
