"""``AvroSchema``: one parsed, validated schema with its canonical text.

The registry identifies a schema by its canonical text (``.text``), not by the submitted
text: whitespace and the order of the standard keys do not matter, while docs, defaults,
aliases, ``order``, logical types and custom properties do (Confluent's rule, reference §7).
``fingerprint`` is a hash of that text for id lookups; the caller adds references, metadata
and rule sets to the identity when it has them.

``parsed`` is fastavro's form for encoding and decoding. It is made on first use, because a
registry replaying its history needs only the text, and the node tree (``root``) is what the
compatibility checker walks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from functools import cached_property
from types import MappingProxyType
from typing import Any

import fastavro

from connect.registry.avro.canonical import canonical_text, normalized_json
from connect.registry.avro.errors import InvalidSchemaError
from connect.registry.avro.model import Named, Node
from connect.registry.avro.parse import load_json, parse_with_references


class AvroSchema:
    """A valid Avro schema; build one with :meth:`parse`."""

    def __init__(self, root: Node, known: dict[str, Named], references: Mapping[str, str],
                 ) -> None:
        self.root = root
        self._known = known
        self.references: Mapping[str, str] = MappingProxyType(dict(references))
        self.text = canonical_text(root, known)

    @classmethod
    def parse(cls, text: str, *, references: Mapping[str, str] | None = None,
              normalize: bool = False) -> AvroSchema:
        """Parse and validate ``text``; ``references`` maps each reference's name to the
        text of the schema it resolves to, in dependency order (a reference may use the
        named types of the ones before it).

        Raises InvalidSchemaError naming what is wrong.
        """
        if not isinstance(text, str):
            raise InvalidSchemaError(f"the schema must be a string, not {type(text).__name__}")
        root, known = parse_with_references(text, references)
        schema = cls(root, known, references or {})
        return schema.normalized() if normalize else schema

    def normalized(self) -> AvroSchema:
        """Confluent's ``normalize()``: the normalised text, parsed again, so that schemas
        that differ only in layout (property order, alias order, empty docs, ``1`` vs ``1.0``
        for a double default) get one canonical text."""
        return AvroSchema.parse(normalized_json(self.root, self._known),
                                references=self.references)

    @cached_property
    def fingerprint(self) -> str:
        """SHA-256 of the canonical text, hex: equal texts, equal fingerprints."""
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def name(self) -> str | None:
        """Full name of the top-level record, enum or fixed; None for other types."""
        return self.root.full_name if isinstance(self.root, Named) else None

    @cached_property
    def parsed(self) -> Any:
        """fastavro's parsed schema (for schemaless reads and writes), with the named types
        of the references; InvalidSchemaError if fastavro refuses what Avro Java accepts."""
        named: dict[str, Any] = {}
        try:
            for ref_text in self.references.values():
                fastavro.parse_schema(load_json(ref_text), named_schemas=named)
            return fastavro.parse_schema(load_json(self.text), named_schemas=named)
        except (fastavro.schema.SchemaParseException, ValueError, TypeError) as exc:
            raise InvalidSchemaError(f"fastavro cannot use this schema: {exc}") from None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AvroSchema) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"AvroSchema({self.text!r})"

    def __str__(self) -> str:
        return self.text
