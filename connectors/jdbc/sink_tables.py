"""The JDBC sink's tables: a topic's table name, what a table has (reflected once and
cached), the DDL that makes it fit a record shape, and a shape bound to a table.

This is step 1 of the writer's protocol (`connectors.jdbc.sink_writer`): CREATE TABLE
when missing (`auto.create`), ALTER TABLE ADD the missing columns, nullable
(`auto.evolve`), each DDL statement in a transaction of its own. A CREATE or ALTER that
loses a race with another task re-reads the table instead of failing. Kept apart from
the writing because it is the part that changes the database's schema, with its own
refusals (`TableSchemaError`, never retried) and its own cache to forget after an
error.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Dialect

from connect.api import ConnectError, DataError
from connectors.jdbc.dialects import reflected_name
from connectors.jdbc.sink_config import SinkSettings
from connectors.jdbc.sink_fields import Column, FieldsPlan, column_type

__all__ = ["Bound", "TableInfo", "TableName", "TableSchemaError", "Tables", "table_name"]

_PART = re.compile(r"^[A-Za-z0-9_.$-]+$")


class TableSchemaError(ConnectError):
    """A table that is missing or lacks columns, and the config may not change it
    (or the change is not allowed): DDL problems are never retried."""

    def __init__(self, table: str, reason: str) -> None:
        self.table = table
        self.reason = reason
        super().__init__(f"table {table}: {reason}")


class TableName(NamedTuple):
    schema: str | None
    name: str

    def __str__(self) -> str:
        return self.name if self.schema is None else f"{self.schema}.{self.name}"


def table_name(fmt: str, topic: str, *, max_length: int) -> TableName:
    """The table of `topic` per `table.name.format`. The format's own dot separates a
    schema; dots of the topic stay in the table name."""
    parts = [p.replace("${topic}", topic) for p in fmt.split(".")]
    for part in parts:
        if not part or not _PART.match(part) or len(part) > max_length:
            raise DataError(
                f"table.name.format {fmt!r} gives the name {part!r} for topic {topic!r}: "
                f"a name needs 1 to {max_length} of the characters A-Z a-z 0-9 _ . $ -"
            )
    return TableName(parts[0], parts[1]) if len(parts) == 2 else TableName(None, parts[0])


@dataclass(slots=True)
class TableInfo:
    """What a table has, as reflected: its columns' types and nullability, its key."""

    columns: dict[str, sa.types.TypeEngine]  # actual name -> reflected type
    nullable: dict[str, bool]
    key: tuple[str, ...]

    def find(self, name: str) -> str | None:
        """The table's column for a field: exact name, else one that differs only in
        case (unquoted names fold to one case in most databases)."""
        if name in self.columns:
            return name
        folded = [c for c in self.columns if c.casefold() == name.casefold()]
        return folded[0] if len(folded) == 1 else None


@dataclass(slots=True)
class Bound:
    """A plan bound to a table: the columns as SQLAlchemy sees them, the value
    converters, and the statements, built once."""

    table: sa.Table
    names: tuple[str, ...]  # the table's column names, in plan order
    n_key: int
    converters: list[tuple[int, Callable[[Any], Any] | None, Any]]
    copy_formatters: list[tuple[int, Callable[[Any], Any]]] | None  # None: no COPY
    statements: dict[str, Any] = field(default_factory=dict)
    stage: sa.Table | None = None


class Tables:
    """The tables of one writer's database: reflection cached per table, and the DDL
    that creates or evolves them. Called from the writer's thread only."""

    def __init__(self, settings: SinkSettings, dialect: Dialect) -> None:
        self.settings = settings
        self.dialect = dialect
        self._quote = settings.quote_identifiers
        self._cache: dict[TableName, TableInfo] = {}

    def clear(self) -> None:
        """Forget every table (after an error: a table may have changed)."""
        self._cache.clear()

    def info(self, conn: Connection, table: TableName) -> TableInfo | None:
        """The table as reflected (cached), None when it does not exist."""
        info = self._cache.get(table)
        if info is not None:
            return info
        try:
            info = self._reflect(conn, table)
        finally:
            if conn.in_transaction():
                conn.rollback()  # reflection began a transaction; end it
        if info is not None:
            self._cache[table] = info
        return info

    def _reflect(self, conn: Connection, table: TableName) -> TableInfo | None:
        inspector = sa.inspect(conn)
        name = table.name
        if not inspector.has_table(name, schema=table.schema):
            if not self.settings.quote_identifiers and inspector.has_table(
                name.lower(), schema=table.schema
            ):
                name = name.lower()
            else:
                return None
        columns = inspector.get_columns(name, schema=table.schema)
        key = inspector.get_pk_constraint(name, schema=table.schema) or {}
        for c in columns:
            c["name"] = reflected_name(c["name"], self.dialect)
        return TableInfo(
            {c["name"]: c["type"] for c in columns},
            {c["name"]: bool(c.get("nullable", True)) for c in columns},
            tuple(key.get("constrained_columns") or ()),
        )

    def sa_table(self, table: TableName, columns: Sequence[sa.Column]) -> sa.Table:
        """A SQLAlchemy Table of `columns`, quoted as `quote.sql.identifiers` says."""
        return sa.Table(
            table.name,
            sa.MetaData(),
            *columns,
            schema=table.schema,
            quote=self._quote,
            quote_schema=self._quote,
        )

    def create(self, conn: Connection, table: TableName, plan: FieldsPlan) -> None:
        """CREATE TABLE for `plan` (`auto.create`); a lost race re-reads the table."""
        if not self.settings.auto_create:
            raise TableSchemaError(str(table), "it does not exist and auto.create is disabled")
        schemaless = [c.name for c in plan.columns if c.schema is None]
        if schemaless:
            raise TableSchemaError(
                str(table),
                f"it does not exist, and the fields {schemaless} have no schema to create "
                "it from (schemaless values need an existing table)",
            )
        columns = [self.new_column(c) for c in plan.columns]
        sa_table = self.sa_table(table, columns)
        try:
            with conn.begin():
                sa_table.create(conn)
        except sa.exc.DBAPIError:
            self._cache.pop(table, None)
            if self.info(conn, table) is None:  # not a lost race: a real error
                raise

    def new_column(self, c: Column, *, evolve: bool = False) -> sa.Column:
        """The column a field gets in a new table, or added to one (nullable, no key)."""
        assert c.schema is not None
        return sa.Column(
            c.name,
            column_type(c.schema, self.dialect.name, key=c.key, where=f"field {c.name!r}"),
            primary_key=c.key and not evolve,
            autoincrement=False,
            nullable=True if evolve else c.nullable,
            quote=self._quote,
        )

    def evolve(
        self, conn: Connection, table: TableName, info: TableInfo, missing: list[Column]
    ) -> None:
        """ALTER TABLE ADD each missing column (`auto.evolve`), refusing what it may not
        add; a lost race re-reads the table."""
        self._check_evolution(table, missing)
        preparer = self.dialect.identifier_preparer
        sa_table = self.sa_table(table, [])
        for c in missing:
            column = self.new_column(c, evolve=True)
            ddl = (
                f"ALTER TABLE {preparer.format_table(sa_table)} ADD COLUMN "
                f"{preparer.format_column(column)} {column.type.compile(dialect=self.dialect)}"
            )
            try:
                with conn.begin():
                    conn.exec_driver_sql(ddl)
            except sa.exc.DBAPIError:
                self._cache.pop(table, None)
                again = self.info(conn, table)
                if again is None or again.find(c.name) is None:  # not a lost race
                    raise
        self._cache.pop(table, None)

    def _check_evolution(self, table: TableName, missing: list[Column]) -> None:
        """TableSchemaError unless every missing column may be added."""
        names = [c.name for c in missing]
        for c in missing:
            if c.schema is None:
                raise TableSchemaError(
                    str(table),
                    f"it lacks the column {c.name!r}, and a schemaless value "
                    "gives no type to add it with",
                )
        if not self.settings.auto_evolve:
            raise TableSchemaError(
                str(table), f"it lacks the columns {names} and auto.evolve is disabled"
            )
        for c in missing:
            if c.key:
                raise TableSchemaError(
                    str(table),
                    f"it lacks the key column {c.name!r}; auto.evolve never "
                    "changes the primary key",
                )
            if not c.schema.optional and c.schema.default is None:
                raise TableSchemaError(
                    str(table),
                    f"cannot add the missing field {c.name!r}: it is neither "
                    "optional nor has a default value",
                )
