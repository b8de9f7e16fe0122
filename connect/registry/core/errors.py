"""Errors of the registry core. Each is a category a caller acts on, keeps its facts as
attributes and builds its message from them; the REST layer maps each type to
Confluent's HTTP status and error code in one table (`connect.registry.rest.errors`).

    RegistryError
    ├── NotFoundError
    │   ├── SubjectNotFoundError            subject
    │   ├── VersionNotFoundError            subject, version
    │   ├── SchemaNotFoundError             schema_id (None for a lookup miss)
    │   ├── SubjectSoftDeletedError         subject        (second soft delete)
    │   ├── SubjectNotSoftDeletedError      subject        (hard delete of a live subject)
    │   ├── VersionSoftDeletedError         subject, version
    │   ├── VersionNotSoftDeletedError      subject, version
    │   ├── SubjectConfigNotFoundError      subject        (no subject-level level)
    │   └── SubjectModeNotFoundError        subject        (no subject-level mode)
    ├── IncompatibleSchemaError             subject, reasons, version
    ├── InvalidRequestError
    │   ├── InvalidSchemaError              reason
    │   ├── InvalidVersionError             version
    │   ├── InvalidCompatibilityLevelError  level
    │   ├── InvalidModeError                mode
    │   └── InvalidSubjectError             subject
    ├── OperationNotPermittedError          reason
    ├── ReferenceExistsError                subject, version
    ├── ImportIdMismatchError               schema_id, existing_id
    └── StoreError                          reason   (the `_schemas` log failed or timed out)
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "ImportIdMismatchError",
    "IncompatibleSchemaError",
    "InvalidCompatibilityLevelError",
    "InvalidModeError",
    "InvalidRequestError",
    "InvalidSchemaError",
    "InvalidSubjectError",
    "InvalidVersionError",
    "NotFoundError",
    "OperationNotPermittedError",
    "ReferenceExistsError",
    "RegistryError",
    "SchemaNotFoundError",
    "StoreError",
    "SubjectConfigNotFoundError",
    "SubjectModeNotFoundError",
    "SubjectNotFoundError",
    "SubjectNotSoftDeletedError",
    "SubjectSoftDeletedError",
    "VersionNotFoundError",
    "VersionNotSoftDeletedError",
    "VersionSoftDeletedError",
]


class RegistryError(Exception):
    """Root of the registry's errors."""


class NotFoundError(RegistryError):
    """Something the request names does not exist (in the state it must be in)."""


class SubjectNotFoundError(NotFoundError):
    def __init__(self, subject: str) -> None:
        self.subject = subject
        super().__init__(f"Subject '{subject}' not found.")


class VersionNotFoundError(NotFoundError):
    def __init__(self, subject: str, version: int | str) -> None:
        self.subject, self.version = subject, version
        super().__init__(f"Version {version} not found.")


class SchemaNotFoundError(NotFoundError):
    def __init__(self, schema_id: int | None = None) -> None:
        self.schema_id = schema_id
        super().__init__(
            "Schema not found" if schema_id is None else f"Schema {schema_id} not found"
        )


class SubjectSoftDeletedError(NotFoundError):
    def __init__(self, subject: str) -> None:
        self.subject = subject
        super().__init__(
            f"Subject '{subject}' was soft deleted. Set permanent=true to delete permanently"
        )


class SubjectNotSoftDeletedError(NotFoundError):
    def __init__(self, subject: str) -> None:
        self.subject = subject
        super().__init__(
            f"Subject '{subject}' was not deleted first before being permanently deleted"
        )


class VersionSoftDeletedError(NotFoundError):
    def __init__(self, subject: str, version: int) -> None:
        self.subject, self.version = subject, version
        super().__init__(
            f"Subject '{subject}' Version {version} was soft deleted. "
            "Set permanent=true to delete permanently"
        )


class VersionNotSoftDeletedError(NotFoundError):
    def __init__(self, subject: str, version: int) -> None:
        self.subject, self.version = subject, version
        super().__init__(
            f"Subject '{subject}' Version {version} was not deleted first before being "
            "permanently deleted"
        )


class SubjectConfigNotFoundError(NotFoundError):
    def __init__(self, subject: str) -> None:
        self.subject = subject
        super().__init__(
            f"Subject '{subject}' does not have subject-level compatibility configured"
        )


class SubjectModeNotFoundError(NotFoundError):
    def __init__(self, subject: str) -> None:
        self.subject = subject
        super().__init__(f"Subject '{subject}' does not have subject-level mode configured")


class IncompatibleSchemaError(RegistryError):
    """The candidate fails the subject's compatibility level against `version`."""

    def __init__(self, subject: str, reasons: Sequence[str], *, version: int | None) -> None:
        self.subject, self.reasons, self.version = subject, list(reasons), version
        details = "; ".join(self.reasons) or "incompatible"
        against = "" if version is None else f" (version {version})"
        super().__init__(
            f"Schema being registered is incompatible with an earlier schema for subject "
            f'"{subject}"{against}, details: [{details}]'
        )


class InvalidRequestError(RegistryError):
    """A request that names something the registry cannot accept (422)."""


class InvalidSchemaError(InvalidRequestError):
    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"Invalid schema: {reason}")


class InvalidVersionError(InvalidRequestError):
    def __init__(self, version: object) -> None:
        self.version = version
        super().__init__(
            f"The specified version '{version}' is not a valid version id. Allowed values "
            'are between [1, 2^31-1] and the string "latest"'
        )


class InvalidCompatibilityLevelError(InvalidRequestError):
    def __init__(self, level: object) -> None:
        self.level = level
        super().__init__(
            f"Invalid compatibility level {level!r}. Valid values are none, backward, "
            "forward, full, backward_transitive, forward_transitive, and full_transitive"
        )


class InvalidModeError(InvalidRequestError):
    def __init__(self, mode: object) -> None:
        self.mode = mode
        super().__init__(f"Invalid mode {mode!r}. Valid values are READWRITE, READONLY and IMPORT.")


class InvalidSubjectError(InvalidRequestError):
    def __init__(self, subject: str) -> None:
        self.subject = subject
        super().__init__(f"Invalid subject {subject!r}: empty or contains a control character")


class OperationNotPermittedError(RegistryError):
    """The mode (READONLY, IMPORT) or another rule forbids the operation."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class ReferenceExistsError(RegistryError):
    """Another schema references the version being deleted."""

    def __init__(self, subject: str, version: int) -> None:
        self.subject, self.version = subject, version
        super().__init__(
            f"One or more references exist to the schema {{subject={subject},version={version}}}."
        )


class ImportIdMismatchError(RegistryError):
    """IMPORT of a schema that already has another id (one id per distinct schema)."""

    def __init__(self, schema_id: int, existing_id: int) -> None:
        self.schema_id, self.existing_id = schema_id, existing_id
        super().__init__(
            f"Schema already registered with id {existing_id} instead of input id {schema_id}"
        )


class StoreError(RegistryError):
    """The `_schemas` log failed, or a write was not read back in time."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"Error in the backend data store: {reason}")
