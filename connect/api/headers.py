"""Record headers: an ordered list of (key, value, schema); a key may repeat."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from connect.api.data import Schema

__all__ = ["Header", "Headers"]


class Header(NamedTuple):
    key: str
    value: Any
    schema: Schema | None = None


class Headers(list[Header]):
    """Mutable, ordered headers of one record (`ConnectHeaders` in Kafka). Records
    share nothing: `copy()` before changing headers of a record you did not make.

    A list of Header tuples underneath: every record carries a Headers object and most
    are empty, so making one, testing it and iterating it must cost what a list costs
    (these run once per record on the pipeline's hot path)."""

    __slots__ = ()

    def __init__(self, items: Iterable[Header | tuple] = ()) -> None:
        if items:
            super().__init__(h if isinstance(h, Header) else Header(*h) for h in items)

    def add(self, key: str, value: Any, schema: Schema | None = None) -> Headers:
        self.append(Header(key, value, schema))
        return self

    def last(self, key: str) -> Header | None:
        for header in reversed(self):
            if header.key == key:
                return header
        return None

    def all(self, key: str) -> list[Header]:
        return [h for h in self if h.key == key]

    def remove(self, key: str) -> Headers:  # type: ignore[override]
        """Drop every header named `key` (not list.remove: headers are found by key)."""
        self[:] = [h for h in self if h.key != key]
        return self

    def retain_latest(self) -> Headers:
        seen: set[str] = set()
        kept = []
        for header in reversed(self):
            if header.key not in seen:
                seen.add(header.key)
                kept.append(header)
        self[:] = kept[::-1]
        return self

    def clear(self) -> Headers:  # type: ignore[override]
        del self[:]
        return self

    def copy(self) -> Headers:  # type: ignore[override]
        return Headers(self)

    def __repr__(self) -> str:
        return f"Headers({list.__repr__(self)})"
