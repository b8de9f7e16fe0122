"""Logical types: a named schema over a primitive, with Kafka's names and encodings.

| class     | schema name                              | over   | Python value        |
| Decimal   | org.apache.kafka.connect.data.Decimal    | bytes  | decimal.Decimal     |
| Date      | org.apache.kafka.connect.data.Date       | int32  | datetime.date       |
| Time      | org.apache.kafka.connect.data.Time       | int32  | datetime.time       |
| Timestamp | org.apache.kafka.connect.data.Timestamp  | int64  | datetime.datetime   |

`from_logical` gives the primitive a converter writes (Decimal: two's-complement
big-endian unscaled bytes with the scale in the schema's `scale` parameter; Date:
days since the epoch; Time: ms since midnight; Timestamp: ms since the epoch, UTC);
`to_logical` reverses it.
"""

from __future__ import annotations

import datetime as _dt
import decimal as _decimal

from connect.api.data import Schema, Type
from connect.api.errors import DataError

__all__ = ["Date", "Decimal", "Time", "Timestamp", "is_logical"]

_EPOCH_DATE = _dt.date(1970, 1, 1)
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


class Decimal:
    LOGICAL_NAME = "org.apache.kafka.connect.data.Decimal"
    SCALE_FIELD = "scale"
    #: The context to rescale or quantize a decimal in: as many digits as the value
    #: has. Python's default context keeps 28 and rounds past them without a word, but
    #: Connect's Decimal is an unbounded BigDecimal and databases hold 38 digits
    #: (NUMERIC(38, s)) or more: every rescale of a value goes through this one.
    EXACT = _decimal.Context(
        prec=_decimal.MAX_PREC, Emax=_decimal.MAX_EMAX, Emin=_decimal.MIN_EMIN
    )

    @staticmethod
    def schema(scale: int, *, optional: bool = False, precision: int | None = None) -> Schema:
        params = {Decimal.SCALE_FIELD: str(scale)}
        if precision is not None:
            params["connect.decimal.precision"] = str(precision)
        return Schema(
            Type.BYTES, optional=optional, name=Decimal.LOGICAL_NAME, version=1, parameters=params
        )

    @staticmethod
    def scale(schema: Schema) -> int:
        try:
            return int(schema.parameters[Decimal.SCALE_FIELD])
        except (KeyError, ValueError):
            raise DataError("a Decimal schema needs an integer 'scale' parameter") from None

    @staticmethod
    def from_logical(schema: Schema, value: _decimal.Decimal) -> bytes:
        scale = Decimal.scale(schema)
        unscaled = value.scaleb(scale, Decimal.EXACT)
        if unscaled != unscaled.to_integral_value():
            raise DataError(f"{value} has more than {scale} decimal places")
        n = int(unscaled)
        length = max(1, (n + (n < 0)).bit_length() // 8 + 1)
        return n.to_bytes(length, "big", signed=True)

    @staticmethod
    def to_logical(schema: Schema, value: bytes) -> _decimal.Decimal:
        n = int.from_bytes(value, "big", signed=True)
        return _decimal.Decimal(n).scaleb(-Decimal.scale(schema), Decimal.EXACT)


class Date:
    LOGICAL_NAME = "org.apache.kafka.connect.data.Date"

    @staticmethod
    def schema(*, optional: bool = False) -> Schema:
        return Schema(Type.INT32, optional=optional, name=Date.LOGICAL_NAME, version=1)

    @staticmethod
    def from_logical(schema: Schema, value: _dt.date) -> int:
        return (value - _EPOCH_DATE).days

    @staticmethod
    def to_logical(schema: Schema, value: int) -> _dt.date:
        return _EPOCH_DATE + _dt.timedelta(days=value)


class Time:
    LOGICAL_NAME = "org.apache.kafka.connect.data.Time"

    @staticmethod
    def schema(*, optional: bool = False) -> Schema:
        return Schema(Type.INT32, optional=optional, name=Time.LOGICAL_NAME, version=1)

    @staticmethod
    def from_logical(schema: Schema, value: _dt.time) -> int:
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + (
            value.microsecond // 1000
        )

    @staticmethod
    def to_logical(schema: Schema, value: int) -> _dt.time:
        if not 0 <= value < 86_400_000:
            raise DataError(f"Time must be within one day in ms, got {value}")
        seconds, ms = divmod(value, 1000)
        minutes, second = divmod(seconds, 60)
        hour, minute = divmod(minutes, 60)
        return _dt.time(hour, minute, second, ms * 1000)


class Timestamp:
    LOGICAL_NAME = "org.apache.kafka.connect.data.Timestamp"

    @staticmethod
    def schema(*, optional: bool = False) -> Schema:
        return Schema(Type.INT64, optional=optional, name=Timestamp.LOGICAL_NAME, version=1)

    @staticmethod
    def from_logical(schema: Schema, value: _dt.datetime) -> int:
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.UTC)  # naive datetimes are taken as UTC
        delta = value - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000

    @staticmethod
    def to_logical(schema: Schema, value: int) -> _dt.datetime:
        return _EPOCH + _dt.timedelta(milliseconds=value)


_BY_NAME = {c.LOGICAL_NAME: c for c in (Decimal, Date, Time, Timestamp)}


def is_logical(schema: Schema | None) -> type | None:
    """The logical-type class for `schema`, or None for a plain schema."""
    if schema is None or schema.name is None:
        return None
    return _BY_NAME.get(schema.name)
