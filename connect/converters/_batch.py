"""Helpers shared by the batch paths of the converters."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat
from typing import Any

from connect.api.data import Schema
from connect.api.plugins import SchemaAndValue

__all__ = ["pairs"]

_new_tuple = tuple.__new__


def pairs(schema: Schema | None, values: Sequence[Any]) -> list[SchemaAndValue]:
    """`[SchemaAndValue(schema, v) for v in values]`, built in C: SchemaAndValue's own
    constructor is a Python function, which would cost more than decoding a short value."""
    n = len(values)
    return list(
        map(_new_tuple, repeat(SchemaAndValue, n), zip(repeat(schema, n), values, strict=True))
    )
