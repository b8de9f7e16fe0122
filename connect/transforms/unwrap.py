"""ExtractNewRecordState: Debezium's "unwrap", which flattens a change event to the
row it leaves behind, so CDC streams feed sinks that expect plain rows.

A change event's value is an envelope — `before`, `after`, `source`, `op` (c create,
u update, d delete, r snapshot read, t truncate), `ts_ms` — with a Connect schema
(a Struct) or without one (a dict). The transform replaces it with:

- creates, updates and reads: the `after` row; its schema is the `after` field's
  schema made required (a row always has a value);
- deletes: what the delete handling asks for (below);
- truncates: dropped, as Debezium's transform always does (a row cannot say "every
  row is gone"); with `truncate.handling.mode=keep` the truncate event passes
  unchanged instead, so a sink that knows truncates (JdbcSink with
  `truncate.enabled`, like Debezium's JDBC sink with the same key) can empty its
  table in order with the rows around it — a replayed table then still matches a
  source that was truncated;
- the tombstone (null value) that follows each delete: kept or dropped (below).

Records that are not envelopes (heartbeats, schema-change and transaction events,
anything without `op`, `before` and `after`) pass through unchanged, as Debezium's do.

Delete handling. `delete.tombstone.handling.mode`, Debezium's newer key, wins when
set; otherwise the older pair `delete.handling.mode` + `drop.tombstones` decides:

    delete.tombstone.handling.mode  delete event becomes             tombstones
    drop                            dropped                          dropped
    tombstone                       null value, row schema           dropped
    rewrite                         `before` row, __deleted="true"   dropped
    rewrite-with-tombstone          `before` row, __deleted="true"   kept
    delete-to-tombstone             null value, null schema          dropped

    delete.handling.mode            delete event becomes             tombstones
    drop (default)                  dropped                          drop.tombstones
    none                            null value, row schema           (default true:
    rewrite                         `before` row, __deleted="true"    dropped)

In the rewrite modes every other row gets `__deleted="false"`, so the column exists
on every record. `tombstone`/`none` keep the row schema on the null value (Debezium
does so that a sink can still tell the table); `delete-to-tombstone` emits a true
Kafka tombstone.

Metadata. `add.fields` lists envelope fields to append to the row: `op`, `ts_ms`
(and `ts_us`, `ts_ns`) name the envelope's own, `id`, `total_order` and
`data_collection_order` the `transaction` block's, anything else the `source`
block's; `source.<f>` / `transaction.<f>` say so explicitly. They are named
`<add.fields.prefix><f>` (prefix `__`), or `<prefix><struct>_<f>` when the struct is
written out (`source.ts_ms` → `__source_ts_ms`), or the name after a colon
(`source.ts_ms:event_time`, used as written). A field the envelope does not have is
skipped. `add.headers` does the same into headers, named with `add.headers.prefix`.

`route.by.field` sends the record to the topic named by that column of the row
(`after`, or `before` for deletes). `drop.fields.header.name` names a header that
lists columns to remove from the value (and from the key with
`drop.fields.from.key`); with `drop.fields.keep.schema.compatible` (default) only
optional columns are removed, so the schema stays compatible with earlier ones.

Everything derived from an envelope schema is built once per schema and cached.

A `SourceBatch` of envelopes (a snapshot's chunk) is unwrapped on its columns when
every row is a create, update or read and no metadata goes into fields or headers:
the rows are the `after` column's children, no copy. Anything else (deletes,
truncates, `add.fields`, `add.headers`, `route.by.field`, a null to replace with a
default) goes record by record.

The keys are declared in `connect.transforms.unwrap_config`, with the modes they
choose and the parsing of `add.fields` / `add.headers` entries.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from connect.api import (
    OPTIONAL_STRING_SCHEMA,
    ConfigError,
    ConnectRecord,
    Schema,
    Struct,
    Transformation,
    Type,
)
from connect.transforms._util import (
    SchemaCache,
    SchemaCaching,
    field_values,
    require_map,
    require_struct,
    struct_schema,
)
from connect.transforms.unwrap_config import (
    ADD_FIELDS,
    ADD_FIELDS_PREFIX,
    ADD_HEADERS,
    ADD_HEADERS_PREFIX,
    CONFIG,
    DELETE_HANDLING_MODE,
    DELETE_TOMBSTONE_HANDLING_MODE,
    DELETED_FIELD,
    DROP_FIELDS_FROM_KEY,
    DROP_FIELDS_HEADER_NAME,
    DROP_FIELDS_KEEP_SCHEMA_COMPATIBLE,
    DROP_TOMBSTONES,
    LEGACY_DELETES,
    NEW_MODES,
    ROUTE_BY_FIELD,
    TRUNCATE_HANDLING_MODE,
    OnDelete,
    Ref,
    parse_refs,
)

__all__ = ["ExtractNewRecordState"]

_PURPOSE = "Debezium change event unwrapping"

# A path into an envelope Struct's values: (field index,) or (struct index, field index).
_Path = tuple[int, ...]


def _at(values: list[Any], path: _Path) -> Any:
    value = values[path[0]]
    if len(path) == 2 and value is not None:
        value = value.values()[path[1]]
    return value


_ROWS = {"c", "u", "r"}  # ops whose event is the `after` row


class _Plan(NamedTuple):
    """What the transform derives from one envelope schema."""

    before: int
    after: int
    op: int
    after_out: Schema  # the row schema of creates, updates and reads
    before_out: Schema  # the row schema of rewritten deletes
    null_out: Schema  # the schema of a delete turned into a null value
    fields: tuple[_Path, ...]  # add.fields present in this schema, in order
    headers: tuple[tuple[str, _Path, Schema], ...]
    route_after: int | None  # index of route.by.field in the after / before row
    route_before: int | None


class ExtractNewRecordState(SchemaCaching, Transformation[ConnectRecord]):
    """Flatten Debezium change events to the row state (see the module docstring)."""

    _CONFIG = CONFIG  # the keys, their modes and references: unwrap_config

    _schemas: SchemaCache[_Plan | Literal[False]]

    def __init__(self) -> None:
        super().__init__()
        self._on_delete = OnDelete.DROP
        self._keep_tombstones = False
        self._keep_truncates = False
        self._rewrite = False
        self._fields: tuple[Ref, ...] = ()
        self._headers: tuple[Ref, ...] = ()
        self._route: str | None = None
        self._drop_header: str | None = None
        self._drop_from_key = False
        self._keep_compatible = True
        self._dropped: dict[tuple[Schema, frozenset[str]], tuple[Schema, tuple[int, ...]]] = {}

    def _configure(self, parsed: dict[str, Any]) -> None:
        mode = parsed[DELETE_TOMBSTONE_HANDLING_MODE]
        if mode is not None:
            self._on_delete, self._keep_tombstones = NEW_MODES[mode.strip().lower()]
        else:
            self._on_delete = LEGACY_DELETES[parsed[DELETE_HANDLING_MODE].strip().lower()]
            self._keep_tombstones = not parsed[DROP_TOMBSTONES]
        self._rewrite = self._on_delete is OnDelete.REWRITE
        self._keep_truncates = parsed[TRUNCATE_HANDLING_MODE].strip().lower() == "keep"
        self._fields = parse_refs(ADD_FIELDS, parsed[ADD_FIELDS], parsed[ADD_FIELDS_PREFIX] or "")
        self._headers = parse_refs(
            ADD_HEADERS, parsed[ADD_HEADERS], parsed[ADD_HEADERS_PREFIX] or ""
        )
        if self._rewrite and any(r.name == DELETED_FIELD for r in self._fields):
            raise ConfigError(
                ADD_FIELDS, ",".join(parsed[ADD_FIELDS]), f"{DELETED_FIELD} is the rewrite marker"
            )
        self._route = (parsed[ROUTE_BY_FIELD] or "").strip() or None
        self._drop_header = (parsed[DROP_FIELDS_HEADER_NAME] or "").strip() or None
        self._drop_from_key = parsed[DROP_FIELDS_FROM_KEY]
        self._keep_compatible = parsed[DROP_FIELDS_KEEP_SCHEMA_COMPATIBLE]
        self._dropped.clear()

    # ------------------------------------------------------------------ apply

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        value = record.value
        if value is None:  # a tombstone (Debezium's come after each delete)
            return record if self._keep_tombstones else None
        schema = record.value_schema
        if schema is None:
            return self._schemaless(record, value)
        if schema.type is not Type.STRUCT:
            return record
        plan = self._schemas.get_or_build(schema, self._plan)
        if plan is False:
            return record  # not a change event
        envelope = require_struct(value, _PURPOSE)
        values = envelope.values()
        op = values[plan.op]
        if op == "t":
            return record if self._keep_truncates else None
        after = values[plan.after]
        if op != "d" and after is not None:
            row = self._row(plan.after_out, after, "false", values, plan)
            out = self._emit(record, plan, values, plan.after_out, row)
            return self._routed(out, after, plan.route_after)
        before = values[plan.before]
        on_delete = self._on_delete
        if on_delete is OnDelete.DROP:
            return None
        if on_delete is OnDelete.REWRITE and before is not None:
            row = self._row(plan.before_out, before, "true", values, plan)
            out = self._emit(record, plan, values, plan.before_out, row)
        elif on_delete is OnDelete.TOMBSTONE:
            out = self._emit(record, plan, values, None, None)
        elif on_delete is OnDelete.REWRITE:  # a delete without a before image
            out = self._emit(record, plan, values, plan.before_out.optional_(), None)
        else:
            out = self._emit(record, plan, values, plan.null_out, None)
        return self._routed(out, before, plan.route_before)

    def apply_batch(self, batch: Any) -> Any:
        """See the module docstring: the `after` rows of a batch of creates, updates
        and reads, as columns; NotImplemented for anything else."""
        schema = batch.value_schema
        plan = self._schemas.get_or_build(schema, self._plan)
        if plan is False:
            return batch  # not change events: unchanged, as apply() leaves them
        if plan.fields or plan.headers or self._route is not None:
            return NotImplemented
        op, after = batch.values.column(plan.op), batch.values.column(plan.after)
        if op.null_count or after.null_count or not set(pc.unique(op).to_pylist()) <= _ROWS:
            return NotImplemented
        columns = after.flatten()
        row_schema = plan.after_out
        if self._replace_null and any(
            column.null_count and f.schema.default is not None
            for f, column in zip(row_schema.fields, columns, strict=False)
        ):
            return NotImplemented
        if self._rewrite:
            columns.append(pa.nulls(len(batch), pa.string()).fill_null("false"))
        return batch.with_(
            value_schema=row_schema,
            values=pa.RecordBatch.from_arrays(columns, names=[f.name for f in row_schema.fields]),
        )

    def _row(
        self, schema: Schema, row: Struct, deleted: str, values: list[Any], plan: _Plan
    ) -> Struct:
        out = field_values(require_struct(row, _PURPOSE), self._replace_null)
        if self._rewrite:
            out.append(deleted)
        out.extend(_at(values, path) for path in plan.fields)
        return Struct.trusted(schema, out)

    def _emit(
        self,
        record: ConnectRecord,
        plan: _Plan,
        values: list[Any],
        schema: Schema | None,
        row: Struct | None,
    ) -> ConnectRecord:
        if not plan.headers:
            return self._dropping(record.new_record(value_schema=schema, value=row))  # type: ignore[attr-defined]
        headers = record.headers.copy()
        for name, path, header_schema in plan.headers:
            headers.add(name, _at(values, path), header_schema)
        out = record.new_record(value_schema=schema, value=row, headers=headers)  # type: ignore[attr-defined]
        return self._dropping(out)

    def _routed(self, record: ConnectRecord, row: Struct | None, index: int | None) -> Any:
        if index is None or row is None:
            return record
        topic = row.values()[index]
        if topic is None:
            return record
        return record.new_record(topic=str(topic))  # type: ignore[attr-defined]

    # ----------------------------------------------------------------- schemas

    def _plan(self, schema: Schema) -> _Plan | Literal[False]:
        """How to unwrap envelopes of `schema`, or False when it is no envelope (cached
        too: heartbeats and the like come again and again)."""
        f_before, f_after, f_op = (schema.field(n) for n in ("before", "after", "op"))
        if f_before is None or f_after is None or f_op is None:
            return False
        if f_before.schema.type is not Type.STRUCT or f_after.schema.type is not Type.STRUCT:
            return False
        fields = [(path, ref.name, s) for ref in self._fields for path, s in _find(schema, ref)]
        added = [(name, s) for _, name, s in fields]
        after_out = self._row_schema(f_after.schema, added)
        if f_before.schema == f_after.schema:
            before_out = after_out
        else:
            before_out = self._row_schema(f_before.schema, added)
        headers = tuple(
            (ref.name, path, s) for ref in self._headers for path, s in _find(schema, ref)
        )
        return _Plan(
            before=f_before.index,
            after=f_after.index,
            op=f_op.index,
            after_out=after_out,
            before_out=before_out,
            null_out=after_out.optional_(),
            fields=tuple(path for path, _, _ in fields),
            headers=headers,
            route_after=_index(f_after.schema, self._route),
            route_before=_index(f_before.schema, self._route),
        )

    def _row_schema(self, row: Schema, added: list[tuple[str, Schema]]) -> Schema:
        columns = [(f.name, f.schema) for f in row.fields]
        if self._rewrite:
            columns.append((DELETED_FIELD, OPTIONAL_STRING_SCHEMA))
        return struct_schema(row, columns + added).with_(optional=False)

    # -------------------------------------------------------------- schemaless

    def _schemaless(self, record: ConnectRecord, value: Any) -> ConnectRecord | None:
        if not isinstance(value, Mapping) or "op" not in value:
            return record
        if "after" not in value and "before" not in value:
            return record
        op = value["op"]
        if op == "t":
            return record if self._keep_truncates else None
        after = value.get("after")
        if op != "d" and after is not None:
            row: dict[str, Any] | None = dict(require_map(after, _PURPOSE))
            deleted, source_row = "false", row
        else:
            if self._on_delete is OnDelete.DROP:
                return None
            before = value.get("before")
            source_row = dict(require_map(before, _PURPOSE)) if before is not None else None
            row = source_row if self._on_delete is OnDelete.REWRITE else None
            deleted = "true"
        if row is not None:
            if self._rewrite:
                row[DELETED_FIELD] = deleted
            for ref in self._fields:
                found, field_value = _lookup(value, ref)
                if found:
                    row[ref.name] = field_value
        headers = record.headers
        if self._headers:
            headers = headers.copy()
            for ref in self._headers:
                found, field_value = _lookup(value, ref)
                if found:
                    headers.add(ref.name, field_value)
        out = self._dropping(record.new_record(value_schema=None, value=row, headers=headers))  # type: ignore[attr-defined]
        if self._route is not None and source_row is not None:
            topic = source_row.get(self._route)
            if topic is not None:
                out = out.new_record(topic=str(topic))
        return out

    # ------------------------------------------------------------- drop.fields

    def _dropping(self, record: ConnectRecord) -> ConnectRecord:
        """`record` without the columns the drop.fields header lists, if any."""
        if self._drop_header is None:
            return record
        header = record.headers.last(self._drop_header)
        if header is None or header.value is None:
            return record
        listed = header.value
        if isinstance(listed, str):
            listed = listed.split(",")
        names = frozenset(str(n).strip() for n in listed if str(n).strip())
        if not names:
            return record
        schema, value = self._without(record.value_schema, record.value, names)
        if not self._drop_from_key:
            return record.new_record(value_schema=schema, value=value)  # type: ignore[attr-defined]
        key_schema, key = self._without(record.key_schema, record.key, names)
        return record.new_record(  # type: ignore[attr-defined]
            value_schema=schema, value=value, key_schema=key_schema, key=key
        )

    def _without(
        self, schema: Schema | None, value: Any, names: frozenset[str]
    ) -> tuple[Schema | None, Any]:
        if value is None:
            return schema, value
        if schema is None:
            if not isinstance(value, Mapping):
                return schema, value
            return None, {k: v for k, v in value.items() if k not in names}
        if schema.type is not Type.STRUCT:
            return schema, value
        cached = self._dropped.get((schema, names))
        if cached is None:
            kept = tuple(
                f.index
                for f in schema.fields
                if f.name not in names or (self._keep_compatible and not f.schema.optional)
            )
            narrowed = struct_schema(
                schema, [(f.name, f.schema) for f in schema.fields if f.index in kept]
            )
            if len(self._dropped) >= 64:
                self._dropped.clear()
            cached = self._dropped[(schema, names)] = (narrowed, kept)
        narrowed, kept = cached
        if len(kept) == len(schema.fields):
            return schema, value
        values = require_struct(value, _PURPOSE).values()
        return narrowed, Struct.trusted(narrowed, [values[i] for i in kept])


def _find(envelope: Schema, ref: Ref) -> list[tuple[_Path, Schema]]:
    """Where `ref` is in `envelope` and its schema (made optional: the envelope may
    hold no value for it), or nothing when the envelope has no such field."""
    if ref.struct is None:
        field = envelope.field(ref.field)
        return [] if field is None else [((field.index,), field.schema.optional_())]
    holder = envelope.field(ref.struct)
    if holder is None or holder.schema.type is not Type.STRUCT:
        return []
    field = holder.schema.field(ref.field)
    if field is None:
        return []
    return [((holder.index, field.index), field.schema.optional_())]


def _lookup(envelope: Mapping[str, Any], ref: Ref) -> tuple[bool, Any]:
    """(found, value) of `ref` in a schemaless envelope."""
    holder = envelope if ref.struct is None else envelope.get(ref.struct)
    if not isinstance(holder, Mapping) or ref.field not in holder:
        return False, None
    return True, holder[ref.field]


def _index(row: Schema, name: str | None) -> int | None:
    if name is None:
        return None
    field = row.field(name)
    return None if field is None else field.index
