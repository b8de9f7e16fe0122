"""MySQL's text protocol rows parsed a column at a time into Arrow arrays, with numpy,
not a Python object per value (`connectors.mysql.snapshot_text` reads them).

A result row is one packet: a 3-byte little-endian payload length, a sequence number,
then the payload, each value a length-encoded string: one byte of length under 251,
0xFC / 0xFD / 0xFE and 2, 3 or 8 bytes of length, or 0xFB for NULL. The result ends
with an EOF packet (0xFE, a payload under 9 bytes: PyMySQL never asks for
CLIENT_DEPRECATE_EOF) or an error packet (0xFF). A payload of 2^24-1 bytes goes on in
the next packet (a row over 16 MB).

`walk` finds the rows' payloads in a buffer of packets, one Python step per row;
`columns` then reads one column of every row per numpy pass (each row's position moves
past its value) and gathers each column's bytes into the data buffer of an Arrow binary
array, without a Python object per value.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

__all__ = ["Rows", "ServerError", "columns", "walk"]

_MAX_PACKET = 0xFFFFFF
_NULL = 0xFB


class ServerError(Exception):
    """An error packet in the rows (`payload` for PyMySQL to raise as it would)."""

    def __init__(self, payload: bytes) -> None:
        super().__init__("error packet")
        self.payload = payload


@dataclass(slots=True)
class Rows:
    """Where `walk` left off: the payloads found (positions in the buffer, or in
    `joined` past its end for rows over 16 MB) and whether the result ended."""

    starts: list[int] = field(default_factory=list)
    joined: list[bytes] = field(default_factory=list)
    joined_at: int = 0  # where `joined` begins in the chunk's bytes
    ended: bool = False


def walk(buf: bytes, pos: int, limit: int, rows: Rows, *, bytes_limit: int) -> int:
    """Adds the payloads of the complete row packets of `buf` from `pos` to `rows`, at
    most `limit` in all, none past `bytes_limit`; the position after the last one
    taken."""
    end = len(buf)
    starts = rows.starts
    add = starts.append
    while len(starts) < limit and pos < bytes_limit and pos + 4 <= end:
        n = buf[pos] | buf[pos + 1] << 8 | buf[pos + 2] << 16
        after = pos + 4 + n
        if after > end:
            break
        first = buf[pos + 4] if n else 0
        if first >= 0xFE:
            if first == 0xFF:
                raise ServerError(buf[pos + 4 : after])
            if n < 9:  # EOF
                rows.ended = True
                return after
        if n == _MAX_PACKET:
            taken = _join(buf, pos, rows)
            if taken < 0:
                break
            pos = taken
            continue
        add(pos + 4)
        pos = after
    return pos


def _join(buf: bytes, pos: int, rows: Rows) -> int:
    """A row over 16 MB: its packets' payloads joined (-1 until all are in `buf`)."""
    parts = []
    end = len(buf)
    while True:
        if pos + 4 > end:
            return -1
        n = buf[pos] | buf[pos + 1] << 8 | buf[pos + 2] << 16
        if pos + 4 + n > end:
            return -1
        parts.append(buf[pos + 4 : pos + 4 + n])
        pos += 4 + n
        if n < _MAX_PACKET:
            break
    payload = b"".join(parts)
    rows.starts.append(-1 - len(rows.joined))  # resolved by `chunk_bytes`
    rows.joined.append(payload)
    return pos


def chunk_bytes(buf: bytes, upto: int, rows: Rows) -> tuple[bytes, np.ndarray]:
    """The bytes the rows' values are in and each row's payload position there."""
    starts = np.array(rows.starts, dtype=np.int64)
    if not rows.joined:
        return buf, starts
    where = upto
    places = []
    for payload in rows.joined:
        places.append(where)
        where += len(payload)
    joined = starts < 0
    starts[joined] = np.array(places, dtype=np.int64)[-1 - starts[joined]]
    return buf[:upto] + b"".join(rows.joined), starts


def _lengths(data: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(value start, length, null mask) of the length-encoded strings at `pos`."""
    first = data[pos].astype(np.int64)
    if bool((first < _NULL).all()):
        return pos + 1, first, np.zeros(0, dtype=bool)
    null = first == _NULL
    length = np.where(first < _NULL, first, 0)
    head = np.ones(len(pos), dtype=np.int64)
    for marker, size in ((0xFC, 2), (0xFD, 3), (0xFE, 8)):
        at = np.flatnonzero(first == marker)
        if len(at):
            value = np.zeros(len(at), dtype=np.int64)
            for k in range(size):
                value |= data[pos[at] + 1 + k].astype(np.int64) << (8 * k)
            length[at] = value
            head[at] = 1 + size
    length[null] = 0
    return pos + head, length, null


def _binary(
    data: np.ndarray, start: np.ndarray, length: np.ndarray, null: np.ndarray, typ: pa.DataType
) -> pa.Array:
    n = len(start)
    offsets = np.empty(n + 1, dtype=np.int64)
    offsets[0] = 0
    np.cumsum(length, out=offsets[1:])
    total = int(offsets[-1])
    if total:
        index = np.arange(total, dtype=np.int64)
        index += np.repeat(start - offsets[:-1], length)
        values = data[index]
    else:
        values = np.zeros(0, dtype=np.uint8)
    if total >= 2**31:
        typ = pa.large_binary() if typ == pa.binary() else pa.large_string()
    else:
        offsets = offsets.astype(np.int32)
    nulls = int(null.sum()) if len(null) else 0
    validity = pa.py_buffer(np.packbits(~null, bitorder="little")) if nulls else None
    return pa.Array.from_buffers(
        typ, n, [validity, pa.py_buffer(offsets), pa.py_buffer(values)], null_count=nulls
    )


def columns(chunk: bytes, starts: np.ndarray, types: list[pa.DataType]) -> list[pa.Array]:
    """Each column of the rows at `starts` as an array of `types[i]` (binary or
    string: the values' bytes as the server sent them)."""
    data = np.frombuffer(chunk, dtype=np.uint8)
    pos = starts
    out = []
    for typ in types:
        start, length, null = _lengths(data, pos)
        out.append(_binary(data, start, length, null, typ))
        pos = start + length
    return out
