"""The records of the `_schemas` topic, in Confluent Schema Registry's formats, so the
topic reads like Confluent's own. Keys and values are JSON; a key's bytes are always
written the same way (fixed field order, compact), because compaction keeps the last
record per key *byte string*.

    key                                                        value (null = tombstone)
    {"keytype":"SCHEMA","subject":S,"version":V,"magic":1}     {"subject","version","id",
                                                                 "schemaType"?,"references"?,
                                                                 "schema","deleted"}
    {"keytype":"CONFIG","subject":S|null,"magic":0}            {"compatibilityLevel",
                                                                 "normalize"?}
    {"keytype":"MODE","subject":S|null,"magic":0}              {"mode"}
    {"keytype":"DELETE_SUBJECT","subject":S,"magic":0}         {"subject","version"}
    {"keytype":"NOOP","magic":0}                               ignored
    {"keytype":"ID_WATERMARK","magic":0}                       {"id"}         (ours)

A SCHEMA tombstone is a hard delete of that version. A soft delete rewrites the
version's record with `"deleted": true` (DELETE_SUBJECT, Confluent's other way of
soft-deleting a whole subject, is read but never written). ID_WATERMARK is ours: the
highest id ever handed out, written with every hard delete, so that after compaction
drops the tombstoned versions an id is still never handed out twice. Keys of any other
type are skipped, so a newer writer's records do not stop an older reader.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

__all__ = [
    "ConfigKey",
    "DeleteSubjectKey",
    "IdWatermarkKey",
    "ModeKey",
    "Reference",
    "SchemaKey",
    "SchemaRecord",
    "config_key",
    "decode_key",
    "encode_config",
    "encode_mode",
    "encode_schema",
    "encode_watermark",
    "mode_key",
    "schema_key",
    "watermark_key",
]

AVRO = "AVRO"


@dataclass(frozen=True, slots=True)
class Reference:
    """A schema reference: the named type `name` is the schema of subject/version."""

    name: str
    subject: str
    version: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "subject": self.subject, "version": self.version}


@dataclass(frozen=True, slots=True)
class SchemaRecord:
    """One version of one subject, as stored in `_schemas`."""

    subject: str
    version: int
    id: int
    schema: str
    schema_type: str = AVRO
    references: tuple[Reference, ...] = ()
    deleted: bool = False

    @property
    def identity(self) -> tuple[str, str, tuple[Reference, ...]]:
        """What makes two schemas the same schema (and so the same id)."""
        return (self.schema_type, self.schema, self.references)


@dataclass(frozen=True, slots=True)
class SchemaKey:
    subject: str
    version: int


@dataclass(frozen=True, slots=True)
class ConfigKey:
    subject: str | None


@dataclass(frozen=True, slots=True)
class ModeKey:
    subject: str | None


@dataclass(frozen=True, slots=True)
class DeleteSubjectKey:
    subject: str


@dataclass(frozen=True, slots=True)
class IdWatermarkKey:
    pass


Key = SchemaKey | ConfigKey | ModeKey | DeleteSubjectKey | IdWatermarkKey


def schema_key(subject: str, version: int) -> bytes:
    return orjson.dumps({"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1})


def config_key(subject: str | None) -> bytes:
    return orjson.dumps({"keytype": "CONFIG", "subject": subject, "magic": 0})


def mode_key(subject: str | None) -> bytes:
    return orjson.dumps({"keytype": "MODE", "subject": subject, "magic": 0})


def watermark_key() -> bytes:
    return orjson.dumps({"keytype": "ID_WATERMARK", "magic": 0})


def encode_schema(record: SchemaRecord) -> bytes:
    value: dict[str, Any] = {
        "subject": record.subject,
        "version": record.version,
        "id": record.id,
    }
    if record.schema_type != AVRO:
        value["schemaType"] = record.schema_type
    if record.references:
        value["references"] = [r.to_json() for r in record.references]
    value["schema"] = record.schema
    value["deleted"] = record.deleted
    return orjson.dumps(value)


def encode_config(level: str, normalize: bool | None) -> bytes:
    value: dict[str, Any] = {"compatibilityLevel": level}
    if normalize is not None:
        value["normalize"] = normalize
    return orjson.dumps(value)


def encode_mode(mode: str) -> bytes:
    return orjson.dumps({"mode": mode})


def encode_watermark(schema_id: int) -> bytes:
    return orjson.dumps({"id": schema_id})


def decode_key(raw: bytes) -> Key | None:
    """The key, or None for a key type this reader does not act on (NOOP, unknown)."""
    data = orjson.loads(raw)
    kind = data.get("keytype")
    if kind == "SCHEMA":
        return SchemaKey(str(data["subject"]), int(data["version"]))
    if kind == "CONFIG":
        return ConfigKey(data.get("subject"))
    if kind == "MODE":
        return ModeKey(data.get("subject"))
    if kind == "DELETE_SUBJECT":
        return DeleteSubjectKey(str(data["subject"]))
    if kind == "ID_WATERMARK":
        return IdWatermarkKey()
    return None


def decode_schema(raw: bytes) -> SchemaRecord:
    data = orjson.loads(raw)
    refs = tuple(
        Reference(str(r["name"]), str(r["subject"]), int(r["version"]))
        for r in data.get("references") or ()
    )
    return SchemaRecord(
        subject=str(data["subject"]),
        version=int(data["version"]),
        id=int(data["id"]),
        schema=str(data["schema"]),
        schema_type=str(data.get("schemaType") or AVRO),
        references=refs,
        deleted=bool(data.get("deleted", False)),
    )


def decode_value(raw: bytes) -> dict[str, Any]:
    value = orjson.loads(raw)
    if not isinstance(value, dict):
        raise ValueError("a _schemas value must be a JSON object")
    return value
