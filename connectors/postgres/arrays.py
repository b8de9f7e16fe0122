"""PostgreSQL's one-dimensional arrays as Connect arrays, as Debezium maps them.

A column of an array type whose element type `connectors.postgres.columns` maps gets
an ARRAY schema of that element's schema, made optional (an array may hold NULLs):
`int[]` is `array<optional int32>`, `text[]` `array<optional string>`, and so on, as
Debezium's PostgreSQL connector writes them (compared with Debezium's own events by
tests/conformance/test_differential_debezium.py). Before, such a column was a string
of PostgreSQL's array text (`{1,2,3}`), which a consumer had to parse itself.

`ELEMENT_TYPES` maps an array type's OID to its element type's: the OIDs are fixed in
every PostgreSQL (pg_type.dat), so the catalog's columns and a pgoutput Relation
message, which carry only the array's OID, map alike. Arrays of other types (enums,
composites, ranges, …) keep their text.

The text is PostgreSQL's array output (`array_out`), the same from pgoutput and from
COPY (once COPY's own escapes are undone):

1. an optional dimension decoration `[lower:upper]=` goes;
2. between the outer braces, elements are split at commas; an element in double
   quotes keeps its commas, braces and spaces, and a backslash in it takes the next
   character as it is; an unquoted `NULL` is null;
3. each element's text goes through the element type's converter.

An array of more than one dimension (`{{1,2},{3,4}}`) has no value of a
one-dimensional schema: a DataError says so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from connect.api import DataError

__all__ = ["ELEMENT_TYPES", "array_converter", "parse_array"]

#: array type OID -> element type OID, for the element types columns.py maps
ELEMENT_TYPES: dict[int, int] = {
    1000: 16,  # boolean[]
    1001: 17,  # bytea[]
    1005: 21,  # smallint[]
    1007: 23,  # integer[]
    1016: 20,  # bigint[]
    1009: 25,  # text[]
    1014: 1042,  # character[]
    1015: 1043,  # varchar[]
    1021: 700,  # real[]
    1022: 701,  # double precision[]
    1231: 1700,  # numeric[]
    1182: 1082,  # date[]
    1183: 1083,  # time[]
    1115: 1114,  # timestamp[]
    1185: 1184,  # timestamptz[]
    2951: 2950,  # uuid[]
    199: 114,  # json[]
    3807: 3802,  # jsonb[]
}


def parse_array(text: str) -> list[str | None]:
    """The elements' texts of a one-dimensional array's text (see the module
    docstring; None for NULL)."""
    # Step 1: the dimension decoration
    if text.startswith("["):
        text = text[text.index("=") + 1 :]
    if len(text) < 2 or text[0] != "{" or text[-1] != "}":
        raise DataError(f"{text[:40]!r} is not PostgreSQL's text of an array")
    body = text[1:-1]
    if not body:
        return []
    if body[0] == "{":
        raise DataError(f"{text[:40]!r}: arrays of more than one dimension are not supported")
    # Step 2: elements, quoted or not
    if '"' not in body:
        return [None if e == "NULL" else e for e in body.split(",")]
    out: list[str | None] = []
    i, n = 0, len(body)
    while i <= n:
        if i < n and body[i] == '"':
            chars = []
            i += 1
            while body[i] != '"':
                if body[i] == "\\":
                    i += 1
                chars.append(body[i])
                i += 1
            out.append("".join(chars))
            i += 2  # the closing quote and the comma
        else:
            end = body.find(",", i)
            end = n if end < 0 else end
            element = body[i:end]
            out.append(None if element == "NULL" else element)
            i = end + 1
    return out


def array_converter(element: Callable[[str], Any]) -> Callable[[str], list[Any]]:
    """The converter of an array column whose elements convert with `element`."""

    def convert(text: str) -> list[Any]:
        # Step 3: each element as its type's value
        return [None if e is None else element(e) for e in parse_array(text)]

    return convert
