"""The snapshot's column-at-a-time COPY parser equals converting value by value."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connect.api import ConnectError
from connectors.postgres.columns import text_converter
from connectors.postgres.snapshot import copy_unescape, parse_copy_text

INT4, INT8, FLOAT8, TEXT, NUMERIC, BOOL, TIMESTAMPTZ = 23, 20, 701, 25, 1700, 16, 1184


def _numeric(scale: int) -> int:
    return (12 << 16) + scale + 4  # numeric(12, scale)


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


_numbers = st.one_of(
    st.decimals(places=2, min_value=-(10**9), max_value=10**9).map(lambda d: f"{d:.2f}"),
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1", "1.5", "0.00"]),
)


def _instant(moment: dt.datetime, digits: int) -> str:
    """PostgreSQL's text of a timestamptz(digits) in a UTC session (trailing zeros of
    the fraction trimmed, as it prints them)."""
    text = moment.isoformat(sep=" ", timespec="seconds")
    fraction = f"{moment.microsecond:06d}"[:digits].rstrip("0")
    return f"{text}.{fraction}+00" if fraction else f"{text}+00"


_moments = st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 1, 1))


def _instants(digits: int) -> st.SearchStrategy[str]:
    whole = _moments.map(lambda m: _instant(m.replace(microsecond=0), digits))
    full = _moments.map(lambda m: _instant(m.replace(microsecond=m.microsecond | 1), digits))
    other = st.sampled_from(["2024-01-01 00:00:00+05:30", "0044-03-15 12:00:00+00 BC"])
    return (
        st.lists(whole, min_size=1)
        | st.lists(full, min_size=1)
        | st.lists(whole | full | _moments.map(lambda m: _instant(m, digits)) | other, min_size=1)
    )


# (type oid, typmod, strategy of COPY field texts; None is NULL)
COLUMNS = [
    (INT4, -1, st.integers(-(2**31), 2**31 - 1).map(str)),
    (INT8, -1, st.none() | st.integers().map(str)),
    (FLOAT8, -1, st.floats(allow_nan=False).map(repr)),
    (TEXT, -1, st.none() | st.text(max_size=6).map(_escape)),
    (TEXT, -1, st.text(alphabet="ab\\N", max_size=4).map(_escape)),
    (NUMERIC, _numeric(2), _numbers),
    (NUMERIC, _numeric(0), st.none() | st.integers(-999, 999).map(str) | _numbers),
    (BOOL, -1, st.sampled_from(["t", "f"])),
    (TIMESTAMPTZ, -1, _moments.map(lambda m: _instant(m, 6))),
    (TIMESTAMPTZ, 0, _moments.map(lambda m: _instant(m, 0))),
    (TIMESTAMPTZ, 3, _moments.map(lambda m: _instant(m, 3)) | st.sampled_from(["infinity"])),
]


def _reference(lines: list[list[str | None]], oids: list[int], mods: list[int]) -> list:
    """Value by value, as the stream converts (after undoing COPY's escapes)."""
    converters = [text_converter(o, m) for o, m in zip(oids, mods, strict=True)]
    return [
        [
            None if v is None else conv(copy_unescape(v))
            for conv, v in zip(converters, row, strict=True)
        ]
        for row in lines
    ]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_columns_equal_values(data: st.DataObject) -> None:
    chosen = data.draw(st.lists(st.sampled_from(COLUMNS), min_size=1, max_size=5))
    oids = [o for o, _, _ in chosen]
    mods = [m for _, m, _ in chosen]
    rows = data.draw(st.lists(st.tuples(*[s for _, _, s in chosen]), min_size=1, max_size=20))
    text = "".join("\t".join("\\N" if v is None else v for v in row) + "\n" for row in rows)
    try:
        expected = _reference([list(r) for r in rows], oids, mods)
    except Exception as exc:  # a value the converter refuses: the column path refuses it too
        with pytest.raises(type(exc)):
            parse_copy_text(
                text,
                [text_converter(o, m) for o, m in zip(oids, mods, strict=True)],
                [o == TEXT for o in oids],
            )
        return
    converters = [text_converter(o, m) for o, m in zip(oids, mods, strict=True)]
    got = parse_copy_text(text, converters, [o == TEXT for o in oids])
    assert got == expected
    # equal Decimals of another exponent would pass ==: the exponents must match too
    assert [[str(v) for v in row] for row in got] == [[str(v) for v in row] for row in expected]


def test_a_row_of_other_width_is_refused() -> None:
    with pytest.raises(ConnectError, match="2 fields"):
        parse_copy_text("1\t2\n3\n", [int, int], [False, False])


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([0, 3, 6]), st.data())
def test_zoned_timestamp_columns_equal_values(digits: int, data: st.DataObject) -> None:
    texts = data.draw(_instants(digits))
    convert = text_converter(TIMESTAMPTZ, -1 if digits == 6 else digits)
    assert convert.column(texts) == [convert(t) for t in texts]  # type: ignore[attr-defined]
