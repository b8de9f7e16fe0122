"""Record batches: the unit the log writes, checks, compresses and reads.

Byte layout (little-endian; the full description is in docs/log-format.md)::

    offset  size  field
    0       8     base_offset        int64   offset of the first record
    8       4     batch_length       int32   bytes after this field (batch = 12 + length)
    12      1     magic              int8    format version, currently 1
    13      4     crc                uint32  CRC-32 (IEEE, zlib) of bytes [17, end)
    17      2     attributes         int16   see ATTR_* below
    19      4     last_offset_delta  int32   last record's offset - base_offset
    23      8     first_timestamp    int64   ms; every record's when ATTR_TIMESTAMPS is unset
    31      8     max_timestamp      int64   ms
    39      4     record_count       int32
    43      ...   payload            (compressed as one block when the codec is not none)

The payload is columnar, so that encoding and decoding run as a handful of C-level
operations per batch (`array`, `map(len, ...)`, `b"".join`, slicing) instead of
Python work per record — the per-record Python cost, not the disk, limits the log::

    [offset deltas  int32 × n]   when ATTR_OFFSET_DELTAS (a compacted batch has gaps)
    [timestamps     int64 × n]   when ATTR_TIMESTAMPS
    [key lengths    int32 × n]   when ATTR_KEYS; -1 is a null key
    value lengths   int32 × n    -1 is a null value (a tombstone)
    [header lengths int32 × n]   when ATTR_HEADERS
    key bytes, value bytes, header bytes   (each column concatenated)

One record's headers are: count int32, then per header name length int32, UTF-8
name, value length int32 (-1 = null), value.

The CRC leaves out base_offset and batch_length, so a batch is encoded before the
writer takes the partition lock and its base offset is patched in afterwards.

Transactions (Kafka's model, see log.txn_coordinator): a batch written inside a
transaction sets ATTR_TRANSACTIONAL, has magic 2, and carries a 16-byte producer
section between the header and the payload (inside the CRC, never compressed, so a
reader learns a batch's producer from its first 59 bytes)::

    43      8     producer_id        int64
    51      2     producer_epoch     int16
    53      2     reserved           int16   0
    55      4     base_sequence      int32   -1 when not tracked

A control batch (ATTR_CONTROL, always transactional) ends a transaction in one
partition: one record whose key and value are Kafka's control record (big-endian,
as Kafka writes them): key `version int16 = 0, type int16` (0 ABORT, 1 COMMIT),
value `version int16 = 0, coordinator_epoch int32`. Readers never return control
records; their offsets are skipped. Plain batches keep magic 1 and no producer
section, so files written before transactions read as before, and a reader that
knows only magic 1 refuses a transactional batch instead of misreading it.
"""

from __future__ import annotations

import struct
import sys
from array import array
from bisect import bisect_left
from collections.abc import Sequence
from functools import partial
from itertools import accumulate, repeat
from typing import NamedTuple

from log.compression import compress, decompress
from log.records import Header, Record

try:
    # The same CRC-32 as zlib's, from ISA-L (carry-less multiply in SIMD registers):
    # several times zlib's speed, whose CRC was a visible share of a sink task's time
    # reading large batches (docs/performance.md). zlib's stands in where the isal
    # wheel is missing.
    from isal.isal_zlib import crc32
except ImportError:  # pragma: no cover - platforms without an isal wheel
    from zlib import crc32

__all__ = [
    "HEADER",
    "HEADER_SIZE",
    "MAGIC",
    "MAGIC_TXN",
    "PRODUCER_SIZE",
    "BatchColumns",
    "BatchHeader",
    "BatchValues",
    "ProducerSection",
    "control_type",
    "decode_columns",
    "decode_records",
    "decode_values",
    "encode_batch",
    "encode_control_batch",
    "parse_header",
    "parse_producer",
    "set_base_offset",
    "verify_crc",
]

MAGIC = 1
MAGIC_TXN = 2  # a batch with a producer section (ATTR_TRANSACTIONAL)
HEADER = struct.Struct("<qibIhiqqi")
HEADER_SIZE = HEADER.size  # 43
_BASE_OFFSET = struct.Struct("<q")
_CRC_START = 17  # CRC covers attributes .. end
LENGTH_FIELD_END = 12  # batch_length counts the bytes after this position

ATTR_CODEC_MASK = 0x07
ATTR_KEYS = 0x08
ATTR_HEADERS = 0x10
ATTR_TIMESTAMPS = 0x20
ATTR_OFFSET_DELTAS = 0x40
ATTR_NULL_VALUES = 0x80
ATTR_TRANSACTIONAL = 0x100
ATTR_CONTROL = 0x200
ATTR_TXN_BITS = ATTR_TRANSACTIONAL | ATTR_CONTROL

PRODUCER = struct.Struct("<qhhi")
PRODUCER_SIZE = PRODUCER.size  # 16
CONTROL_ABORT = 0
CONTROL_COMMIT = 1
_CONTROL_KEY = struct.Struct(">hh")
_CONTROL_VALUE = struct.Struct(">hi")

_I32 = struct.Struct("<i")
_CRC = struct.Struct("<I")
_CRC_FIELD = 13
_HEADER_PLACEHOLDER = bytes(HEADER_SIZE)
_HDR_COUNT = struct.Struct("<i")
_LITTLE = sys.byteorder == "little"
# tuple.__new__ bound to Record: builds a Record from a tuple entirely in C.
_new_record = partial(tuple.__new__, Record)
assert array("i").itemsize == 4 and array("q").itemsize == 8


class BatchHeader(NamedTuple):
    base_offset: int
    batch_length: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    first_timestamp: int
    max_timestamp: int
    record_count: int

    @property
    def size(self) -> int:
        """Bytes the whole batch occupies on disk."""
        return LENGTH_FIELD_END + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1


class ProducerSection(NamedTuple):
    """The producer of a transactional batch (Kafka's fields, in our byte order)."""

    producer_id: int
    producer_epoch: int
    base_sequence: int


class BatchColumns(NamedTuple):
    """A decoded batch as columns: what batch-aware callers (converters, sinks that
    build Arrow columns) use instead of one Record per row."""

    offsets: Sequence[int]
    timestamps: Sequence[int]
    keys: list[bytes | None]
    values: list[bytes | None]
    headers: list[tuple[Header, ...]]


class BatchValues(NamedTuple):
    """A batch's values from one record on, as the batch holds them: one byte string
    and a length per record (-1: no value), without a Python object per record.

    Why: a sink handed Arrow batches needs only the values, offsets and timestamps,
    and a converter decodes values laid end to end (`Converter.to_arrow`): splitting
    them into one bytes object per record, then building a Record each, only for the
    converter to join them again, was most of such a sink task's CPU (~1.2 CPU s
    per million Avro rows read and decoded; ~0.3 without). Rows `lo`..`hi`
    (exclusive) of the batch are this read's; `records()` gives them as the record
    path reads them, when it must take over."""

    buf: bytes | memoryview
    position: int
    header: BatchHeader
    data: bytes
    value_start: int  # where row 0's value begins in `data`
    value_lengths: array  # "i", one per row of the batch
    offsets: Sequence[int]
    timestamps: Sequence[int] | None  # None: every row has header.first_timestamp
    lo: int
    hi: int

    @property
    def count(self) -> int:
        return self.hi - self.lo

    @property
    def first_offset(self) -> int:
        return self.offsets[self.lo]

    @property
    def last_offset(self) -> int:
        return self.offsets[self.hi - 1]

    def upto(self, rows: int) -> BatchValues:
        """The first `rows` rows of these."""
        return self._replace(hi=self.lo + rows)

    def records(self, topic: str, partition: int) -> list[Record]:
        """These rows as Records, exactly as `decode_records` reads them."""
        out = decode_records(
            self.buf, self.position, self.header, topic, partition, min_offset=self.first_offset
        )
        del out[self.count :]
        return out


def _le(arr: array) -> bytes:
    if not _LITTLE:
        arr = array(arr.typecode, arr)
        arr.byteswap()
    return arr.tobytes()


def _from_le(typecode: str, data: memoryview | bytes) -> array:
    arr = array(typecode)
    arr.frombytes(data)
    if not _LITTLE:
        arr.byteswap()
    return arr


def _lengths(column: Sequence[bytes | None]) -> tuple[array, bool]:
    """Lengths of a column, -1 for None, and whether any None was seen."""
    try:
        return array("i", map(len, column)), False  # fast path: no nulls
    except TypeError:
        return array("i", [-1 if v is None else len(v) for v in column]), True


def _encode_headers(headers: Sequence[Sequence[Header]]) -> tuple[array, bytes]:
    parts: list[bytes] = []
    lengths = array("i")
    pack = _I32.pack
    for record_headers in headers:
        before = len(parts)
        size = 4
        parts.append(_HDR_COUNT.pack(len(record_headers)))
        for name, value in record_headers:
            raw = name.encode()
            parts.append(pack(len(raw)))
            parts.append(raw)
            if value is None:
                parts.append(pack(-1))
                size += 8 + len(raw)
            else:
                parts.append(pack(len(value)))
                parts.append(value)
                size += 8 + len(raw) + len(value)
        if not record_headers:
            del parts[before:]
            size = 0
        lengths.append(size)
    return lengths, b"".join(parts)


def _record_columns(
    values: Sequence[bytes | None],
    keys: Sequence[bytes | None] | None,
    headers: Sequence[Sequence[Header]] | None,
    arrays: list[bytes],
    blobs: list[bytes],
) -> int:
    """Append the key, value and header columns to `arrays` (lengths) and `blobs`
    (bytes); return the attribute bits they need."""
    attributes = 0
    if keys is not None and any(k is not None for k in keys):
        attributes |= ATTR_KEYS
        key_lengths, _ = _lengths(keys)
        arrays.append(_le(key_lengths))
        blobs.append(b"".join([k or b"" for k in keys]))

    value_lengths, has_nulls = _lengths(values)
    arrays.append(_le(value_lengths))
    if has_nulls:
        attributes |= ATTR_NULL_VALUES
        blobs.append(b"".join([v or b"" for v in values]))
    else:
        blobs.extend(values)  # type: ignore[arg-type]  # joined once, into the batch

    if headers is not None and any(headers):
        attributes |= ATTR_HEADERS
        header_lengths, header_blob = _encode_headers(headers)
        arrays.append(_le(header_lengths))
        blobs.append(header_blob)
    return attributes


def encode_batch(
    values: Sequence[bytes | None],
    *,
    keys: Sequence[bytes | None] | None = None,
    timestamps: Sequence[int] | None = None,
    headers: Sequence[Sequence[Header]] | None = None,
    timestamp: int = 0,
    codec: int = 0,
    base_offset: int = 0,
    offset_deltas: Sequence[int] | None = None,
    producer: ProducerSection | None = None,
    control: bool = False,
) -> bytearray:
    """Encode one batch. `timestamp` stands for every record when `timestamps` is
    None. `offset_deltas` is only for rewritten (compacted) batches with gaps.
    `producer` makes it a transactional batch (magic 2), `control` a control one."""
    count = len(values)
    if count == 0:
        raise ValueError("a batch holds at least one record")
    attributes = codec & ATTR_CODEC_MASK
    magic = MAGIC
    section = b""
    if producer is not None:
        magic = MAGIC_TXN
        attributes |= ATTR_TRANSACTIONAL | (ATTR_CONTROL if control else 0)
        section = PRODUCER.pack(producer[0], producer[1], 0, producer[2])
    arrays: list[bytes] = []
    blobs: list[bytes] = []

    last_delta = count - 1
    if offset_deltas is not None:
        attributes |= ATTR_OFFSET_DELTAS
        arrays.append(_le(array("i", offset_deltas)))
        last_delta = offset_deltas[-1]

    if timestamps is None:
        first_ts = max_ts = timestamp
    else:
        attributes |= ATTR_TIMESTAMPS
        arrays.append(_le(array("q", timestamps)))
        first_ts = timestamps[0]
        max_ts = max(timestamps)

    attributes |= _record_columns(values, keys, headers, arrays, blobs)

    if codec:
        payload = compress(codec, b"".join(arrays + blobs))
        parts = [_HEADER_PLACEHOLDER, section, payload]
        payload_size = len(payload)
    else:
        # One join straight into the final buffer: no intermediate payload copy.
        parts = [_HEADER_PLACEHOLDER, section, *arrays, *blobs]
        payload_size = sum(map(len, arrays)) + sum(map(len, blobs))
    batch = bytearray().join(parts)
    HEADER.pack_into(
        batch,
        0,
        base_offset,
        HEADER_SIZE - LENGTH_FIELD_END + len(section) + payload_size,
        magic,
        0,
        attributes,
        last_delta,
        first_ts,
        max_ts,
        count,
    )
    crc = crc32(memoryview(batch)[_CRC_START:])
    _CRC.pack_into(batch, _CRC_FIELD, crc)
    return batch


def encode_control_batch(
    producer: ProducerSection, *, commit: bool, coordinator_epoch: int, timestamp: int
) -> bytearray:
    """A control batch ending `producer`'s transaction in one partition: Kafka's
    control record (key: version 0, type COMMIT or ABORT; value: version 0, the
    coordinator epoch), big-endian as Kafka writes it."""
    key = _CONTROL_KEY.pack(0, CONTROL_COMMIT if commit else CONTROL_ABORT)
    value = _CONTROL_VALUE.pack(0, coordinator_epoch)
    return encode_batch([value], keys=[key], timestamp=timestamp, producer=producer, control=True)


def parse_producer(buf: bytes | memoryview, position: int = 0) -> ProducerSection:
    """The producer section of the transactional batch at `position`."""
    pid, epoch, _reserved, sequence = PRODUCER.unpack_from(buf, position + HEADER_SIZE)
    return ProducerSection(pid, epoch, sequence)


def control_type(buf: bytes | memoryview, position: int, header: BatchHeader) -> int:
    """CONTROL_COMMIT or CONTROL_ABORT: the type in a control batch's one record."""
    _offsets, _ts, keys, _values, _headers = _decode(buf, position, header)
    return _CONTROL_KEY.unpack(keys[0])[1]


def set_base_offset(batch: bytearray | memoryview, base_offset: int) -> None:
    """Patch the base offset of an encoded batch in place (not covered by the CRC)."""
    _BASE_OFFSET.pack_into(batch, 0, base_offset)


def parse_header(buf: bytes | memoryview, position: int = 0) -> BatchHeader:
    return BatchHeader._make(HEADER.unpack_from(buf, position))


def verify_crc(buf: bytes | memoryview, position: int, header: BatchHeader) -> bool:
    end = position + header.size
    return crc32(memoryview(buf)[position + _CRC_START : end]) == header.crc


def _split(data: bytes, start: int, lengths: array, nullable: bool) -> list[bytes | None]:
    """Cut `data` from `start` into pieces of `lengths` (-1: None) in C-level maps."""
    if not nullable:
        bounds = list(accumulate(lengths, initial=start))
        return list(map(data.__getitem__, map(slice, bounds, bounds[1:])))
    out: list[bytes | None] = []
    pos = start
    for n in lengths:
        if n < 0:
            out.append(None)
        else:
            out.append(data[pos : pos + n])
            pos += n
    return out


def _decode_headers(blob: bytes, lengths: array) -> list[tuple[Header, ...]]:
    out: list[tuple[Header, ...]] = []
    pos = 0
    unpack = _I32.unpack_from
    for size in lengths:
        if size == 0:
            out.append(())
            continue
        (n,) = unpack(blob, pos)
        p = pos + 4
        record: list[Header] = []
        for _ in range(n):
            (name_len,) = unpack(blob, p)
            name = blob[p + 4 : p + 4 + name_len].decode()
            p += 4 + name_len
            (value_len,) = unpack(blob, p)
            p += 4
            if value_len < 0:
                record.append((name, None))
            else:
                record.append((name, blob[p : p + value_len]))
                p += value_len
        out.append(tuple(record))
        pos += size
    return out


def _layout(buf: bytes | memoryview, position: int, header: BatchHeader) -> tuple:
    """The batch's payload and where its columns are: offsets, timestamps (None: one
    for all), the payload, where the key bytes start, key, value and header lengths
    (None when absent)."""
    attributes = header.attributes
    count = header.record_count
    codec = attributes & ATTR_CODEC_MASK
    start = position + (HEADER_SIZE + PRODUCER_SIZE if attributes & ATTR_TXN_BITS else HEADER_SIZE)
    if codec:
        data = decompress(codec, bytes(memoryview(buf)[start : position + header.size]))
        pos = 0
    else:
        # Slice values straight out of the read buffer: no payload copy.
        data = buf if isinstance(buf, bytes) else bytes(buf)
        pos = start
    view = memoryview(data)
    width = 4 * count

    if attributes & ATTR_OFFSET_DELTAS:
        base = header.base_offset
        offsets: Sequence[int] = [base + d for d in _from_le("i", view[pos : pos + width])]
        pos += width
    else:
        offsets = range(header.base_offset, header.base_offset + count)

    timestamps: Sequence[int] | None = None
    if attributes & ATTR_TIMESTAMPS:
        timestamps = _from_le("q", view[pos : pos + 2 * width])
        pos += 2 * width

    key_lengths = None
    if attributes & ATTR_KEYS:
        key_lengths = _from_le("i", view[pos : pos + width])
        pos += width
    value_lengths = _from_le("i", view[pos : pos + width])
    pos += width
    header_lengths = None
    if attributes & ATTR_HEADERS:
        header_lengths = _from_le("i", view[pos : pos + width])
        pos += width
    return offsets, timestamps, data, pos, key_lengths, value_lengths, header_lengths


def _decode(buf: bytes | memoryview, position: int, header: BatchHeader) -> tuple:
    """The batch's columns; absent columns (no keys, one timestamp for all, no
    headers) come back as None so callers can stand in a constant cheaply."""
    offsets, timestamps, data, pos, key_lengths, value_lengths, header_lengths = _layout(
        buf, position, header
    )
    keys = None
    if key_lengths is not None:
        keys = _split(data, pos, key_lengths, True)
        pos += sum(n for n in key_lengths if n > 0)
    nullable = bool(header.attributes & ATTR_NULL_VALUES)
    values = _split(data, pos, value_lengths, nullable)
    pos += sum(n for n in value_lengths if n > 0) if nullable else sum(value_lengths)
    headers = None
    if header_lengths is not None:
        view = memoryview(data)
        headers = _decode_headers(bytes(view[pos : pos + sum(header_lengths)]), header_lengths)
    return offsets, timestamps, keys, values, headers


def decode_values(
    buf: bytes | memoryview, position: int, header: BatchHeader, *, min_offset: int = 0
) -> BatchValues:
    """The batch's values at or after `min_offset`, left as the batch holds them
    (`BatchValues`): no Python object per record."""
    offsets, timestamps, data, pos, key_lengths, value_lengths, _ = _layout(buf, position, header)
    if key_lengths is not None:
        pos += sum(key_lengths) + key_lengths.count(-1)  # a null key (-1) holds no bytes
    lo = bisect_left(offsets, min_offset) if min_offset > header.base_offset else 0
    return BatchValues(
        buf, position, header, data, pos, value_lengths, offsets, timestamps, lo, len(offsets)
    )


def decode_columns(buf: bytes | memoryview, position: int, header: BatchHeader) -> BatchColumns:
    """Decode the batch that starts at `position` (its CRC already checked)."""
    offsets, timestamps, keys, values, headers = _decode(buf, position, header)
    count = header.record_count
    return BatchColumns(
        offsets,
        timestamps if timestamps is not None else [header.first_timestamp] * count,
        keys if keys is not None else [None] * count,
        values,
        headers if headers is not None else [()] * count,
    )


def decode_records(
    buf: bytes | memoryview,
    position: int,
    header: BatchHeader,
    topic: str,
    partition: int,
    *,
    min_offset: int = 0,
) -> list[Record]:
    """The batch's records at or after `min_offset`, as Record tuples built in C."""
    offsets, timestamps, keys, values, headers = _decode(buf, position, header)
    records = list(
        map(
            _new_record,
            zip(
                repeat(topic),
                repeat(partition),
                offsets,
                repeat(header.first_timestamp) if timestamps is None else timestamps,
                repeat(None) if keys is None else keys,
                values,
                repeat(()) if headers is None else headers,
                strict=False,
            ),
        )
    )
    if min_offset > header.base_offset:
        del records[: bisect_left(offsets, min_offset)]
    return records
