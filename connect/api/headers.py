"""Record headers: an ordered list of (key, value, schema); a key may repeat."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from connect.api.data import Schema

__all__ = ["Header", "Headers"]


class Header(NamedTuple):
    key: str
    value: Any
    schema: Schema | None = None


class Headers:
    """Mutable, ordered headers of one record (`ConnectHeaders` in Kafka). Records
    share nothing: `copy()` before changing headers of a record you did not make."""

    __slots__ = ("_items",)

    def __init__(self, items: Iterable[Header | tuple] = ()) -> None:
        self._items: list[Header] = [h if isinstance(h, Header) else Header(*h) for h in items]

    def add(self, key: str, value: Any, schema: Schema | None = None) -> Headers:
        self._items.append(Header(key, value, schema))
        return self

    def last(self, key: str) -> Header | None:
        for header in reversed(self._items):
            if header.key == key:
                return header
        return None

    def all(self, key: str) -> list[Header]:
        return [h for h in self._items if h.key == key]

    def remove(self, key: str) -> Headers:
        self._items = [h for h in self._items if h.key != key]
        return self

    def retain_latest(self) -> Headers:
        seen: set[str] = set()
        kept = []
        for header in reversed(self._items):
            if header.key not in seen:
                seen.add(header.key)
                kept.append(header)
        self._items = kept[::-1]
        return self

    def clear(self) -> Headers:
        self._items = []
        return self

    def copy(self) -> Headers:
        return Headers(self._items)

    def __iter__(self) -> Iterator[Header]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Headers):
            return NotImplemented
        return self._items == other._items

    def __repr__(self) -> str:
        return f"Headers({self._items!r})"
