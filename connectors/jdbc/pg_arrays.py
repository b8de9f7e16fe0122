"""PostgreSQL's array literal (`array_in`'s input, and what `array_out` prints), written
from a list: the JDBC sink's COPY path puts it in an array column's CSV field, and a
TEXT column that an older pipeline created for an array (before PostgresCdcSource
emitted Connect arrays it emitted this text) gets it as its value.

Between braces, comma-separated elements; a null element is the bare word NULL; an
element is double-quoted, with `\\` and `"` escaped by a backslash, when it is empty,
spells NULL in any case, or holds a brace, a quote, a backslash, a comma or white
space — otherwise it stands bare, as `array_out` writes it (`{1,2,3}`); `{}` is empty.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["array_literal", "element_text"]

_QUOTE = re.compile(r'[{}",\\\s]|\A\Z|\A[Nn][Uu][Ll][Ll]\Z')


def element_text(v: Any) -> str:
    """An element's text as PostgreSQL reads it: bytes in bytea's hex form, booleans
    as t/f, intervals as days and seconds, the rest as str() writes them."""
    if isinstance(v, (bytes, bytearray, memoryview)):
        return "\\x" + bytes(v).hex()
    if isinstance(v, bool):
        return "t" if v else "f"
    if isinstance(v, dt.timedelta):
        return f"{v.days} days {v.seconds}.{v.microseconds:06d} seconds"
    return str(v)


def array_literal(values: Iterable[Any], text: Callable[[Any], str] = element_text) -> str:
    """`values` as PostgreSQL's array literal (see the module docstring), each
    non-null element's text made by `text`."""
    parts = []
    for v in values:
        if v is None:
            parts.append("NULL")
            continue
        t = text(v)
        if _QUOTE.search(t):
            t = '"' + t.replace("\\", "\\\\").replace('"', '\\"') + '"'
        parts.append(t)
    return "{" + ",".join(parts) + "}"
