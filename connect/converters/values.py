"""Values as text, by Kafka's `org.apache.kafka.connect.data.Values` conventions.

Headers travel as bytes, and Kafka's SimpleHeaderConverter writes each header value as
text a person can read and a program can parse back with its type. `format_value`
writes that text and `parse_value` infers a schema and value from it.

Writing: a string is itself; null is `null`; booleans `true`/`false`; numbers in
Java's `toString` form; bytes as base64; Date `yyyy-MM-dd`, Time `HH:mm:ss.SSSZ`-style
(`12:30:00.000Z`), Timestamp `yyyy-MM-ddTHH:mm:ss.SSSZ` (UTC); arrays `[a,b]`; maps
and structs `{k:v,…}` — and inside an array or map, strings are quoted with `"` (and
`\\` and `\"` escaped) so they can be told apart from other tokens.

Reading tries, in order: the empty string (a string); `true`/`false`; `null`; an
array `[...]` or map `{...}` (whose schema is the elements' common schema, or none);
a number (an integral one gets the smallest of int8, int16, int32, int64 that holds
it; a fractional one float32 when it fits, else float64; beyond those a Decimal); an
ISO date, time or timestamp in the forms above; else the text is a string. Text that
starts like an array or map but does not parse as one is a string too, so parsing
never fails. One difference from Java: a float32 value is kept as the Python float of
the text rather than rounded to 32 bits, so writing it again gives the same text.
"""

from __future__ import annotations

import base64
import datetime as _dt
import decimal as _decimal
import re
from collections.abc import Mapping
from typing import Any

from connect.api.data import (
    BOOLEAN_SCHEMA,
    FLOAT32_SCHEMA,
    FLOAT64_SCHEMA,
    INT8_SCHEMA,
    INT16_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    STRING_SCHEMA,
    Schema,
    Struct,
    Type,
)
from connect.api.json_values import java_double
from connect.api.logical import Date, Decimal, Time, Timestamp
from connect.api.plugins import SchemaAndValue

__all__ = ["format_value", "parse_value"]

_DATE_SCHEMA = Date.schema()
_TIME_SCHEMA = Time.schema()
_TIMESTAMP_SCHEMA = Timestamp.schema()

_DATE_RE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_TIME_RE = re.compile(r"(\d{2}):(\d{2}):(\d{2})\.(\d{3})Z")
_TIMESTAMP_RE = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})Z")
_NUMBER_RE = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")

_INT_SCHEMAS = (
    (2**7, INT8_SCHEMA),
    (2**15, INT16_SCHEMA),
    (2**31, INT32_SCHEMA),
    (2**63, INT64_SCHEMA),
)
_INT_RANK = {Type.INT8: 0, Type.INT16: 1, Type.INT32: 2, Type.INT64: 3}
_FLOAT32_MAX = 3.4028234663852886e38


# --------------------------------------------------------------------- writing


def format_value(schema: Schema | None, value: Any) -> str | None:
    """The text of a value (None for a null value)."""
    if value is None:
        return None
    if type(value) is str:
        return value
    out: list[str] = []
    _append(out, schema, value, embedded=False)
    return "".join(out)


def _append(out: list[str], schema: Schema | None, value: Any, *, embedded: bool) -> None:
    if value is None:
        out.append("null")
    elif isinstance(value, str):
        if embedded:
            out.append('"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"')
        else:
            out.append(value)
    elif value is True or value is False:
        out.append("true" if value else "false")
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        out.append(java_double(value))
    elif isinstance(value, _decimal.Decimal):
        out.append(str(value))
    elif isinstance(value, (bytes, bytearray, memoryview)):
        _append(out, None, base64.b64encode(value).decode("ascii"), embedded=embedded)
    elif isinstance(value, _dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(_dt.UTC)
        out.append(value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z")
    elif isinstance(value, _dt.date):
        out.append(value.strftime("%Y-%m-%d"))
    elif isinstance(value, _dt.time):
        out.append(value.strftime("%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z")
    elif isinstance(value, (list, tuple)):
        item_schema = schema.value_schema if schema is not None else None
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _append(out, item_schema, item, embedded=True)
        out.append("]")
    elif isinstance(value, Mapping):
        key_schema = schema.key_schema if schema is not None else None
        value_schema = schema.value_schema if schema is not None else None
        out.append("{")
        for i, (k, v) in enumerate(value.items()):
            if i:
                out.append(",")
            _append(out, key_schema, k, embedded=True)
            out.append(":")
            _append(out, value_schema, v, embedded=True)
        out.append("}")
    elif isinstance(value, Struct):
        out.append("{")
        for i, f in enumerate(value.schema.fields):
            if i:
                out.append(",")
            _append(out, None, f.name, embedded=True)
            out.append(":")
            _append(out, f.schema, value.get(f.name), embedded=True)
        out.append("}")
    else:
        _append(out, None, str(value), embedded=embedded)


# --------------------------------------------------------------------- reading


class _Fail(Exception):
    """The text is not a value of the shape it started like (it will be a string)."""


def parse_value(text: str) -> SchemaAndValue:
    """Infer a schema and value from text (see the module docstring); never fails."""
    if text == "":
        return SchemaAndValue(STRING_SCHEMA, "")
    stripped = text.strip()
    if stripped[:1] in ("[", "{"):
        try:
            parser = _Parser(stripped)
            result = parser.compound()
            parser.skip_space()
            if parser.pos == len(stripped):
                return result
        except (_Fail, TypeError):
            pass
        return SchemaAndValue(STRING_SCHEMA, text)
    scalar = _scalar(stripped)
    if scalar is None:
        return SchemaAndValue(STRING_SCHEMA, text)
    return scalar


def _scalar(token: str) -> SchemaAndValue | None:
    """A bare token's typed value, or None when it is just a string."""
    if token == "true" or token == "false":
        return SchemaAndValue(BOOLEAN_SCHEMA, token == "true")
    if token == "null":
        return SchemaAndValue(None, None)
    if not token:
        return None
    if token[0] in "+-.0123456789":
        number = _number(token)
        if number is not None:
            return number
    return _temporal(token)


def _number(token: str) -> SchemaAndValue | None:
    if _NUMBER_RE.fullmatch(token) is None:
        return None
    value = _decimal.Decimal(token)
    exponent = value.as_tuple().exponent
    assert isinstance(exponent, int)
    if value == value.to_integral_value():
        integral = int(value)
        for bound, schema in _INT_SCHEMAS:
            if -bound <= integral < bound:
                return SchemaAndValue(schema, integral)
    if exponent != 0:
        as_float = float(value)
        if abs(as_float) <= _FLOAT32_MAX:
            return SchemaAndValue(FLOAT32_SCHEMA, as_float)
        if as_float not in (float("inf"), float("-inf")):
            return SchemaAndValue(FLOAT64_SCHEMA, as_float)
    scale = -exponent
    return SchemaAndValue(Decimal.schema(scale), value)


def _temporal(token: str) -> SchemaAndValue | None:
    try:
        m = _TIMESTAMP_RE.fullmatch(token)
        if m is not None:
            y, mo, d, h, mi, s, ms = map(int, m.groups())
            value = _dt.datetime(y, mo, d, h, mi, s, ms * 1000, tzinfo=_dt.UTC)
            return SchemaAndValue(_TIMESTAMP_SCHEMA, value)
        m = _DATE_RE.fullmatch(token)
        if m is not None:
            return SchemaAndValue(_DATE_SCHEMA, _dt.date(*map(int, m.groups())))
        m = _TIME_RE.fullmatch(token)
        if m is not None:
            h, mi, s, ms = map(int, m.groups())
            return SchemaAndValue(_TIME_SCHEMA, _dt.time(h, mi, s, ms * 1000))
    except ValueError:  # 2024-13-45: shaped like a date, but not one
        return None
    return None


def _common(schemas: list[Schema | None]) -> Schema | None:
    """The one schema every non-null element has; integers widen to the widest."""
    present = [s for s in schemas if s is not None]
    if not present:
        return None
    first = present[0]
    common: Schema | None = None
    if all(s == first for s in present):
        common = first
    elif all(s.type in _INT_RANK and s.name is None for s in present):
        common = max(present, key=lambda s: _INT_RANK[s.type])
    if common is not None and len(present) < len(schemas):  # some nulls among them
        common = common.optional_()
    return common


class _Parser:
    """Recursive descent over embedded values: arrays, maps, quoted strings, tokens."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self) -> str:
        self.skip_space()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def expect(self, char: str) -> None:
        if self.peek() != char:
            raise _Fail
        self.pos += 1

    def compound(self) -> SchemaAndValue:
        return self.array() if self.peek() == "[" else self.map()

    def value(self) -> SchemaAndValue:
        c = self.peek()
        if c in ("[", "{"):
            return self.compound()
        if c == '"':
            return SchemaAndValue(STRING_SCHEMA, self.quoted())
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] not in ',]}:[{"':
            self.pos += 1
        token = self.text[start : self.pos].strip()
        if not token:
            raise _Fail
        scalar = _scalar(token)
        return scalar if scalar is not None else SchemaAndValue(STRING_SCHEMA, token)

    def quoted(self) -> str:
        self.pos += 1  # the opening quote
        chars = []
        while self.pos < len(self.text):
            c = self.text[self.pos]
            self.pos += 1
            if c == "\\" and self.pos < len(self.text):
                chars.append(self.text[self.pos])
                self.pos += 1
            elif c == '"':
                return "".join(chars)
            else:
                chars.append(c)
        raise _Fail

    def array(self) -> SchemaAndValue:
        self.expect("[")
        items: list[SchemaAndValue] = []
        if self.peek() == "]":
            self.pos += 1
            return SchemaAndValue(None, [])
        while True:
            items.append(self.value())
            c = self.peek()
            self.pos += 1
            if c == "]":
                break
            if c != ",":
                raise _Fail
        common = _common([i.schema for i in items])
        schema = Schema.array(common) if common is not None else None
        return SchemaAndValue(schema, [i.value for i in items])

    def map(self) -> SchemaAndValue:
        self.expect("{")
        entries: list[tuple[SchemaAndValue, SchemaAndValue]] = []
        if self.peek() == "}":
            self.pos += 1
            return SchemaAndValue(None, {})
        while True:
            key = self.value()
            self.expect(":")
            entries.append((key, self.value()))
            c = self.peek()
            self.pos += 1
            if c == "}":
                break
            if c != ",":
                raise _Fail
        key_schema = _common([k.schema for k, _ in entries])
        value_schema = _common([v.schema for _, v in entries])
        result = {k.value: v.value for k, v in entries}  # TypeError: unhashable key
        schema = (
            Schema.map(key_schema, value_schema)
            if key_schema is not None and value_schema is not None
            else None
        )
        return SchemaAndValue(schema, result)
