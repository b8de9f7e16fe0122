"""The bridge between stored schema texts and parsed Avro schemas: resolving a
schema's references to the texts they name, parsing candidates (errors become 42201's
InvalidSchemaError), and a cache of parsed stored schemas by id, so compatibility
checks do not re-parse a subject's history on every registration.

Replay never parses: the stored text is already canonical, so ids and lookups work on
text alone and a rebuild costs only JSON decoding."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from connect.registry.avro import AvroSchema
from connect.registry.avro import InvalidSchemaError as AvroInvalidSchemaError
from connect.registry.core.errors import InvalidSchemaError, StoreError
from connect.registry.core.records import Reference, SchemaRecord
from connect.registry.core.state import RegistryState

__all__ = ["SchemaParser"]

_CACHE_SIZE = 20_000


class SchemaParser:
    """Parses schemas against the references `state` holds (see the module docstring)."""

    def __init__(self, state: RegistryState) -> None:
        self.state = state
        self._parsed: dict[tuple[int, str, bool], AvroSchema] = {}
        self._lock = threading.Lock()

    def resolve(self, references: Sequence[Reference]) -> tuple[Reference, ...]:
        """`references` with "latest" (-1) pinned to the live version it names now;
        a reference to a missing subject or version is an invalid schema."""
        resolved = []
        for ref in references:
            version = ref.version
            if version == -1:
                live = self.state.live_versions(ref.subject)
                if not live:
                    raise InvalidSchemaError(
                        f"reference {ref.name!r} names subject {ref.subject!r}, "
                        "which has no live version"
                    )
                version = live[-1]
            if self.state.record(ref.subject, version) is None:
                raise InvalidSchemaError(
                    f"reference {ref.name!r} names subject {ref.subject!r} version {version}, "
                    "which does not exist"
                )
            resolved.append(Reference(ref.name, ref.subject, version))
        return tuple(resolved)

    def _texts(self, references: Sequence[Reference], out: dict[str, str], depth: int) -> None:
        """Name → schema text for `references` and theirs, dependencies first."""
        if depth > 64:
            raise InvalidSchemaError("references nest deeper than 64 levels (a cycle?)")
        for ref in references:
            record = self.state.record(ref.subject, ref.version)
            if record is None:
                raise InvalidSchemaError(
                    f"reference {ref.name!r} names subject {ref.subject!r} version "
                    f"{ref.version}, which does not exist"
                )
            self._texts(record.references, out, depth + 1)
            out.setdefault(ref.name, record.schema)

    def parse(
        self, text: str, references: Sequence[Reference], *, normalize: bool = False
    ) -> AvroSchema:
        """A candidate schema (references already resolved); InvalidSchemaError if bad."""
        if not isinstance(text, str) or not text.strip():
            raise InvalidSchemaError("the schema is empty")
        named: dict[str, str] = {}
        self._texts(references, named, 0)
        try:
            schema = AvroSchema.parse(text, references=named or None, normalize=normalize)
            return schema.normalized() if normalize else schema
        except AvroInvalidSchemaError as exc:
            raise InvalidSchemaError(str(exc)) from None
        except (ValueError, TypeError, KeyError, RecursionError) as exc:
            raise InvalidSchemaError(f"{type(exc).__name__}: {exc}") from None

    def stored(self, record: SchemaRecord, *, normalized: bool = False) -> AvroSchema:
        """The parsed form of a stored schema, cached by id (and text: an IMPORT may
        give a forgotten id to another schema)."""
        key = (record.id, record.schema, normalized)
        schema = self._parsed.get(key)
        if schema is not None:
            return schema
        try:
            schema = self.parse(record.schema, record.references, normalize=normalized)
        except InvalidSchemaError as exc:
            raise StoreError(f"stored schema {record.id} no longer parses: {exc.reason}") from exc
        with self._lock:
            if len(self._parsed) >= _CACHE_SIZE:
                self._parsed.clear()
            self._parsed[key] = schema
        return schema
