"""The catalog and its tables: loading, auto-creation, schema evolution, and the Arrow
columns a batch must have before it is written.

Why a batch is aligned here and not by pyiceberg: pyiceberg refuses a batch whose
schema differs from the table's in any way (a nullable field for a required column,
fields in another order, an int16 for an int column), and its refusal names neither
the record nor the fix. So a batch is brought to the table's own Arrow schema first:
columns in the table's order, missing optional columns as nulls, each column cast to
its table type; what cannot be brought raises DataError naming the column.

Schema evolution (`iceberg.tables.evolve-schema-enabled`): new fields become optional
columns, and the promotions Iceberg allows (int → long, float → double, a wider
decimal) widen a column, through `update_schema().union_by_name`; anything else (a
long column receiving strings) fails the task naming the column, since no reader of
the table could read both.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from connect.api import DataError
from connectors.iceberg.config import IcebergSettings

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table

__all__ = ["align", "create_table", "evolve", "load_catalog", "load_table", "match_case",
           "table_arrow_schema"]

_log = logging.getLogger("connectors.iceberg")


def load_catalog(settings: IcebergSettings) -> Catalog:
    """The configured catalog (an SQL catalog's SQLite directory made first).

    Why a second try: an SQL catalog creates its own tables when it first opens a new
    database, and two tasks starting together both see them missing; the slower one's
    CREATE TABLE fails ("table iceberg_tables already exists"), which failed that task
    at start (seen in bench/lakehouse_bench.py: the other task then took all the
    partitions). Opened again, it finds the tables and creates none.
    """
    from pathlib import Path
    from urllib.parse import urlparse

    from pyiceberg.catalog import load_catalog as load

    props = dict(settings.catalog)
    uri = props.get("uri", "")
    if props["type"] == "sql" and uri.startswith("sqlite:///"):
        Path(uri.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    warehouse = props.get("warehouse", "")
    if warehouse.startswith("file:"):
        Path(urlparse(warehouse).path).mkdir(parents=True, exist_ok=True)
    for attempt in range(3):  # another task may be between its two CREATE TABLEs
        try:
            return load(settings.catalog_name, **props)
        except Exception as exc:
            if "already exists" not in str(exc) or attempt == 2:
                raise
            _log.info("catalog %s: another task made its tables meanwhile; opening it "
                      "again", settings.catalog_name)
    raise AssertionError("unreachable")


def load_table(catalog: Catalog, name: str) -> Table | None:
    from pyiceberg.exceptions import NoSuchTableError

    try:
        return catalog.load_table(name)
    except NoSuchTableError:
        return None


def create_table(
    catalog: Catalog, name: str, schema: pa.Schema, settings: IcebergSettings
) -> Table:
    """A new table from a batch's schema: identifier columns required (Iceberg's rule),
    the partition spec, both in the creating commit (the table's own
    `iceberg.table.<name>.id-columns` / `.partition-by`, else the defaults), and the
    table properties of `iceberg.tables.auto-create-props.*`. Another task creating it
    at the same moment wins harmlessly: its table is loaded instead."""
    own = settings.table(name)
    ids = set(own.id_columns)
    missing = ids - set(schema.names)
    if missing:
        raise DataError(f"{name}: id column {sorted(missing)[0]} is not a field of the records")
    fields = [f.with_nullable(False) if f.name in ids else f for f in schema]
    namespace = name.rsplit(".", 1)[0]
    try:
        catalog.create_namespace_if_not_exists(namespace)
    except Exception:  # another task made it between the check and the insert
        if not catalog.namespace_exists(namespace):
            raise
    try:
        table = catalog.create_table(name, schema=pa.schema(fields),
                                     properties=dict(settings.auto_create_props))
    except Exception as exc:  # TableAlreadyExistsError, or the catalog's own race error
        existing = load_table(catalog, name)
        if existing is None:
            raise
        _log.info("%s was created meanwhile by another writer (%s)", name, exc)
        return existing
    if ids or own.partition_by:
        with table.transaction() as tx:
            if ids:
                with tx.update_schema() as update:
                    update.set_identifier_fields(*own.id_columns)
            if own.partition_by:
                with tx.update_spec() as spec:
                    for transform, arg, column in own.partition_by:
                        spec.add_field(column, _transform(transform, arg), f"{column}_{transform}")
    _log.info("created Iceberg table %s", name)
    return table


def _transform(name: str, arg: int | None) -> Any:
    from pyiceberg import transforms as t

    return {
        "identity": lambda: t.IdentityTransform(),
        "year": lambda: t.YearTransform(),
        "month": lambda: t.MonthTransform(),
        "day": lambda: t.DayTransform(),
        "hour": lambda: t.HourTransform(),
        "bucket": lambda: t.BucketTransform(arg),
        "truncate": lambda: t.TruncateTransform(arg),
    }[name]()


def table_arrow_schema(table: Table) -> pa.Schema:
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    return schema_to_pyarrow(table.schema(), include_field_ids=False)


def evolve(table: Table, incoming: pa.Schema) -> bool:
    """Add the batch's new fields as optional columns and widen promoted types; True
    when the table changed. An incompatible change raises DataError naming the column."""
    from pyiceberg.exceptions import ResolveError, ValidationError

    current = table_arrow_schema(table)
    changed = [
        f for f in incoming
        if f.name not in current.names or not _same_type(current.field(f.name).type, f.type)
    ]
    if not changed:
        return False
    # New columns optional; existing ones keep the table's nullability (evolution adds
    # and widens, never relaxes: a required identifier column would become invalid,
    # and Arrow batches call every field nullable).
    wanted = pa.schema([f.with_nullable(True) if f.name not in current.names
                        else f.with_nullable(current.field(f.name).nullable)
                        for f in incoming])
    try:
        with table.update_schema() as update:
            update.union_by_name(wanted)
    except (ValidationError, ResolveError, ValueError, TypeError) as exc:
        bad = next((f for f in changed if f.name in current.names), changed[0])
        was = current.field(bad.name).type if bad.name in current.names else "absent"
        raise DataError(
            f"{table.name()}: column {bad.name} cannot change from {was} to {bad.type} "
            f"({exc})"
        ) from exc
    return True


def _same_type(table_type: pa.DataType, batch_type: pa.DataType) -> bool:
    """Whether a column of `batch_type` is written to `table_type` without a schema
    change: equal, or a type the table's own already holds (int16 into int, a
    millisecond timestamp into a microsecond one)."""
    if table_type == batch_type:
        return True
    if pa.types.is_integer(table_type) and pa.types.is_integer(batch_type):
        return batch_type.bit_width <= table_type.bit_width
    if pa.types.is_timestamp(table_type) and pa.types.is_timestamp(batch_type):
        return (table_type.tz is None) == (batch_type.tz is None)
    if pa.types.is_floating(table_type) and pa.types.is_floating(batch_type):
        return batch_type.bit_width <= table_type.bit_width
    if pa.types.is_string(table_type) or pa.types.is_large_string(table_type):
        return pa.types.is_string(batch_type) or pa.types.is_large_string(batch_type)
    if pa.types.is_binary(table_type) or pa.types.is_large_binary(table_type):
        return pa.types.is_binary(batch_type) or pa.types.is_large_binary(batch_type)
    return False


def match_case(table_name: str, target: pa.Schema, data: pa.Table) -> pa.Table:
    """`data` with each column named as the table's column of the same name in any
    case (`iceberg.tables.schema-case-insensitive`); a column the table lacks keeps
    its name. Two fields whose names differ only by case are refused, naming them."""
    names = {n.lower(): n for n in target.names}
    renamed = [names.get(n.lower(), n) for n in data.column_names]
    if len({n.lower() for n in renamed}) < len(renamed):
        clash = sorted(n for n in data.column_names
                       if [m.lower() for m in data.column_names].count(n.lower()) > 1)
        raise DataError(f"{table_name}: the records' fields {', '.join(clash)} differ only "
                        "by case, and iceberg.tables.schema-case-insensitive is on")
    return data if renamed == data.column_names else data.rename_columns(renamed)


def align(table_name: str, target: pa.Schema, data: pa.Table) -> pa.Table:
    """`data` in the table's columns and types (see the module docstring)."""
    columns = []
    names = set(data.column_names)
    for f in target:
        if f.name not in names:
            if not f.nullable:
                raise DataError(f"{table_name}: the records have no field for the required "
                                f"column {f.name}")
            columns.append(pa.nulls(data.num_rows, f.type))
            continue
        column = data.column(f.name)
        if column.type != f.type:
            try:
                column = column.cast(f.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise DataError(f"{table_name}: column {f.name} is {f.type} in the table, and "
                                f"the records' {column.type} does not convert ({exc})") from exc
        if not f.nullable and column.null_count:
            raise DataError(f"{table_name}: a null for the required column {f.name}")
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=target)
