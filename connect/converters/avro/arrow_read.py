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
   row at once, then advances the positions. A varint is read a byte at a time over
   the rows that still have a continuation bit, so its cost follows its length.
3. Strings and bytes are cut out of the buffer with Arrow's `take` over a binary array
   whose offsets alternate value start and value end (so the even elements are the
   values and the odd ones the bytes between them): one memcpy per value in C++.

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
    head = buf[starts[:, None] + np.arange(1, HEADER_SIZE)].astype(np.int64)
    ids = (head[:, 0] << 24) | (head[:, 1] << 16) | (head[:, 2] << 8) | head[:, 3]
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
            got = _varint(buf, pos)
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


def _varint(buf: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The unsigned base-128 varints at `at` and their lengths, or None for one of more
    than 10 bytes or past 64 bits (fastavro's reader keeps 64 bits)."""
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
    got = _varint(buf, at)
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
    raw = np.ascontiguousarray(buf[at[:, None] + np.arange(width)])
    if width == 4:
        # fastavro reads a C float into a Python float (a double); Arrow writes that
        # back as a float: a signalling NaN comes out quiet, as here.
        with np.errstate(invalid="ignore"):
            values = raw.view("<f4").ravel().astype(np.float64).astype("<f4")
    else:
        values = raw.view("<f8").ravel()
    values = _scatter(values, n, rows)
    return pa.Array.from_buffers(slot.arrow, n, [None, pa.py_buffer(values)]), at + width


def _strings(
    slot: Slot, buf: np.ndarray, blob: bytes, at: np.ndarray, n: int, rows: np.ndarray | None
) -> Read:
    got = _varint(buf, at)
    if got is None:
        return None
    z, width = got
    lengths = _unzigzag(z)
    begins = at + width
    if lengths.size and int(lengths.min()) < 0:
        return None
    after = begins + lengths
    if after.size and int(after.max()) > len(blob) - len(_PAD):
        return None  # past the last message (decode's check covers the others)
    full = _scatter(lengths, n, rows)
    data = _cut(blob, begins, after)
    offsets = np.zeros(n + 1, np.int32)
    if full.size and int(full.sum()) >= 2**31:
        return None
    np.cumsum(full, out=offsets[1:])
    array = pa.Array.from_buffers(slot.arrow, n, [None, pa.py_buffer(offsets), data])
    if slot.kind == "string":
        try:
            array.validate(full=True)  # fastavro decodes strictly
        except pa.ArrowInvalid:
            return None
    return array, after


def _cut(blob: bytes, begins: np.ndarray, after: np.ndarray) -> pa.Buffer:
    """The bytes [begins[i], after[i]) of `blob`, end to end. The spans are in order
    and do not overlap, so one binary array over the whole blob, with offsets
    alternating begin and end, holds the spans at its even positions."""
    k = len(begins)
    if k == 0:
        return pa.py_buffer(b"")
    large = len(blob) >= 2**31
    bounds = np.empty(2 * k, np.int64 if large else np.int32)
    bounds[0::2] = begins
    bounds[1::2] = after
    spans = pa.Array.from_buffers(
        pa.large_binary() if large else pa.binary(),
        2 * k - 1,
        [None, pa.py_buffer(bounds), pa.py_buffer(blob)],
    )
    taken = spans.take(pa.array(np.arange(0, 2 * k - 1, 2)))
    first = np.frombuffer(taken.buffers()[1], bounds.dtype, count=1, offset=taken.offset)
    return taken.buffers()[2].slice(int(first[0]))


def _decimals(
    slot: Slot, buf: np.ndarray, blob: bytes, at: np.ndarray, n: int, rows: np.ndarray | None
) -> Read:
    got = _varint(buf, at)
    if got is None:
        return None
    z, width = got
    lengths = _unzigzag(z)
    if lengths.size and (int(lengths.min()) < 0 or int(lengths.max()) > 16):
        return None  # more than decimal128 holds (or malformed)
    begins = at + width
    after = begins + lengths
    bound = 10**slot.precision
    if bound < 2**63 and (not lengths.size or int(lengths.max()) <= 8):
        # Fits 64 bits (precision ≤ 18, the usual): the 8 bytes that end where the
        # value ends, as a big-endian int64, shifted left and back to sign-extend.
        raw = buf[after[:, None] - 8 + np.arange(8)]
        shift = (8 * (8 - np.maximum(lengths, 1))).astype(np.int64)
        x = (raw.view(">i8").ravel().astype(np.int64) << shift) >> shift
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
