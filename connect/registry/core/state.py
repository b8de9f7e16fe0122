"""The registry's state, and the one function that changes it: `apply`, called by the
`_schemas` reader for every record in log order. Nothing here does I/O, so the state
after replaying a log is a pure function of its records.

Replay alone decides races. A writer picks an id and a version for its record from the
state it has read so far; if another instance's record got into the log first, the
later record may conflict with it. `apply` then keeps the first and rejects the later
one (recording its offset in `rejected`, so its writer sees it lost and retries):

- a SCHEMA record for a subject-version that already holds a different (id, schema)
  is rejected: only the soft-delete flag of a version may change in place;
- a SCHEMA record for a new subject-version is rejected when its id names another
  schema, or its schema already has another id (one id per distinct schema).

Tombstones always apply. Ids are remembered while any version (live or soft-deleted)
holds them; `max_id` only grows, so an id is never handed out twice.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace

from connect.registry.core.records import (
    ConfigKey,
    DeleteSubjectKey,
    IdWatermarkKey,
    ModeKey,
    Reference,
    SchemaKey,
    SchemaRecord,
    decode_key,
    decode_schema,
    decode_value,
)

__all__ = ["Identity", "RegistryState", "SubjectConfig"]

_log = logging.getLogger("connect.registry")

Identity = tuple[str, str, tuple[Reference, ...]]


@dataclass(frozen=True, slots=True)
class SubjectConfig:
    """A compatibility config (global or one subject's)."""

    level: str
    normalize: bool | None = None


@dataclass(slots=True)
class RegistryState:
    """Subjects, versions, ids, configs and modes (see the module docstring)."""

    subjects: dict[str, dict[int, SchemaRecord]] = field(default_factory=dict)
    #: id → the schema it names, and the subject-versions that hold it.
    schemas: dict[int, Identity] = field(default_factory=dict)
    holders: dict[int, set[tuple[str, int]]] = field(default_factory=dict)
    ids: dict[Identity, int] = field(default_factory=dict)
    max_id: int = 0
    #: (subject, version) → the subject-versions whose references name it.
    referrers: dict[tuple[str, int], set[tuple[str, int]]] = field(default_factory=dict)
    global_config: SubjectConfig | None = None
    configs: dict[str, SubjectConfig] = field(default_factory=dict)
    global_mode: str | None = None
    modes: dict[str, str] = field(default_factory=dict)
    #: Offsets of records that lost a race (see the module docstring).
    rejected: set[int] = field(default_factory=set)
    skipped: int = 0

    # ------------------------------------------------------------------ apply

    def apply(self, offset: int, key: bytes, value: bytes | None) -> None:
        """Apply one `_schemas` record (the only way the state changes)."""
        try:
            parsed = decode_key(key)
            if parsed is None:
                return
            if isinstance(parsed, SchemaKey):
                if value is None:
                    self._remove(parsed.subject, parsed.version)
                elif not self._put(decode_schema(value)):
                    self.rejected.add(offset)
            elif isinstance(parsed, ConfigKey):
                self._apply_config(parsed.subject, value)
            elif isinstance(parsed, ModeKey):
                self._apply_mode(parsed.subject, value)
            elif isinstance(parsed, DeleteSubjectKey):
                if value is not None:
                    self._delete_subject_upto(parsed.subject, int(decode_value(value)["version"]))
            elif isinstance(parsed, IdWatermarkKey) and value is not None:
                self.max_id = max(self.max_id, int(decode_value(value)["id"]))
        except (ValueError, KeyError, TypeError) as exc:
            # A record this reader cannot read must not stop the registry: skip it,
            # say where it is.
            self.skipped += 1
            _log.warning("skipping unreadable _schemas record at offset %d: %s", offset, exc)

    def _put(self, record: SchemaRecord) -> bool:
        versions = self.subjects.get(record.subject)
        current = versions.get(record.version) if versions else None
        identity = record.identity
        if current is not None:
            if current.id != record.id or current.identity != identity:
                return False
            versions[record.version] = record  # type: ignore[index]
            return True
        named = self.schemas.get(record.id)
        if named is not None and named != identity:
            return False
        known = self.ids.get(identity)
        if known is not None and known != record.id:
            return False
        if versions is None:
            versions = self.subjects[record.subject] = {}
        versions[record.version] = record
        self.schemas[record.id] = identity
        self.ids[identity] = record.id
        self.holders.setdefault(record.id, set()).add((record.subject, record.version))
        self.max_id = max(self.max_id, record.id)
        for ref in record.references:
            self.referrers.setdefault((ref.subject, ref.version), set()).add(
                (record.subject, record.version)
            )
        return True

    def _remove(self, subject: str, version: int) -> None:
        versions = self.subjects.get(subject)
        record = versions.pop(version, None) if versions else None
        if record is None:
            return
        if not versions:
            del self.subjects[subject]
        holders = self.holders.get(record.id)
        if holders is not None:
            holders.discard((subject, version))
            if not holders:
                # No version holds the id any more: forget it (max_id remembers it).
                del self.holders[record.id]
                identity = self.schemas.pop(record.id, None)
                if identity is not None and self.ids.get(identity) == record.id:
                    del self.ids[identity]
        for ref in record.references:
            referrers = self.referrers.get((ref.subject, ref.version))
            if referrers is not None:
                referrers.discard((subject, version))
                if not referrers:
                    del self.referrers[(ref.subject, ref.version)]

    def _delete_subject_upto(self, subject: str, version: int) -> None:
        versions = self.subjects.get(subject, {})
        for number, record in list(versions.items()):
            if number <= version and not record.deleted:
                versions[number] = replace(record, deleted=True)

    def _apply_config(self, subject: str | None, value: bytes | None) -> None:
        config = None
        if value is not None:
            data = decode_value(value)
            normalize = data.get("normalize")
            config = SubjectConfig(
                str(data["compatibilityLevel"]).upper(),
                None if normalize is None else bool(normalize),
            )
        if subject is None:
            self.global_config = config
        elif config is None:
            self.configs.pop(subject, None)
        else:
            self.configs[subject] = config

    def _apply_mode(self, subject: str | None, value: bytes | None) -> None:
        mode = None if value is None else str(decode_value(value)["mode"]).upper()
        if subject is None:
            self.global_mode = mode
        elif mode is None:
            self.modes.pop(subject, None)
        else:
            self.modes[subject] = mode

    # ---------------------------------------------------------------- queries

    def live_versions(self, subject: str) -> list[int]:
        versions = self.subjects.get(subject)
        if not versions:
            return []
        return sorted(v for v, r in versions.items() if not r.deleted)

    def all_versions(self, subject: str) -> list[int]:
        return sorted(self.subjects.get(subject, ()))

    def record(self, subject: str, version: int) -> SchemaRecord | None:
        versions = self.subjects.get(subject)
        return versions.get(version) if versions else None
