"""The shape of a JSON answer, and where two answers to the same REST call differ in it.

Kafka Connect and Tributary answer the same call with different data (worker ids, class
names, versions, timestamps, plugin lists, lengths of lists); what a client's code
depends on is the shape: which keys an object has and what kind of value each holds.
`shape()` keeps that and drops the rest:

1. an object: its keys, each with the shape of its value. Under a path named in `maps`
   the keys are data (connector names of `?expand=`, logger names) and the object is
   compared by the merged shape of its values, as a list is;
2. a list: the merged shape of its elements (a key present in any element, with the
   merged shapes of what it holds), so two lists compare by what an element looks like,
   not by length or order; an empty list matches any list;
3. a string, number or boolean: its JSON type; null matches anything (a nullable field
   that happens to hold a value on one side only);
4. a key named in `masked` keeps its presence, not its value (traces, versions,
   timestamps: fields that legitimately differ);
5. a key named in `literal` is compared by value (a connector's `state`: RUNNING is not
   PAUSED, whatever the type says).

`differences(kafka, tributary)` names each place where two shapes disagree, one line
each (`$.connector.version: only in Kafka's answer`); none means the shapes agree.
Paths read `$` for the answer, `.key` into an object, `[]` into a list's elements and
`.*` into a map's values.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["ANY", "Answer", "Shape", "compare", "differences", "shape"]


class _Any:
    """Matches every shape: null, a masked value, the elements of an empty list."""

    def __repr__(self) -> str:
        return "anything"


ANY = _Any()


@dataclass(frozen=True)
class _Types:
    names: frozenset[str]

    def __repr__(self) -> str:
        return "|".join(sorted(self.names))


@dataclass(frozen=True)
class _Literal:
    values: frozenset[str]

    def __repr__(self) -> str:
        return "|".join(sorted(self.values))


@dataclass(frozen=True)
class _Object:
    fields: tuple[tuple[str, Shape], ...]

    def __repr__(self) -> str:
        return "an object"


@dataclass(frozen=True)
class _Sequence:
    kind: str  # "list" or "map"
    element: Shape

    def __repr__(self) -> str:
        return f"a {self.kind}"


Shape = _Any | _Types | _Literal | _Object | _Sequence


def shape(
    value: Any,
    *,
    maps: Iterable[str] = (),
    masked: Iterable[str] = (),
    literal: Iterable[str] = (),
    path: str = "$",
) -> Shape:
    """The shape of a parsed JSON value (see the module docstring)."""
    rules = (frozenset(maps), frozenset(masked), frozenset(literal))
    return _shape(value, path, *rules)


def _shape(
    value: Any, path: str, maps: frozenset[str], masked: frozenset[str], literal: frozenset[str]
) -> Shape:
    if value is None:
        return ANY
    if isinstance(value, bool):
        return _Types(frozenset({"boolean"}))
    if isinstance(value, (int, float)):
        return _Types(frozenset({"number"}))
    if isinstance(value, str):
        return _Types(frozenset({"string"}))
    if isinstance(value, list):
        items = [_shape(v, f"{path}[]", maps, masked, literal) for v in value]
        return _Sequence("list", _merge_all(items))
    if not isinstance(value, dict):
        raise TypeError(f"{path}: {type(value).__name__} is not a JSON value")
    if path in maps:
        items = [_shape(v, f"{path}.*", maps, masked, literal) for v in value.values()]
        return _Sequence("map", _merge_all(items))
    fields: dict[str, Shape] = {}
    for key, item in value.items():
        if key in masked:
            fields[key] = ANY
        elif key in literal and isinstance(item, str):
            fields[key] = _Literal(frozenset({item}))
        else:
            fields[key] = _shape(item, f"{path}.{key}", maps, masked, literal)
    return _Object(tuple(sorted(fields.items())))


def _merge_all(shapes: list[Shape]) -> Shape:
    merged: Shape = ANY
    for one in shapes:
        merged = _merge(merged, one)
    return merged


def _merge(a: Shape, b: Shape) -> Shape:
    """One shape for two elements of a list: what either of them has."""
    if a is ANY:
        return b
    if b is ANY:
        return a
    if isinstance(a, _Types) and isinstance(b, _Types):
        return _Types(a.names | b.names)
    if isinstance(a, _Literal) and isinstance(b, _Literal):
        return _Literal(a.values | b.values)
    if isinstance(a, _Sequence) and isinstance(b, _Sequence) and a.kind == b.kind:
        return _Sequence(a.kind, _merge(a.element, b.element))
    if isinstance(a, _Object) and isinstance(b, _Object):
        fields = dict(a.fields)
        for key, item in b.fields:
            fields[key] = _merge(fields[key], item) if key in fields else item
        return _Object(tuple(sorted(fields.items())))
    # Elements of different kinds: the first kind stands for both, and the comparison
    # with the other side's list then names the mix.
    return _Types(frozenset({f"{a!r} or {b!r}"}))


def differences(kafka: Shape, tributary: Shape, path: str = "$") -> list[str]:
    """Where `tributary` differs from `kafka`, one line per place; [] when alike."""
    if kafka is ANY or tributary is ANY:
        return []
    if type(kafka) is not type(tributary) or (
        isinstance(kafka, _Sequence)
        and isinstance(tributary, _Sequence)
        and kafka.kind != tributary.kind
    ):
        return [f"{path}: {kafka!r} in Kafka's answer, {tributary!r} in Tributary's"]
    if isinstance(kafka, _Object) and isinstance(tributary, _Object):
        ours = dict(tributary.fields)
        theirs = dict(kafka.fields)
        out = [f"{path}.{k}: only in Kafka's answer" for k in theirs if k not in ours]
        out += [f"{path}.{k}: only in Tributary's answer" for k in ours if k not in theirs]
        for key in theirs.keys() & ours.keys():
            out += differences(theirs[key], ours[key], f"{path}.{key}")
        return sorted(out)
    if isinstance(kafka, _Sequence) and isinstance(tributary, _Sequence):
        step = "[]" if kafka.kind == "list" else ".*"
        return differences(kafka.element, tributary.element, f"{path}{step}")
    if kafka != tributary:
        return [f"{path}: {kafka!r} in Kafka's answer, {tributary!r} in Tributary's"]
    return []


@dataclass(frozen=True)
class Answer:
    """One side's answer to one call: its status, and its body parsed as JSON (None
    for an empty body; the text when it is not JSON)."""

    status: int
    body: Any
    json: bool

    @classmethod
    def of(cls, status: int, content: bytes) -> Answer:
        if not content.strip():
            return cls(status, None, False)
        try:
            return cls(status, json.loads(content), True)
        except ValueError:
            return cls(status, content.decode(errors="replace"), False)


def compare(
    kafka: Answer,
    tributary: Answer,
    *,
    maps: Iterable[str] = (),
    masked: Iterable[str] = (),
    literal: Iterable[str] = (),
) -> list[str]:
    """Where Tributary's answer differs from Kafka's: the status, whether there is a JSON
    body, and the body's shape (`shape()`'s rules); [] when they agree."""
    out = []
    if kafka.status != tributary.status:
        out.append(f"status: {kafka.status} from Kafka, {tributary.status} from Tributary")
    if kafka.json != tributary.json:
        out.append(
            f"body: {_kind(kafka)} from Kafka ({str(kafka.body)[:80]!r}), "
            f"{_kind(tributary)} from Tributary ({str(tributary.body)[:80]!r})"
        )
    elif kafka.json:
        rules = {"maps": tuple(maps), "masked": tuple(masked), "literal": tuple(literal)}
        out += differences(shape(kafka.body, **rules), shape(tributary.body, **rules))
    return out


def _kind(answer: Answer) -> str:
    if answer.json:
        return "JSON"
    return "no body" if answer.body is None else "text"
