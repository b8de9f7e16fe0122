"""The schema registry: subjects, versions and global ids over the `_schemas` topic,
with Confluent Schema Registry's rules.

Reads look at the state with the reader caught up (`SchemaStore.reading`). Writes
decide under the writer lock on the caught-up state, append, and answer from the
state the reader built (`SchemaStore.writing` / `append`).

Registration (POST /subjects/{s}/versions), numbered as in `register`:
1. parse the candidate with its references resolved (42201 when it does not parse);
2. fast path: a live version of the subject that holds the same schema is the answer
   (no new version, no compatibility check, even in READONLY mode);
3. mode: READONLY refuses (42205); an explicit id needs IMPORT, IMPORT needs an id;
4. the version is 1 + the highest stored version, soft-deleted ones included (so
   soft-deleted numbers are never reused; hard-deleted ones may be);
5. the id is the one the same schema already has (in any subject, live or
   soft-deleted), else max id ever + 1;
6. unless IMPORT or `force`, the candidate is checked against the subject's live
   versions under its effective level (409 with the reasons when it fails);
7. append the version; if replay rejected it (another instance's record came first),
   rewrite the key to what won, so compaction cannot resurrect the loser, and retry;
8. older soft-deleted versions of the subject holding the same id are hard-deleted,
   as Confluent does, unless something references them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from connect.registry.avro import AvroSchema, check_level
from connect.registry.core.errors import (
    ImportIdMismatchError,
    IncompatibleSchemaError,
    InvalidSchemaError,
    InvalidSubjectError,
    OperationNotPermittedError,
    ReferenceExistsError,
    SchemaNotFoundError,
    StoreError,
    SubjectNotFoundError,
    SubjectNotSoftDeletedError,
    SubjectSoftDeletedError,
    VersionNotFoundError,
    VersionNotSoftDeletedError,
    VersionSoftDeletedError,
)
from connect.registry.core.levels import DEFAULT_LEVEL, LATEST, TRANSITIVE, VersionId
from connect.registry.core.records import (
    AVRO,
    Reference,
    SchemaRecord,
    config_key,
    encode_schema,
    encode_watermark,
    mode_key,
    schema_key,
    watermark_key,
)
from connect.registry.core.schemas import SchemaParser
from connect.registry.core.settings import Settings
from connect.registry.core.state import Identity, RegistryState
from connect.registry.core.store import SCHEMAS_TOPIC, SchemaStore
from log import Log

__all__ = ["SchemaRegistry", "SchemaRequest"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_RETRIES = 10

Item = tuple[bytes, bytes | None]


@dataclass(frozen=True, slots=True)
class SchemaRequest:
    """The body of a register, lookup or compatibility request."""

    schema: str
    schema_type: str = AVRO
    references: tuple[Reference, ...] = ()
    id: int | None = None
    version: int | None = None


class SchemaRegistry:
    """Confluent's registry semantics over `log` (see the module docstring)."""

    def __init__(
        self, log: Log, *, topic: str = SCHEMAS_TOPIC, default_level: str = DEFAULT_LEVEL
    ) -> None:
        self.state = RegistryState()
        self.store = SchemaStore(log, self.state, topic=topic)
        self.settings = Settings(self.state, self.store, default_level=default_level)
        self.parser = SchemaParser(self.state)

    def start(self) -> None:
        """Replay `_schemas`; the registry answers as it did before it stopped."""
        self.store.start()

    def close(self) -> None:
        self.store.close()

    # ------------------------------------------------------------------ reads

    def subjects(
        self, *, prefix: str = "", deleted: bool = False, deleted_only: bool = False
    ) -> list[str]:
        """Subjects with a live version; `deleted` adds those with only soft-deleted
        ones, `deleted_only` lists only those."""
        with self.store.reading():
            out = []
            for subject, versions in self.state.subjects.items():
                if not subject.startswith(prefix):
                    continue
                live = any(not r.deleted for r in versions.values())
                if (deleted_only and not live) or (not deleted_only and (live or deleted)):
                    out.append(subject)
            return sorted(out)

    def versions(
        self, subject: str, *, deleted: bool = False, deleted_only: bool = False
    ) -> list[int]:
        with self.store.reading():
            records = self.state.subjects.get(subject, {})
            if deleted_only:
                found = sorted(v for v, r in records.items() if r.deleted)
            elif deleted:
                found = sorted(records)
            else:
                found = self.state.live_versions(subject)
            if not found:
                raise SubjectNotFoundError(subject)
            return found

    def version(self, subject: str, version: VersionId, *, deleted: bool = False) -> SchemaRecord:
        """One version; "latest" is the highest live one. A soft-deleted version is
        found only with `deleted`."""
        with self.store.reading():
            return self._version(subject, version, deleted=deleted)

    def _version(self, subject: str, version: VersionId, *, deleted: bool) -> SchemaRecord:
        records = self.state.subjects.get(subject)
        if not records or not (deleted or any(not r.deleted for r in records.values())):
            raise SubjectNotFoundError(subject)
        if version == LATEST:
            live = self.state.live_versions(subject)
            if not live:
                raise VersionNotFoundError(subject, version)
            return records[live[-1]]
        record = records.get(version)
        if record is None or (record.deleted and not deleted):
            raise VersionNotFoundError(subject, version)
        return record

    def schema(self, schema_id: int) -> SchemaRecord:
        """A version holding `schema_id` (live or soft-deleted): its schema text, type
        and references are the id's. 40403 once every holder was hard-deleted."""
        with self.store.reading():
            holders = self.state.holders.get(schema_id)
            if not holders:
                raise SchemaNotFoundError(schema_id)
            subject, version = min(holders)
            return self.state.subjects[subject][version]

    def schema_versions(self, schema_id: int, *, deleted: bool = False) -> list[tuple[str, int]]:
        """(subject, version) pairs holding the id, sorted; soft-deleted with `deleted`."""
        with self.store.reading():
            holders = self.state.holders.get(schema_id)
            if not holders:
                raise SchemaNotFoundError(schema_id)
            return sorted(
                (s, v) for s, v in holders if deleted or not self.state.subjects[s][v].deleted
            )

    def schema_subjects(self, schema_id: int, *, deleted: bool = False) -> list[str]:
        return sorted({s for s, _ in self.schema_versions(schema_id, deleted=deleted)})

    def referenced_by(
        self, subject: str, version: VersionId, *, deleted: bool = False
    ) -> list[int]:
        """Ids of the schemas whose references name subject/version."""
        with self.store.reading():
            record = self._version(subject, version, deleted=deleted)
            referrers = self.state.referrers.get((subject, record.version), set())
            ids = set()
            for s, v in referrers:
                referrer = self.state.subjects[s][v]
                if deleted or not referrer.deleted:
                    ids.add(referrer.id)
            return sorted(ids)

    def lookup(
        self,
        subject: str,
        request: SchemaRequest,
        *,
        normalize: bool = False,
        deleted: bool = False,
    ) -> SchemaRecord:
        """The version of `subject` holding this schema: 42201 if it does not parse,
        40401 if the subject has no version to look at, else 40403 if none matches."""
        with self.store.reading():
            references = self.parser.resolve(request.references)
        candidate = self.parser.parse(request.schema, references, normalize=normalize)
        identity = (request.schema_type, candidate.text, references)
        with self.store.reading():
            records = self.state.subjects.get(subject, {})
            visible = [
                r for _, r in sorted(records.items(), reverse=True) if deleted or not r.deleted
            ]
            if not visible:
                raise SubjectNotFoundError(subject)
            for record in visible:
                if record.identity == identity:
                    return record
            if normalize:
                text = candidate.text
                for record in visible:
                    if record.references == references and (
                        self.parser.stored(record, normalized=True).text == text
                    ):
                        return record
            raise SchemaNotFoundError()

    # ------------------------------------------------------------ compatibility

    def test_compatibility(
        self,
        subject: str,
        request: SchemaRequest,
        *,
        version: VersionId | None = None,
        normalize: bool = False,
    ) -> list[str]:
        """Why the candidate fails the subject's level (empty: compatible). Against
        one version, or with `version=None` against the history registration checks."""
        with self.store.reading():
            references = self.parser.resolve(request.references)
            if isinstance(version, int):
                record = self.state.record(subject, version)
                if record is None or record.deleted:
                    raise VersionNotFoundError(subject, version)
                history = [record]
            else:
                history = [
                    self.state.subjects[subject][v] for v in self.state.live_versions(subject)
                ]
                if version == LATEST:
                    history = history[-1:]
            level = self.settings.level(subject)
        candidate = self.parser.parse(request.schema, references, normalize=normalize)
        return self._check(level, candidate, history)

    def _check(
        self, level: str, candidate: AvroSchema, history: Sequence[SchemaRecord]
    ) -> list[str]:
        if level == "NONE" or not history:
            return []
        if level not in TRANSITIVE:
            history = history[-1:]  # the non-transitive levels look at the latest only
        existing = [self.parser.stored(r) for r in history]
        versions = [r.version for r in history]
        return list(check_level(level, new=candidate, existing=existing, versions=versions))

    # ---------------------------------------------------------------- register

    def register(
        self,
        subject: str,
        request: SchemaRequest,
        *,
        normalize: bool | None = None,
        force: bool = False,
    ) -> SchemaRecord:
        """Register a schema under `subject` (see the module docstring)."""
        validate_subject(subject)
        if normalize is None:
            normalize = self.settings.normalize(subject)
        # Step 1 (outside the lock: parsing is the slow part)
        with self.store.reading():
            references = self.parser.resolve(request.references)
        candidate = self.parser.parse(request.schema, references, normalize=normalize)
        for _ in range(_RETRIES):
            with self.store.writing():
                resolved = self.parser.resolve(request.references)
                if resolved != references:  # a "latest" reference moved meanwhile
                    references = resolved
                    candidate = self.parser.parse(request.schema, references, normalize=normalize)
                identity: Identity = (request.schema_type, candidate.text, references)
                # Step 2
                existing = self._live_holder(subject, identity)
                if existing is not None:
                    return existing
                # Step 3
                mode = self.settings.mode(subject)
                if mode == "READONLY":
                    self.settings.require_writable(subject)
                if request.id is not None and mode != "IMPORT":
                    raise OperationNotPermittedError(
                        f"Subject {subject} is not in import mode: a schema id can only be "
                        "given in IMPORT mode"
                    )
                if mode == "IMPORT":
                    record, stored = self._imported(subject, request, identity)
                    if stored:  # the very same version exists already
                        return record
                else:
                    record = self._new_version(subject, identity, candidate, force=force)
                # Step 7
                offsets = self.store.append(
                    [(schema_key(subject, record.version), encode_schema(record))]
                )
                if offsets.start in self.state.rejected:
                    self.state.rejected.discard(offsets.start)
                    self._repair(subject, record.version)
                    continue
                # Step 8
                self._drop_superseded(subject, record)
                return self.state.subjects[subject][record.version]
        raise StoreError(f"registering under {subject!r} lost {_RETRIES} races in a row")

    def _live_holder(self, subject: str, identity: Identity) -> SchemaRecord | None:
        schema_id = self.state.ids.get(identity)
        if schema_id is None:
            return None
        versions = self.state.subjects.get(subject, {})
        held = [v for s, v in self.state.holders.get(schema_id, ()) if s == subject]
        for version in sorted(held):
            if not versions[version].deleted:
                return versions[version]
        return None

    def _next_version(self, subject: str) -> int:
        versions = self.state.subjects.get(subject)
        return max(versions) + 1 if versions else 1

    def _new_version(
        self, subject: str, identity: Identity, candidate: AvroSchema, *, force: bool
    ) -> SchemaRecord:
        # Step 4
        version = self._next_version(subject)
        # Step 5
        schema_id = self.state.ids.get(identity)
        if schema_id is None:
            schema_id = self.state.max_id + 1
        # Step 6
        if not force:
            live = self.state.live_versions(subject)
            history = [self.state.subjects[subject][v] for v in live]
            level = self.settings.level(subject)
            reasons = self._check(level, candidate, history)
            if reasons:
                against = history[-1].version if level not in TRANSITIVE else None
                raise IncompatibleSchemaError(subject, reasons, version=against)
        schema_type, text, references = identity
        return SchemaRecord(subject, version, schema_id, text, schema_type, references)

    def _imported(
        self, subject: str, request: SchemaRequest, identity: Identity
    ) -> tuple[SchemaRecord, bool]:
        """IMPORT: the given id (and version, else the next); no compatibility check.
        True with the stored record when exactly this version exists already."""
        if request.id is None:
            raise OperationNotPermittedError(
                f"Subject {subject} is in import mode: a schema id must be given"
            )
        if request.id < 1:
            raise InvalidSchemaError(f"schema id {request.id} is not positive")
        version = request.version if request.version is not None else self._next_version(subject)
        schema_type, text, references = identity
        current = self.state.record(subject, version)
        if current is not None:
            if current.id == request.id and current.identity == identity:
                return current, True
            raise OperationNotPermittedError(
                f"Overwrite of version {version} of subject {subject} is not permitted"
            )
        named = self.state.schemas.get(request.id)
        if named is not None and named != identity:
            raise OperationNotPermittedError(
                f"Overwrite new schema with id {request.id} in context . is not permitted."
            )
        known = self.state.ids.get(identity)
        if known is not None and known != request.id:
            raise ImportIdMismatchError(request.id, known)
        return SchemaRecord(subject, version, request.id, text, schema_type, references), False

    def _repair(self, subject: str, version: int) -> None:
        """Step 7: our record lost; rewrite its key with what won (or a tombstone)."""
        won = self.state.record(subject, version)
        self.store.append([(schema_key(subject, version), encode_schema(won) if won else None)])

    def _drop_superseded(self, subject: str, record: SchemaRecord) -> None:
        """Step 8."""
        doomed = [
            r
            for v, r in self.state.subjects.get(subject, {}).items()
            if v < record.version
            and r.deleted
            and r.id == record.id
            and not self.state.referrers.get((subject, v))
        ]
        if doomed:
            self.store.append([(schema_key(subject, r.version), None) for r in doomed])

    # ------------------------------------------------------------------ deletes

    def delete_version(self, subject: str, version: VersionId, *, permanent: bool = False) -> int:
        """Soft-delete a live version, or hard-delete a soft-deleted one."""
        with self.store.writing():
            self.settings.require_writable(subject)
            records = self.state.subjects.get(subject)
            if not records:
                raise SubjectNotFoundError(subject)
            if version == LATEST:
                live = self.state.live_versions(subject)
                if not live:
                    raise VersionNotFoundError(subject, version)
                version = live[-1]
            record = records.get(version)
            if record is None:
                raise VersionNotFoundError(subject, version)
            if permanent and not record.deleted:
                raise VersionNotSoftDeletedError(subject, version)
            if not permanent and record.deleted:
                raise VersionSoftDeletedError(subject, version)
            self._refuse_referenced(subject, [version], include_deleted=permanent)
            if permanent:
                self.store.append(self._hard_delete_items(subject, [version]))
            else:
                self.store.append(
                    [(schema_key(subject, version), encode_schema(replace(record, deleted=True)))]
                )
            return version

    def delete_subject(self, subject: str, *, permanent: bool = False) -> list[int]:
        """Soft-delete every live version (40404 if none is left), or hard-delete a
        subject whose versions are all soft-deleted (40405 otherwise)."""
        with self.store.writing():
            self.settings.require_writable(subject)
            records = self.state.subjects.get(subject)
            if not records:
                raise SubjectNotFoundError(subject)
            live = self.state.live_versions(subject)
            if permanent:
                if live:
                    raise SubjectNotSoftDeletedError(subject)
                versions = sorted(records)
                self._refuse_referenced(subject, versions, include_deleted=True)
                self.store.append(self._hard_delete_items(subject, versions))
                return versions
            if not live:
                raise SubjectSoftDeletedError(subject)
            self._refuse_referenced(subject, live, include_deleted=False)
            self.store.append(
                [
                    (schema_key(subject, v), encode_schema(replace(records[v], deleted=True)))
                    for v in live
                ]
            )
            return live

    def _refuse_referenced(
        self, subject: str, versions: Sequence[int], *, include_deleted: bool
    ) -> None:
        """42206 if another subject-version references one of `versions` (a soft
        delete is blocked by live referrers, a hard delete by any)."""
        doomed = set(versions)
        for version in versions:
            for s, v in self.state.referrers.get((subject, version), ()):
                if s == subject and v in doomed:
                    continue
                if include_deleted or not self.state.subjects[s][v].deleted:
                    raise ReferenceExistsError(subject, version)

    def _hard_delete_items(self, subject: str, versions: Sequence[int]) -> list[Item]:
        """Tombstones, the id watermark (compaction may drop the last holder of the
        highest id), and the subject's config and mode when no version is left."""
        items: list[Item] = [(schema_key(subject, v), None) for v in versions]
        items.append((watermark_key(), encode_watermark(self.state.max_id)))
        if set(versions) >= set(self.state.subjects.get(subject, {})):
            if subject in self.state.configs:
                items.append((config_key(subject), None))
            if subject in self.state.modes:
                items.append((mode_key(subject), None))
        return items


def validate_subject(subject: str) -> None:
    """42208 for an empty subject or one with control characters."""
    if not subject or not subject.strip() or _CONTROL.search(subject):
        raise InvalidSubjectError(subject)
