"""A tiny stand-in for `connect.registry.avro`, used only until the real package
lands: canonical text by fastavro + sorted JSON, and a record-fields-only check."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import fastavro


class InvalidSchemaError(ValueError):
    pass


class AvroSchema:
    def __init__(self, data: object, text: str) -> None:
        self.data = data
        self.text = text

    @classmethod
    def parse(
        cls, text: str, *, references: Mapping[str, str] | None = None, normalize: bool = False
    ) -> AvroSchema:
        try:
            data = json.loads(text)
            named: dict = {}
            for ref in (references or {}).values():
                fastavro.parse_schema(json.loads(ref), named_schemas=named)
            fastavro.parse_schema(data, named_schemas=named)
        except Exception as exc:
            raise InvalidSchemaError(str(exc)) from None
        if isinstance(data, dict) and set(data) == {"type"} and isinstance(data["type"], str):
            data = data["type"]
        return cls(data, json.dumps(data, separators=(",", ":"), sort_keys=normalize))

    def normalized(self) -> AvroSchema:
        return AvroSchema(self.data, json.dumps(self.data, separators=(",", ":"), sort_keys=True))

    @property
    def name(self) -> str | None:
        return self.data.get("name") if isinstance(self.data, dict) else None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AvroSchema) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


def check_compatibility(*, reader: AvroSchema, writer: AvroSchema) -> list[str]:
    r, w = reader.data, writer.data
    if isinstance(r, dict) and isinstance(w, dict) and r.get("type") == w.get("type") == "record":
        have = {f["name"] for f in w["fields"]}
        return [
            f"reader field {f['name']!r} has no default and is missing from the writer"
            for f in r["fields"]
            if f["name"] not in have and "default" not in f
        ]
    if r != w and not (isinstance(r, dict) or isinstance(w, dict)):
        return [f"type {w} cannot be read as {r}"]
    return []


def check_level(level: str, *, new: AvroSchema, existing: Sequence[AvroSchema]) -> list[str]:
    if level == "NONE" or not existing:
        return []
    old = list(existing) if level.endswith("TRANSITIVE") else [existing[-1]]
    reasons: list[str] = []
    for prev in reversed(old):
        if level.startswith(("BACKWARD", "FULL")):
            reasons += check_compatibility(reader=new, writer=prev)
        if level.startswith(("FORWARD", "FULL")):
            reasons += check_compatibility(reader=prev, writer=new)
        if reasons:
            break
    return reasons
