"""ExtractNewRecordState's configuration: its keys declared once, the delete-handling
modes they choose between, and the `add.fields` / `add.headers` entries they parse.

Why a module of its own: what the keys mean (Debezium's two generations of delete
handling, the reference syntax of `add.fields`) is a table a reader looks up, apart
from how the transform unwraps an event (`connect.transforms.unwrap`, whose module
docstring describes both).
"""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple

from connect.api import ConfigDef, ConfigError, ConfigType, Importance, one_of
from connect.transforms._util import define_replace_null

__all__ = [
    "ADD_FIELDS",
    "ADD_FIELDS_PREFIX",
    "ADD_HEADERS",
    "ADD_HEADERS_PREFIX",
    "CONFIG",
    "DELETED_FIELD",
    "DELETE_HANDLING_MODE",
    "DELETE_TOMBSTONE_HANDLING_MODE",
    "DROP_FIELDS_FROM_KEY",
    "DROP_FIELDS_HEADER_NAME",
    "DROP_FIELDS_KEEP_SCHEMA_COMPATIBLE",
    "DROP_TOMBSTONES",
    "LEGACY_DELETES",
    "NEW_MODES",
    "ROUTE_BY_FIELD",
    "TRUNCATE_HANDLING_MODE",
    "OnDelete",
    "Ref",
    "parse_refs",
]

DROP_TOMBSTONES = "drop.tombstones"
DELETE_HANDLING_MODE = "delete.handling.mode"
DELETE_TOMBSTONE_HANDLING_MODE = "delete.tombstone.handling.mode"
ROUTE_BY_FIELD = "route.by.field"
ADD_FIELDS = "add.fields"
ADD_FIELDS_PREFIX = "add.fields.prefix"
ADD_HEADERS = "add.headers"
ADD_HEADERS_PREFIX = "add.headers.prefix"
DROP_FIELDS_HEADER_NAME = "drop.fields.header.name"
DROP_FIELDS_FROM_KEY = "drop.fields.from.key"
DROP_FIELDS_KEEP_SCHEMA_COMPATIBLE = "drop.fields.keep.schema.compatible"
TRUNCATE_HANDLING_MODE = "truncate.handling.mode"

DELETED_FIELD = "__deleted"
_ENVELOPE_FIELDS = frozenset({"op", "ts_ms", "ts_us", "ts_ns"})
_TRANSACTION_FIELDS = frozenset({"id", "total_order", "data_collection_order"})
_STRUCTS = ("source", "transaction")
_LEGACY_MODES = ("drop", "none", "rewrite")
_MODES = ("drop", "tombstone", "rewrite", "rewrite-with-tombstone", "delete-to-tombstone")
_REFS_DOC = (
    " Fields of the envelope (op, ts_ms), of its transaction block (id, total_order, "
    "data_collection_order) or else of its source block; write source.<field> or "
    "transaction.<field> to say which, and <field>:<name> to choose the name."
)


class OnDelete(Enum):
    """What a delete event becomes."""

    DROP = "dropped"
    NULL = "a null value with the row schema"
    TOMBSTONE = "a tombstone (null value and schema)"
    REWRITE = "the before row with __deleted=true"


# mode → (delete becomes, tombstones kept)
NEW_MODES: dict[str, tuple[OnDelete, bool]] = {
    "drop": (OnDelete.DROP, False),
    "tombstone": (OnDelete.NULL, False),
    "rewrite": (OnDelete.REWRITE, False),
    "rewrite-with-tombstone": (OnDelete.REWRITE, True),
    "delete-to-tombstone": (OnDelete.TOMBSTONE, False),
}
LEGACY_DELETES = {"drop": OnDelete.DROP, "none": OnDelete.NULL, "rewrite": OnDelete.REWRITE}


class Ref(NamedTuple):
    """One `add.fields` / `add.headers` entry: where the value is (`struct` None: the
    envelope itself) and the name it is added under."""

    struct: str | None
    field: str
    name: str


def parse_refs(key: str, entries: list[str], prefix: str) -> tuple[Ref, ...]:
    """The references an `add.fields` / `add.headers` list makes (see the module
    docstring); a ConfigError on `key` for an entry that names no field."""
    refs: list[Ref] = []
    for entry in entries:
        spec, colon, rename = entry.partition(":")
        parts = spec.strip().split(".")
        if len(parts) == 1 and parts[0]:
            field = parts[0]
            if field in _ENVELOPE_FIELDS:
                struct = None
            elif field in _TRANSACTION_FIELDS:
                struct = "transaction"
            else:
                struct = "source"
            name = prefix + field
        elif len(parts) == 2 and parts[0] in _STRUCTS and parts[1]:
            struct, field = parts
            name = f"{prefix}{struct}_{field}"
        else:
            raise ConfigError(
                key,
                ",".join(entries),
                f"{entry!r} is not <field>, source.<field> or transaction.<field>",
            )
        if colon:
            name = rename.strip()
            if not name:
                raise ConfigError(key, ",".join(entries), f"{entry!r} gives an empty name")
        if any(r.name == name for r in refs):
            raise ConfigError(key, ",".join(entries), f"{name!r} would be added twice")
        refs.append(Ref(struct, field, name))
    return tuple(refs)


CONFIG = define_replace_null(
    ConfigDef()
    .define(
        DROP_TOMBSTONES,
        ConfigType.BOOLEAN,
        True,
        None,
        Importance.LOW,
        "Whether to drop the tombstone that follows each delete event. Ignored when "
        f"{DELETE_TOMBSTONE_HANDLING_MODE} is set.",
    )
    .define(
        DELETE_HANDLING_MODE,
        ConfigType.STRING,
        "drop",
        one_of(*_LEGACY_MODES),
        Importance.MEDIUM,
        "What a delete event becomes: drop (removed), none (a null value), or rewrite "
        f"(the before row with {DELETED_FIELD}=true, other rows with {DELETED_FIELD}="
        f"false). Ignored when {DELETE_TOMBSTONE_HANDLING_MODE} is set.",
    )
    .define(
        DELETE_TOMBSTONE_HANDLING_MODE,
        ConfigType.STRING,
        None,
        one_of(*_MODES),
        Importance.MEDIUM,
        "Delete events and tombstones together, replacing drop.tombstones and "
        "delete.handling.mode: drop (both removed), tombstone (each delete becomes a "
        "null value, tombstones removed), rewrite (deletes rewritten, tombstones "
        "removed), rewrite-with-tombstone (deletes rewritten, tombstones kept), "
        "delete-to-tombstone (deletes become tombstones, original tombstones removed).",
    )
    .define(
        TRUNCATE_HANDLING_MODE,
        ConfigType.STRING,
        "drop",
        one_of("drop", "keep"),
        Importance.LOW,
        "What a truncate event (op=t) becomes: drop (removed, as Debezium does) or "
        "keep (passed on unchanged, for a sink that empties its table on it, such as "
        "JdbcSink with truncate.enabled=true).",
    )
    .define(
        ROUTE_BY_FIELD,
        ConfigType.STRING,
        "",
        None,
        Importance.LOW,
        "A column whose value (after the change; before it, for deletes) names the "
        "topic to send the record to.",
    )
    .define(
        ADD_FIELDS,
        ConfigType.LIST,
        "",
        None,
        Importance.LOW,
        "Metadata fields to add to the row, prefixed with add.fields.prefix "
        "(or <prefix><struct>_ when the struct is written out)." + _REFS_DOC,
    )
    .define(
        ADD_FIELDS_PREFIX,
        ConfigType.STRING,
        "__",
        None,
        Importance.LOW,
        "The prefix of the fields add.fields adds.",
    )
    .define(
        ADD_HEADERS,
        ConfigType.LIST,
        "",
        None,
        Importance.LOW,
        "Metadata fields to add as headers, prefixed with add.headers.prefix." + _REFS_DOC,
    )
    .define(
        ADD_HEADERS_PREFIX,
        ConfigType.STRING,
        "__",
        None,
        Importance.LOW,
        "The prefix of the headers add.headers adds.",
    )
    .define(
        DROP_FIELDS_HEADER_NAME,
        ConfigType.STRING,
        None,
        None,
        Importance.LOW,
        "A header listing columns to remove from the value (a list, or a comma "
        "separated string).",
    )
    .define(
        DROP_FIELDS_FROM_KEY,
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.LOW,
        "Whether the columns the drop.fields header lists are removed from the key too.",
    )
    .define(
        DROP_FIELDS_KEEP_SCHEMA_COMPATIBLE,
        ConfigType.BOOLEAN,
        True,
        None,
        Importance.LOW,
        "Whether only optional columns are removed, keeping the schema compatible.",
    )
)
