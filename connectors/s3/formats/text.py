"""Line-oriented formats: JSON lines and ByteArray (values joined by a separator),
optionally gzip-compressed (`s3.compression.type=gzip`, extension `.gz` added).

JSON writes what Kafka's JsonConverter writes with `schemas.enable=false`: structs as
objects, bytes as base64, Date/Time/Timestamp as their integers, Decimal as base64 of
the unscaled value (`json.decimal.format=BASE64`) or as a number (`NUMERIC`). A batch
is encoded by C-level `map`s straight into the object's buffer (see `_lines`).

gzip output comes from zlib with a zero timestamp, so equal input gives equal bytes.
"""

from __future__ import annotations

import base64
import zlib
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any

import orjson

from connect.api import DataError, Date, Decimal, Schema, Struct, Time, Timestamp, Type
from connectors.s3.formats.base import FileWriter, Format, Sink

__all__ = ["ByteArrayFormat", "JsonFormat"]

#: Values encoded per call of the sink's `extend`: the upload cuts parts between
#: calls, and copies at most one call's bytes when it does (see upload.py).
ROUND = 256


def _lines(default: Callable[[Any], Any]) -> Callable[[Iterable[Any]], Iterable[bytes]]:
    """The JSON lines of values, one `orjson.dumps` per value with the newline
    appended by orjson, as a lazy C-level `map`: the sink appends each line as it comes
    and the line's bytes are freed at once, so memory is reused while it is warm.

    Several times faster (docs/performance.md) than the earlier one `dumps` of the
    whole batch as `[v0,\n,v1,…]` (fragments) whose `,\n,` joints `bytes.replace`
    had to find and cut, a second pass over a second copy. The bytes
    are the same: orjson writes a value inside an array as it writes it alone."""
    return partial(map, partial(orjson.dumps, default=default, option=orjson.OPT_APPEND_NEWLINE))


class _Gzip:
    """A gzip stream in front of a sink."""

    def __init__(self, sink: Sink, level: int) -> None:
        self._sink = sink
        self._z = zlib.compressobj(level, zlib.DEFLATED, 31)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        out = self._z.compress(data)
        if out:
            self._sink.write(out)

    def extend(self, pieces: Iterable[bytes | bytearray | memoryview]) -> None:
        self.write(b"".join(pieces))

    def finish(self) -> None:
        self._sink.write(self._z.flush())


def _default(value: Any) -> Any:
    """orjson's hook for what it cannot write itself (schemaless values)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, Struct):
        return value.to_dict()
    if isinstance(value, (set, tuple)):
        return list(value)
    import decimal

    if isinstance(value, decimal.Decimal):
        return orjson.Fragment(str(value))
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _plainer(schema: Schema, numeric: bool) -> Callable[[Any], Any]:
    """A function from a value of `schema` to what orjson writes for it."""
    name = schema.name
    if name == Decimal.LOGICAL_NAME:
        if numeric:
            return lambda v: None if v is None else orjson.Fragment(str(v))
        return lambda v: (
            None if v is None else base64.b64encode(Decimal.from_logical(schema, v)).decode()
        )
    for logical in (Date, Time, Timestamp):
        if name == logical.LOGICAL_NAME:
            return lambda v, lt=logical: None if v is None else lt.from_logical(schema, v)
    t = schema.type
    if t is Type.BYTES:
        return lambda v: None if v is None else base64.b64encode(bytes(v)).decode()
    if t is Type.STRUCT:
        names = [f.name for f in schema.fields]
        subs = [_plainer(f.schema, numeric) for f in schema.fields]
        if all(s is _identity for s in subs):
            return lambda v: None if v is None else dict(zip(names, v.values(), strict=True))
        return lambda v: (
            None
            if v is None
            else {n: s(x) for n, s, x in zip(names, subs, v.values(), strict=True)}
        )
    if t is Type.ARRAY:
        assert schema.value_schema is not None
        sub = _plainer(schema.value_schema, numeric)
        if sub is _identity:
            return _identity
        return lambda v: None if v is None else [sub(x) for x in v]
    if t is Type.MAP:
        assert schema.value_schema is not None
        sub = _plainer(schema.value_schema, numeric)
        if sub is _identity:
            return _identity
        return lambda v: None if v is None else {k: sub(x) for k, x in v.items()}
    return _identity


def _identity(value: Any) -> Any:
    return value


class _LinesWriter(FileWriter):
    def __init__(
        self, sink: Sink, encode: Callable[[Sequence[Any]], Iterable[bytes]], gzip_level: int | None
    ) -> None:
        self._out: Sink | _Gzip = sink if gzip_level is None else _Gzip(sink, gzip_level)
        self._encode = encode

    def write(self, values: Sequence[Any]) -> None:
        extend, encode = self._out.extend, self._encode
        if len(values) <= ROUND:
            extend(encode(values))
            return
        for start in range(0, len(values), ROUND):
            extend(encode(values[start : start + ROUND]))

    def finish(self) -> None:
        if isinstance(self._out, _Gzip):
            self._out.finish()


def _gunzip(data: bytes) -> bytes:
    if data[:2] == b"\x1f\x8b":
        return zlib.decompress(data, 47)
    return data


class JsonFormat(Format):
    def __init__(self, *, gzip: bool, level: int, numeric_decimals: bool) -> None:
        self._gzip = gzip
        self._level = level
        self._numeric = numeric_decimals
        self._plainers: dict[int, tuple[Schema, Callable[[Any], Any]]] = {}

    @property
    def extension(self) -> str:
        return ".json.gz" if self._gzip else ".json"

    def _encoder(self, schema: Schema | None) -> Callable[[Sequence[Any]], Iterable[bytes]]:
        lines = _lines(_default)
        if schema is None:
            return lines
        cached = self._plainers.get(id(schema))
        if cached is None or cached[0] is not schema:
            cached = self._plainers[id(schema)] = (schema, _plainer(schema, self._numeric))
        plain = cached[1]
        if plain is _identity:
            return lines
        return lambda values: lines(map(plain, values))

    def writer(self, sink: Sink, schema: Schema | None) -> FileWriter:
        return _LinesWriter(sink, self._encoder(schema), self._level if self._gzip else None)

    def read(self, data: bytes) -> tuple[Schema | None, list[Any]]:
        """The values of JSON lines. Fast path: the lines joined into one JSON array
        and parsed with one call (a raw newline only ever separates two values);
        blank lines or a value spread over lines fall back to one parse per line."""
        text = _gunzip(data).strip()
        if not text:
            return None, []
        try:
            return None, orjson.loads(b"[" + text.replace(b"\n", b",") + b"]")
        except orjson.JSONDecodeError:
            pass
        lines = [line for line in text.split(b"\n") if line.strip()]
        try:
            return None, list(map(orjson.loads, lines))
        except orjson.JSONDecodeError as exc:
            raise DataError(f"not JSON lines: {exc}") from None


class ByteArrayFormat(Format):
    def __init__(self, *, gzip: bool, level: int, extension: str, separator: bytes) -> None:
        self._gzip = gzip
        self._level = level
        self._ext = extension
        self._sep = separator

    @property
    def extension(self) -> str:
        return self._ext + ".gz" if self._gzip else self._ext

    def writer(self, sink: Sink, schema: Schema | None) -> FileWriter:
        sep = self._sep

        def encode(values: Sequence[Any]) -> list[bytes]:
            try:
                return [sep.join(values), sep] if values else []
            except TypeError:
                bad = next(v for v in values if not isinstance(v, (bytes, bytearray)))
                raise DataError(
                    f"ByteArrayFormat writes bytes values, not {type(bad).__name__} "
                    "(use the ByteArrayConverter)"
                ) from None

        return _LinesWriter(sink, encode, self._level if self._gzip else None)

    def read(self, data: bytes) -> tuple[Schema | None, list[Any]]:
        from connect.api import OPTIONAL_BYTES_SCHEMA

        parts = _gunzip(data).split(self._sep)
        if parts and not parts[-1]:
            parts.pop()
        return OPTIONAL_BYTES_SCHEMA, parts
