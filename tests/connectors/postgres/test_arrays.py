"""PostgreSQL arrays as Connect arrays: the text a real server prints for an array,
parsed by `connectors.postgres.arrays`, equals what psycopg2 makes of the same value,
and the column types map as Debezium's (tests/conformance/test_differential_debezium.py
compares the events themselves)."""

from __future__ import annotations

import pytest

from connect.api import INT32_SCHEMA, STRING_SCHEMA, DataError, Schema
from connectors.postgres.arrays import parse_array
from connectors.postgres.columns import column_type
from tests.connectors.postgres.helpers import db

ARRAYS = [
    "ARRAY['x', 'y z', 'a,b', 'q\"', 'back\\slash', '{brace}', 'NULL', '', ' pad ']::text[]",
    "ARRAY['tab\tnew\nline']::text[]",
    "ARRAY[NULL, 'b']::varchar[]",
    "'{}'::text[]",
    "'[0:1]={7,8}'::int[]",  # a lower bound other than 1: the decoration goes
]


@pytest.mark.postgres
def test_the_servers_array_text_parses_as_psycopg2_reads_it(postgres_url: str) -> None:
    with db(postgres_url) as cur:
        for expression in ARRAYS:
            cur.execute(f"SELECT {expression}, ({expression})::text")
            value, text = cur.fetchone()
            assert parse_array(text) == [None if v is None else str(v) for v in value], text


def test_array_columns_map_to_arrays_of_their_optional_elements() -> None:
    schema, convert = column_type(1007, -1)  # int[]
    assert schema == Schema.array(INT32_SCHEMA.optional_()).optional_()
    assert convert("{1,NULL,-3}") == [1, None, -3]
    schema, convert = column_type(1009, -1, optional=False)  # text[] NOT NULL
    assert schema == Schema.array(STRING_SCHEMA.optional_())
    assert convert('{"a b",NULL,"NULL"}') == ["a b", None, "NULL"]


def test_an_array_of_more_dimensions_is_a_data_error_naming_it() -> None:
    with pytest.raises(DataError, match="more than one dimension"):
        parse_array("{{1,2},{3,4}}")
