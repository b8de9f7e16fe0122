"""The pgoutput logical replication protocol (version 1): parsing its binary messages.

Each XLogData payload the walsender sends for a `pgoutput` slot is one message; its
first byte says which. Integers are big-endian; a String is NUL-terminated UTF-8.

| tag | message  | body                                                                  |
| B   | Begin    | Int64 final LSN, Int64 commit time (µs since 2000-01-01), Int32 xid   |
| C   | Commit   | Int8 flags, Int64 commit LSN, Int64 end LSN, Int64 commit time        |
| O   | Origin   | Int64 commit LSN, String name                                         |
| R   | Relation | Int32 oid, String schema, String name, Int8 replica identity,        |
|     |          | Int16 columns × (Int8 flags (1: part of the key), String name,        |
|     |          | Int32 type oid, Int32 type modifier)                                  |
| Y   | Type     | Int32 oid, String schema, String name                                 |
| I   | Insert   | Int32 relation oid, 'N', TupleData                                    |
| U   | Update   | Int32 relation oid, optional ('K' | 'O', TupleData), 'N', TupleData   |
| D   | Delete   | Int32 relation oid, 'K' | 'O', TupleData                              |
| T   | Truncate | Int32 relations, Int8 options (1 cascade, 2 restart identity),       |
|     |          | Int32 oids                                                            |
| M   | Message  | Int8 flags (1 transactional), Int64 LSN, String prefix, Int32 length, |
|     |          | bytes                                                                 |

TupleData: Int16 columns × (`n` null | `u` unchanged TOASTed value | `t` Int32 length,
text bytes). Values stay text here (decoded UTF-8, `UNCHANGED_TOAST` for `u`); the
column types turn them into Connect values (`connectors.postgres.columns`).

A 'K' old tuple holds only the replica-identity (key) columns — the others are null;
an 'O' old tuple (REPLICA IDENTITY FULL) holds every column.

`parse(payload)` returns one message object; `lsn_text` / `lsn_int` convert LSNs
between their integer and `X/Y` forms.
"""

from __future__ import annotations

import datetime as dt
import struct
from dataclasses import dataclass
from typing import Any

__all__ = [
    "PG_EPOCH_US",
    "UNCHANGED_TOAST",
    "Begin",
    "Column",
    "Commit",
    "Delete",
    "Insert",
    "LogicalMessage",
    "Origin",
    "ProtocolError",
    "Relation",
    "Truncate",
    "TypeInfo",
    "Update",
    "lsn_int",
    "lsn_text",
    "parse",
    "pg_time_to_us",
]

#: µs between the Unix epoch and PostgreSQL's (2000-01-01)
PG_EPOCH_US = int(
    (dt.datetime(2000, 1, 1, tzinfo=dt.UTC) - dt.datetime(1970, 1, 1, tzinfo=dt.UTC))
    / dt.timedelta(microseconds=1)
)


class _Unchanged:
    """An unchanged TOASTed value: pgoutput sends no data for it."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNCHANGED_TOAST"


UNCHANGED_TOAST: Any = _Unchanged()


class ProtocolError(ValueError):
    """A payload that is not a well-formed pgoutput v1 message."""


def lsn_text(lsn: int) -> str:
    """`0x16B3748` → `0/16B3748` (PostgreSQL's pg_lsn text)."""
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def lsn_int(text: str) -> int:
    """`0/16B3748` → 0x16B3748."""
    high, _, low = text.partition("/")
    return (int(high, 16) << 32) | int(low, 16)


def pg_time_to_us(pg_us: int) -> int:
    """A pgoutput timestamp (µs since 2000-01-01) as µs since the Unix epoch."""
    return pg_us + PG_EPOCH_US


@dataclass(frozen=True, slots=True)
class Begin:
    final_lsn: int
    commit_time_us: int  # Unix epoch
    xid: int


@dataclass(frozen=True, slots=True)
class Commit:
    flags: int
    commit_lsn: int
    end_lsn: int
    commit_time_us: int  # Unix epoch


@dataclass(frozen=True, slots=True)
class Origin:
    commit_lsn: int
    name: str


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type_oid: int
    type_modifier: int
    key: bool


@dataclass(frozen=True, slots=True)
class Relation:
    oid: int
    schema: str
    name: str
    replica_identity: str  # d default, n nothing, f full, i index
    columns: tuple[Column, ...]


@dataclass(frozen=True, slots=True)
class TypeInfo:
    oid: int
    schema: str
    name: str


@dataclass(frozen=True, slots=True)
class Insert:
    relation_oid: int
    new: list[Any]


@dataclass(frozen=True, slots=True)
class Update:
    relation_oid: int
    old_kind: str | None  # 'K' key columns, 'O' whole old row, None: not sent
    old: list[Any] | None
    new: list[Any]


@dataclass(frozen=True, slots=True)
class Delete:
    relation_oid: int
    old_kind: str  # 'K' or 'O'
    old: list[Any]


@dataclass(frozen=True, slots=True)
class Truncate:
    options: int  # 1 cascade, 2 restart identity
    relation_oids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class LogicalMessage:
    transactional: bool
    lsn: int
    prefix: str
    content: bytes


Message = Begin | Commit | Origin | Relation | TypeInfo | Insert | Update | Delete | Truncate
_I32 = struct.Struct(">I")
_I16 = struct.Struct(">H")
_BEGIN = struct.Struct(">QqI")
_COMMIT = struct.Struct(">BQQq")
_REL_HEAD = struct.Struct(">I")
_COL_TYPE = struct.Struct(">Ii")


def _string(buf: bytes, pos: int) -> tuple[str, int]:
    end = buf.index(b"\x00", pos)
    return buf[pos:end].decode(), end + 1


def _tuple(buf: bytes, pos: int) -> tuple[list[Any], int]:
    (count,) = _I16.unpack_from(buf, pos)
    pos += 2
    values: list[Any] = []
    append = values.append
    unpack = _I32.unpack_from
    for _ in range(count):
        kind = buf[pos]
        pos += 1
        if kind == 0x74:  # 't'
            (length,) = unpack(buf, pos)
            pos += 4
            append(buf[pos : pos + length].decode())
            pos += length
        elif kind == 0x6E:  # 'n'
            append(None)
        elif kind == 0x75:  # 'u'
            append(UNCHANGED_TOAST)
        else:
            raise ProtocolError(f"unknown tuple column kind {chr(kind)!r} at byte {pos - 1}")
    return values, pos


def _begin(buf: bytes) -> Begin:
    final_lsn, ts, xid = _BEGIN.unpack_from(buf, 1)
    return Begin(final_lsn, pg_time_to_us(ts), xid)


def _commit(buf: bytes) -> Commit:
    flags, commit_lsn, end_lsn, ts = _COMMIT.unpack_from(buf, 1)
    return Commit(flags, commit_lsn, end_lsn, pg_time_to_us(ts))


def _origin(buf: bytes) -> Origin:
    (lsn,) = struct.unpack_from(">Q", buf, 1)
    name, _ = _string(buf, 9)
    return Origin(lsn, name)


def _relation(buf: bytes) -> Relation:
    (oid,) = _REL_HEAD.unpack_from(buf, 1)
    schema, pos = _string(buf, 5)
    name, pos = _string(buf, pos)
    identity = chr(buf[pos])
    (count,) = _I16.unpack_from(buf, pos + 1)
    pos += 3
    columns = []
    for _ in range(count):
        flags = buf[pos]
        column, pos = _string(buf, pos + 1)
        type_oid, typmod = _COL_TYPE.unpack_from(buf, pos)
        pos += 8
        columns.append(Column(column, type_oid, typmod, bool(flags & 1)))
    return Relation(oid, schema, name, identity, tuple(columns))


def _type(buf: bytes) -> TypeInfo:
    (oid,) = _I32.unpack_from(buf, 1)
    schema, pos = _string(buf, 5)
    name, _ = _string(buf, pos)
    return TypeInfo(oid, schema, name)


def _insert(buf: bytes) -> Insert:
    (oid,) = _I32.unpack_from(buf, 1)
    if buf[5] != 0x4E:  # 'N'
        raise ProtocolError(f"Insert: expected 'N', got {chr(buf[5])!r}")
    new, _ = _tuple(buf, 6)
    return Insert(oid, new)


def _update(buf: bytes) -> Update:
    (oid,) = _I32.unpack_from(buf, 1)
    pos = 5
    old_kind: str | None = None
    old: list[Any] | None = None
    if buf[pos] in (0x4B, 0x4F):  # 'K', 'O'
        old_kind = chr(buf[pos])
        old, pos = _tuple(buf, pos + 1)
    if buf[pos] != 0x4E:
        raise ProtocolError(f"Update: expected 'N', got {chr(buf[pos])!r}")
    new, _ = _tuple(buf, pos + 1)
    return Update(oid, old_kind, old, new)


def _delete(buf: bytes) -> Delete:
    (oid,) = _I32.unpack_from(buf, 1)
    kind = buf[5]
    if kind not in (0x4B, 0x4F):
        raise ProtocolError(f"Delete: expected 'K' or 'O', got {chr(kind)!r}")
    old, _ = _tuple(buf, 6)
    return Delete(oid, chr(kind), old)


def _truncate(buf: bytes) -> Truncate:
    (count,) = _I32.unpack_from(buf, 1)
    options = buf[5]
    oids = struct.unpack_from(f">{count}I", buf, 6)
    return Truncate(options, tuple(oids))


def _message(buf: bytes) -> LogicalMessage:
    flags = buf[1]
    (lsn,) = struct.unpack_from(">Q", buf, 2)
    prefix, pos = _string(buf, 10)
    (length,) = _I32.unpack_from(buf, pos)
    return LogicalMessage(bool(flags & 1), lsn, prefix, bytes(buf[pos + 4 : pos + 4 + length]))


_PARSERS: dict[int, Any] = {
    ord("B"): _begin,
    ord("C"): _commit,
    ord("O"): _origin,
    ord("R"): _relation,
    ord("Y"): _type,
    ord("I"): _insert,
    ord("U"): _update,
    ord("D"): _delete,
    ord("T"): _truncate,
    ord("M"): _message,
}


def parse(payload: bytes) -> Any:
    """The message in one pgoutput payload; ProtocolError if it is not one."""
    if not payload:
        raise ProtocolError("empty pgoutput message")
    parser = _PARSERS.get(payload[0])
    if parser is None:
        raise ProtocolError(f"unknown pgoutput message type {chr(payload[0])!r}")
    try:
        return parser(payload)
    except (struct.error, IndexError, ValueError, UnicodeDecodeError) as exc:
        if isinstance(exc, ProtocolError):
            raise
        raise ProtocolError(
            f"malformed pgoutput {chr(payload[0])!r} message ({len(payload)} bytes): {exc}"
        ) from None
