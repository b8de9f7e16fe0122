"""One topic, one table: the lake refuses a schema its readers could not read together.

A topic's directory is one table to its readers — `spark.read.option("mergeSchema",
"true").parquet(<topic dir>)` and pyarrow's datasets (`unify_schemas`, permissive
promotion) — only while the types in its files merge. The schema registry decides
compatibility by Avro's rules, which accept changes that Parquet readers do not: bytes
or a decimal read as string (`ALTER COLUMN amount TYPE text`), int → long, float →
double. A file written with such a change would make the whole topic unreadable as
one table from then on. So the sink checks every new value schema against what the
table already holds, before anything of it is written, and stops the task with the
topic, the column and both types if the readers could not merge them.

What the readers merge (measured on Spark 4 and pyarrow, kept by the tests in
`tests/connectors/spark/test_table_schema.py`, which ask both readers):
- a new column, and a column that new files leave out (read as null where missing);
  nullability may change either way (Spark reads file sources as nullable);
- a decimal's precision, at the same scale (read as the larger precision);
- a timestamp's unit between ms and us, with the same time zone (Spark reads both as
  its timestamp; pyarrow refuses two different zones);
- string with large_string, binary with large_binary (one Parquet type each);
- structs field by field, lists by element, maps by key and value, recursively.
Anything else is refused: every other change of type, including int → long and
float → double, which pyarrow promotes but Spark's schema merge refuses
(`CANNOT_MERGE_SCHEMAS`), and two names that differ only in case (Spark resolves names
case-insensitively and reads them as one column, pyarrow as two). Both readers treat
the two sides of a pair alike, so the rule is symmetric: a narrower type after a wider
one is read as the wider.

A column of Arrow's null type (schemaless JSON whose field was null in every row of a
batch) holds nothing, and Spark merges it with no other type: files leave it out
(`stored`), and a missing column reads as null, so the field's first real type is the
one the table takes.

Cheap by construction (numbered as in `TableSchema.admit`):
1. A schema admitted before is admitted again with one set lookup; the writers call
   `admit` only when a batch's schema differs from the last one they admitted.
2. A new schema first folds in the footers of the table's published files this
   instance has not read: a restarted task, or the other tasks of the connector,
   wrote them. The files this instance published are known already.
3. The new schema, as the storage's writer will store it (`Storage.stored_schema`:
   Spark's writer has types of its own), is merged with the table's; a conflict
   raises `SchemaConflictError`, anything else becomes the table's schema
   (conservatively, before its rows are written: a later schema is checked against
   it too).

The limit: tasks of one connector share no lock, so two tasks that meet two mutually
incompatible new schemas at the same moment (each compatible with the files published
so far) may both go on. A producer's schema change reaches every partition alike,
which makes that a corner; the next new schema either task meets sees both files.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import NamedTuple

import pyarrow as pa

from connect.api import ConnectError
from connectors.spark.files import parse_file_name
from connectors.spark.storage import Storage

__all__ = ["Conflict", "SchemaConflictError", "TableSchema", "merge_schemas", "stored"]

_log = logging.getLogger(__name__)


class Conflict(NamedTuple):
    """A column whose type in the table and in a new schema the readers cannot merge."""

    column: str
    held: str
    new: str

    def __str__(self) -> str:
        return f"column {self.column} is {self.held} in the table and {self.new} in the new schema"


class SchemaConflictError(ConnectError):
    """A value schema that would split a topic's table in two (see the module
    docstring). Not retriable: the same records meet the same table again."""

    def __init__(self, topic: str, conflicts: list[Conflict]) -> None:
        self.topic = topic
        self.conflicts = conflicts
        listed = "; ".join(map(str, conflicts))
        super().__init__(
            f"topic {topic}: a new value schema does not fit the table's Parquet files "
            f"({listed}), which Spark's mergeSchema and pyarrow could not read as one "
            "table; nothing of it was written. Keep the column's type (a decimal's "
            "precision may grow, a timestamp's unit may go from ms to us), or write the "
            "new schema to another topic or topics.dir"
        )


def stored(table: pa.Table) -> pa.Table:
    """The table as a file holds it: without its null-typed columns (unless nothing else
    would be left)."""
    empty = [f.name for f in table.schema if pa.types.is_null(f.type)]
    if not empty or len(empty) == table.num_columns:
        return table
    return table.drop_columns(empty)


def _stored_schema(schema: pa.Schema) -> pa.Schema:
    """`stored` for a schema, without the schema's metadata."""
    fields = [f for f in schema if not pa.types.is_null(f.type)]
    return pa.schema(fields or list(schema))


def merge_schemas(table: pa.Schema, new: pa.Schema) -> tuple[pa.Schema, list[Conflict]]:
    """The schema the readers see once files of `new` join files of `table`, and the
    conflicts that stop them (an empty list: they merge)."""
    conflicts: list[Conflict] = []
    fields = _merge_fields("", list(table), list(new), conflicts)
    return pa.schema(fields), conflicts


def _merge_fields(
    prefix: str, held: list[pa.Field], new: list[pa.Field], conflicts: list[Conflict]
) -> list[pa.Field]:
    merged = list(held)
    by_name = {f.name.lower(): i for i, f in enumerate(held)}
    for field in new:
        i = by_name.get(field.name.lower())
        if i is None:  # a new column: old files read as null there
            by_name[field.name.lower()] = len(merged)
            merged.append(field)
            continue
        old = merged[i]
        if old.name != field.name:  # Spark resolves names case-insensitively
            conflicts.append(
                Conflict(f"{prefix}{field.name}", f"named {old.name}", f"named {field.name}")
            )
            continue
        kind = _merge_type(f"{prefix}{field.name}", old.type, field.type, conflicts)
        merged[i] = pa.field(old.name, kind, old.nullable or field.nullable)
    return merged


def _merge_type(
    column: str, held: pa.DataType, new: pa.DataType, conflicts: list[Conflict]
) -> pa.DataType:
    held, new = _plain(held), _plain(new)
    if held.equals(new):
        return held
    t = pa.types
    if t.is_struct(held) and t.is_struct(new):
        return pa.struct(_merge_fields(f"{column}.", list(held), list(new), conflicts))
    if _is_list(held) and _is_list(new):
        item = _merge_type(f"{column}[]", held.value_type, new.value_type, conflicts)
        return pa.large_list(item) if t.is_large_list(held) else pa.list_(item)
    if t.is_map(held) and t.is_map(new):
        key = _merge_type(f"{column}.key", held.key_type, new.key_type, conflicts)
        item = _merge_type(f"{column}.value", held.item_type, new.item_type, conflicts)
        return pa.map_(key, item)
    if t.is_decimal(held) and t.is_decimal(new) and held.scale == new.scale:
        precision = max(held.precision, new.precision)
        if precision <= 38:
            return pa.decimal128(precision, held.scale)
        return pa.decimal256(precision, held.scale)
    if (
        t.is_timestamp(held)
        and t.is_timestamp(new)
        and held.tz == new.tz
        and {held.unit, new.unit} <= {"ms", "us"}
    ):
        return pa.timestamp("us", held.tz)
    if _family(held) is not None and _family(held) == _family(new):
        return held
    conflicts.append(Conflict(column, str(held), str(new)))
    return held


def _plain(kind: pa.DataType) -> pa.DataType:
    """A dictionary-encoded column is stored as its values."""
    return kind.value_type if pa.types.is_dictionary(kind) else kind


def _is_list(kind: pa.DataType) -> bool:
    return pa.types.is_list(kind) or pa.types.is_large_list(kind)


def _family(kind: pa.DataType) -> str | None:
    """Arrow types that are one Parquet type (and one Spark type)."""
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return "string"
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return "binary"
    return None


class TableSchema:
    """The merged schema of one topic's published files, as this task knows it (see
    the module docstring). Shared by the task's writers of that topic; called from the
    task's thread only."""

    def __init__(self, topic: str, storage: Storage, topics_dir: str) -> None:
        self.topic = topic
        self._storage = storage
        self._directory = f"{topics_dir}/{topic}"
        #: The readers' view of the table (None: no file read or schema admitted yet).
        self.schema: pa.Schema | None = None
        self._admitted: set[pa.Schema] = set()
        self._read: set[str] = set()

    def admit(self, schema: pa.Schema) -> None:
        """Return if files of `schema` keep the table one table; otherwise raise
        SchemaConflictError naming the columns."""
        # Step 1
        if schema in self._admitted:
            return
        # Step 2
        self._read_new_footers()
        # Step 3
        kept = _stored_schema(self._storage.stored_schema(schema))
        if self.schema is None:
            merged, conflicts = kept, []
        else:
            merged, conflicts = merge_schemas(self.schema, kept)
        if conflicts:
            raise SchemaConflictError(self.topic, conflicts)
        self.schema = merged
        self._admitted.add(schema)

    def published(self, paths: Iterable[str]) -> None:
        """Files this task published: their schemas were admitted, so their footers
        need no reading."""
        self._read.update(paths)

    def _read_new_footers(self) -> None:
        for path in self._storage.walk_files(self._directory):
            if path in self._read:
                continue
            parsed = parse_file_name(path.rsplit("/", 1)[-1])
            if parsed is None or parsed.topic != self.topic:
                continue  # not a file of the sink's (a temp file, a marker)
            footer = _stored_schema(self._storage.read_parquet_schema(path))
            if self.schema is None:
                self.schema = footer
            else:
                self.schema, conflicts = merge_schemas(self.schema, footer)
                if conflicts:  # written before this check existed; the first type stays
                    _log.warning(
                        "topic %s: the table's files already disagree: %s",
                        self.topic,
                        "; ".join(map(str, conflicts)),
                    )
            self._read.add(path)
