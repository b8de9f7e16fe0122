"""Decimals wider than Python's default 28-digit context survive every path exactly.

`Decimal.scaleb` rounds to the current context's precision, so a NUMERIC(38, 2) value
(PostgreSQL, SQL Server and Oracle all allow 38 digits; Kafka Connect's Decimal is an
unbounded BigDecimal) used to come back rounded, with no error: data lost silently.
"""

from __future__ import annotations

import decimal

from hypothesis import given
from hypothesis import strategies as st

from connect.api import Decimal, Schema, Struct
from connect.converters.json_converter import JsonConverter

WIDE = [
    decimal.Decimal("123456789012345678901234567890123456.78"),  # 38 digits, scale 2
    decimal.Decimal("-99999999999999999999999999999999999999"),  # 38 nines, scale 0
    decimal.Decimal("0.00000000000000000000000000000000000001"),
]


def _schema(scale: int) -> Schema:
    return Decimal.schema(scale)


def test_logical_round_trip_keeps_every_digit() -> None:
    for value in WIDE:
        scale = -value.as_tuple().exponent
        schema = _schema(scale)
        assert Decimal.to_logical(schema, Decimal.from_logical(schema, value)) == value


def test_a_digit_past_the_scale_is_still_refused() -> None:
    schema = _schema(2)
    try:
        Decimal.from_logical(schema, decimal.Decimal("1234567890123456789012345678901234.567"))
    except Exception as exc:  # DataError
        assert "decimal places" in str(exc)
    else:
        raise AssertionError("a third decimal place was accepted at scale 2")


@given(st.integers(min_value=-(10**60), max_value=10**60), st.integers(0, 30))
def test_json_converter_round_trip_is_exact(unscaled: int, scale: int) -> None:
    value = decimal.Decimal(unscaled).scaleb(-scale, context=decimal.Context(prec=100))
    schema = Schema.struct([("amount", _schema(scale))])
    converter = JsonConverter()
    converter.configure({"schemas.enable": "true"}, is_key=False)
    data = converter.from_connect_data("t", schema, Struct(schema, {"amount": value}))
    back = converter.to_connect_data("t", data)
    assert back.value.get("amount") == value
