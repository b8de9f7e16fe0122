"""IcebergSink's configuration: the keys of Apache Iceberg's Kafka Connect sink
(`org.apache.iceberg.connect.IcebergSinkConnector`), plus Tabular's CDC keys.

Apache's sink is append-only; its predecessor, Tabular's, added
`iceberg.tables.upsert-mode-enabled` and `iceberg.tables.cdc-field`, which we take so a
CDC topic can keep a table equal to its source. `iceberg.catalog.*` keys go to
pyiceberg's `load_catalog` without the prefix (`type`, `uri`, `warehouse`, `s3.*`, …);
the catalog is an SQL one by default, SQLite in the warehouse directory, so a config
that names only a `file://` warehouse runs as it is.

Per-table keys are Apache's: `iceberg.table.<table>.<property>`, the table's full name
(dots and all) between the prefix and the last dot, the property one of a fixed set
(`TABLE_PROPERTIES`: route-regex, id-columns, partition-by, commit-branch); the last
three fall back to `iceberg.tables.default-*`. `IcebergSettings.table(name)` gives
a table's effective settings. Where we refuse what Apache's sink takes (it reads
these keys lazily, so its mistakes surface at the first record, or never):
- with static routing, a per-table key of a table missing from `iceberg.tables` (a
  typo there routed records nowhere, silently);
- a `route-regex` that does not compile (Python's `re`, whose syntax is Java's for
  the usual constructs; Apache failed the task at the first record);
- a `route-regex` without `iceberg.tables.route-field` (Apache then sends every record
  to every table, the regex unused).

`parse(props)` returns `IcebergSettings`, raising ConfigError for the first mistake;
`validate(props)` reports every mistake, one line each, on the key it concerns.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from connect.api import ConfigDef, ConfigError, ConfigType, ConfigValue, Importance, at_least

__all__ = ["CONFIG", "IcebergSettings", "TableSettings", "parse", "parse_partition_by",
           "validate"]

TABLES = "iceberg.tables"
DYNAMIC = "iceberg.tables.dynamic-enabled"
ROUTE_FIELD = "iceberg.tables.route-field"
AUTO_CREATE = "iceberg.tables.auto-create-enabled"
EVOLVE = "iceberg.tables.evolve-schema-enabled"
ID_COLUMNS = "iceberg.tables.default-id-columns"
PARTITION_BY = "iceberg.tables.default-partition-by"
COMMIT_BRANCH = "iceberg.tables.default-commit-branch"
#: `iceberg.table.<table>.<property>`: per-table keys (Apache's), and their properties.
TABLE_PREFIX = "iceberg.table."
ROUTE_REGEX = "route-regex"
TABLE_ID_COLUMNS = "id-columns"
TABLE_PARTITION_BY = "partition-by"
TABLE_COMMIT_BRANCH = "commit-branch"
TABLE_PROPERTIES = (ROUTE_REGEX, TABLE_ID_COLUMNS, TABLE_PARTITION_BY, TABLE_COMMIT_BRANCH)
UPSERT = "iceberg.tables.upsert-mode-enabled"
CDC_FIELD = "iceberg.tables.cdc-field"
FORCE_OPTIONAL = "iceberg.tables.schema-force-optional"
CASE_INSENSITIVE = "iceberg.tables.schema-case-insensitive"
AUTO_CREATE_PROPS = "iceberg.tables.auto-create-props."
WRITE_PROPS = "iceberg.tables.write-props."
CATALOG_NAME = "iceberg.catalog"
CATALOG_PREFIX = "iceberg.catalog."
COMMIT_INTERVAL_MS = "iceberg.control.commit.interval-ms"
MAX_BUFFERED = "iceberg.commit.max-buffered-records"
NAME = "name"

_TABLES = "Tables"
_CATALOG = "Catalog"
_COMMIT = "Commit"
#: Catalog types pyiceberg implements (`type`); Java's `hadoop` has no pyiceberg peer.
CATALOG_TYPES = ("sql", "rest", "hive", "glue", "dynamodb", "bigquery", "in-memory")
#: Transforms of `default-partition-by`: name(column) or name(n, column).
_PART = re.compile(r"^\s*(?:(\w+)\s*\(\s*(?:(\d+)\s*,\s*)?([\w.]+)\s*\)|([\w.]+))\s*$")
_TRANSFORMS = ("identity", "year", "years", "month", "months", "day", "days", "hour",
               "hours", "bucket", "truncate")

CONFIG = (
    ConfigDef()
    .define(TABLES, ConfigType.LIST, "", None, Importance.HIGH,
            "Comma list of target tables (namespace.table); every record goes to each "
            "unless iceberg.tables.route-field picks one.", group=_TABLES)
    .define(DYNAMIC, ConfigType.BOOLEAN, False, None, Importance.MEDIUM,
            "Route each record to the table named by its route field (lower-cased).",
            group=_TABLES)
    .define(ROUTE_FIELD, ConfigType.STRING, None, None, Importance.MEDIUM,
            "Record field naming the table (dynamic routing), or matched whole against "
            "each table's iceberg.table.<table>.route-regex (static routing; a table "
            "without one: against its full or last name, lowercased).", group=_TABLES)
    .define(AUTO_CREATE, ConfigType.BOOLEAN, False, None, Importance.MEDIUM,
            "Create a missing table (and namespace) from the first records' schema.",
            group=_TABLES)
    .define(EVOLVE, ConfigType.BOOLEAN, False, None, Importance.MEDIUM,
            "Add new columns and widen types (int→long, float→double, wider decimals) as "
            "records bring them; otherwise extra fields are dropped.", group=_TABLES)
    .define(ID_COLUMNS, ConfigType.LIST, "", None, Importance.MEDIUM,
            "Identifier columns of auto-created tables (the keys of upsert mode).",
            group=_TABLES)
    .define(PARTITION_BY, ConfigType.LIST, "", None, Importance.LOW,
            "Partition spec of auto-created tables, e.g. day(ts),bucket(16,id).",
            group=_TABLES)
    .define(COMMIT_BRANCH, ConfigType.STRING, None, None, Importance.MEDIUM,
            "Branch the commits go to (created from main's current snapshot when "
            "missing); default: main.", group=_TABLES)
    .define(TABLE_PREFIX + "<table>.*", ConfigType.STRING, None, None, Importance.MEDIUM,
            "Per-table settings, the table's full name after the prefix: route-regex "
            "(static routing: the records whose route field matches it whole), "
            "id-columns, partition-by and commit-branch (over the iceberg.tables."
            "default-* ones).", group=_TABLES)
    .define(UPSERT, ConfigType.BOOLEAN, False, None, Importance.MEDIUM,
            "Tabular's upsert mode: apply inserts, updates and deletes by the identifier "
            "columns (Debezium envelopes, or ExtractNewRecordState's __op/__deleted).",
            group=_TABLES)
    .define(CDC_FIELD, ConfigType.STRING, None, None, Importance.LOW,
            "Field holding the operation (c/r/u/d or I/U/D) in upsert mode; default: "
            "Debezium's envelope op, else __op / __deleted.", group=_TABLES)
    .define(FORCE_OPTIONAL, ConfigType.BOOLEAN, False, None, Importance.LOW,
            "Columns of created tables and added columns are optional, whatever the "
            "records' schema says (identifier columns stay required, Iceberg's rule).",
            group=_TABLES)
    .define(CASE_INSENSITIVE, ConfigType.BOOLEAN, False, None, Importance.LOW,
            "Match record fields to table columns whatever their case (ID writes id).",
            group=_TABLES)
    .define(AUTO_CREATE_PROPS + "*", ConfigType.STRING, None, None, Importance.LOW,
            "Table properties of auto-created tables, without the prefix "
            "(e.g. write.parquet.compression-codec).", group=_TABLES)
    .define(WRITE_PROPS + "*", ConfigType.STRING, None, None, Importance.LOW,
            "Properties of this sink's data files, over the table's own, without the "
            "prefix (write.parquet.*, write.target-file-size-bytes).", group=_TABLES)
    .define(CATALOG_NAME, ConfigType.STRING, "iceberg", None, Importance.LOW,
            "Catalog name.", group=_CATALOG)
    .define(CATALOG_PREFIX + "*", ConfigType.STRING, None, None, Importance.HIGH,
            "The catalog's properties, handed to pyiceberg's load_catalog without the "
            "prefix (type, uri, warehouse, s3.*, …).", group=_CATALOG)
    .define(COMMIT_INTERVAL_MS, ConfigType.LONG, 300_000, at_least(1), Importance.MEDIUM,
            "How often buffered records are committed to their tables (one snapshot per "
            "table per commit).", group=_COMMIT)
    .define(MAX_BUFFERED, ConfigType.LONG, 1_000_000, at_least(1), Importance.LOW,
            "Commit sooner once this many records wait (bounds the task's memory).",
            group=_COMMIT)
)


@dataclass(frozen=True, slots=True)
class TableSettings:
    """One table's effective settings: its `iceberg.table.<table>.*` keys over the
    `iceberg.tables.default-*` ones."""

    #: Static routing: the route field's values this regex matches whole go here; None:
    #: the values equal (lowercased) to the table's full or last name (ours).
    route_regex: re.Pattern[str] | None
    id_columns: tuple[str, ...]
    partition_by: tuple[tuple[str, int | None, str], ...]
    #: None: main.
    commit_branch: str | None


@dataclass(frozen=True, slots=True)
class IcebergSettings:
    connector: str
    tables: tuple[str, ...]
    dynamic: bool
    route_field: str | None
    auto_create: bool
    evolve: bool
    id_columns: tuple[str, ...]
    partition_by: tuple[tuple[str, int | None, str], ...]
    upsert: bool
    cdc_field: str | None
    catalog_name: str
    #: pyiceberg catalog properties (`iceberg.catalog.` stripped), defaults filled in.
    catalog: dict[str, str] = field(default_factory=dict)
    commit_interval_ms: int = 300_000
    max_buffered: int = 1_000_000
    force_optional: bool = False
    case_insensitive: bool = False
    #: `iceberg.tables.auto-create-props.*` and `…write-props.*`, prefix stripped.
    auto_create_props: dict[str, str] = field(default_factory=dict)
    write_props: dict[str, str] = field(default_factory=dict)
    commit_branch: str | None = None
    #: `iceberg.table.<table>.<property>` as given: table → property → value.
    per_table: dict[str, dict[str, str]] = field(default_factory=dict)

    def table(self, name: str) -> TableSettings:
        """`name`'s effective settings (the keys were checked by `parse`)."""
        own = self.per_table.get(name, {})
        regex = own.get(ROUTE_REGEX)
        ids = own.get(TABLE_ID_COLUMNS)
        parts = own.get(TABLE_PARTITION_BY)
        key = TABLE_PREFIX + name + "." + TABLE_PARTITION_BY
        return TableSettings(
            route_regex=None if regex is None else re.compile(regex),
            id_columns=self.id_columns if ids is None else _names(ids.split(",")),
            partition_by=(self.partition_by if parts is None
                          else parse_partition_by(parts.split(","), key=key)),
            commit_branch=own.get(TABLE_COMMIT_BRANCH, self.commit_branch) or None,
        )


def _names(items: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    return tuple(x.strip() for x in items if x.strip())


def table_keys(props: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """The `iceberg.table.<table>.<property>` keys, table → property → value. The
    property is what follows the last dot, so a table's name may hold dots
    (`iceberg.table.db.events.route-regex`); keys of other properties are not ours
    (Apache's sink ignores them too)."""
    out: dict[str, dict[str, str]] = {}
    for key, value in props.items():
        if not key.startswith(TABLE_PREFIX):
            continue
        table, _, prop = key[len(TABLE_PREFIX):].rpartition(".")
        if table and prop in TABLE_PROPERTIES:
            out.setdefault(table, {})[prop] = str(value)
    return out


def parse_partition_by(
    items: list[str] | tuple[str, ...], *, key: str = PARTITION_BY,
) -> tuple[tuple[str, int | None, str], ...]:
    """`day(ts)`, `bucket(16,id)`, `id` → (transform, argument, column) triples. The
    list was split on commas, so `bucket(16` and `id)` are joined back first. `key`:
    the key a mistake is reported on."""
    joined: list[str] = []
    for item in items:
        if joined and joined[-1].count("(") > joined[-1].count(")"):
            joined[-1] += "," + item
        else:
            joined.append(item)
    out = []
    for text in joined:
        m = _PART.match(text)
        if m is None or (m.group(1) and m.group(1).lower() not in _TRANSFORMS):
            raise ConfigError(key, text, f"not a transform of {', '.join(_TRANSFORMS)}")
        if m.group(4):
            out.append(("identity", None, m.group(4)))
            continue
        name, arg = m.group(1).lower().rstrip("s"), m.group(2)
        if name in ("bucket", "truncate") and arg is None:
            raise ConfigError(key, text, f"{name} takes a width: {name}(N, column)")
        out.append((name, int(arg) if arg else None, m.group(3)))
    return tuple(out)


def _prefixed(props: Mapping[str, Any], prefix: str) -> dict[str, str]:
    return {k[len(prefix):]: str(v) for k, v in props.items()
            if k.startswith(prefix) and len(k) > len(prefix)}


def _catalog(props: Mapping[str, Any], name: str) -> dict[str, str]:
    out = {
        k[len(CATALOG_PREFIX):]: str(v)
        for k, v in props.items()
        if k.startswith(CATALOG_PREFIX) and k != CATALOG_NAME
    }
    kind = out.get("type", "sql" if "catalog-impl" not in out else "")
    if "catalog-impl" in out or kind == "hadoop":
        raise ConfigError(
            CATALOG_PREFIX + ("type" if kind == "hadoop" else "catalog-impl"),
            kind or out.get("catalog-impl"),
            "pyiceberg has no Hadoop catalog nor Java catalog classes: use type=sql "
            "(the default, SQLite in the warehouse), rest, hive or glue",
        )
    if kind not in CATALOG_TYPES:
        raise ConfigError(CATALOG_PREFIX + "type", kind, f"not one of {', '.join(CATALOG_TYPES)}")
    out["type"] = kind
    warehouse = out.get("warehouse")
    if kind == "sql" and not out.get("uri"):
        if not warehouse:
            raise ConfigError(CATALOG_PREFIX + "warehouse", None,
                              "an SQL catalog without a uri keeps SQLite in the warehouse")
        parsed = urlparse(warehouse)
        if parsed.scheme not in ("", "file"):
            raise ConfigError(CATALOG_PREFIX + "uri", None,
                              f"a {parsed.scheme}:// warehouse needs the catalog's uri "
                              "(SQLite lives on a local disk)")
        root = Path(parsed.path if parsed.scheme else warehouse)
        out["uri"] = f"sqlite:///{root / 'catalog.db'}"
    if warehouse and urlparse(warehouse).scheme == "":
        out["warehouse"] = Path(warehouse).absolute().as_uri()
    return out


def _problems(c: dict[str, Any], props: Mapping[str, Any]) -> list[ConfigError]:
    """Every rule between keys that `c` breaks, each on the key it names."""
    problems = []
    tables = [t.strip() for t in c[TABLES] if t.strip()]
    if c[DYNAMIC] and tables:
        problems.append(ConfigError(TABLES, ",".join(tables), f"not with {DYNAMIC}=true "
                                    "(tables come from the route field)"))
    if not c[DYNAMIC] and not tables:
        problems.append(ConfigError(TABLES, None, f"list the tables, or set {DYNAMIC}=true"))
    if c[DYNAMIC] and not c[ROUTE_FIELD]:
        problems.append(ConfigError(ROUTE_FIELD, None, f"{DYNAMIC}=true routes by this field"))
    bad = [t for t in tables if not re.fullmatch(r"[\w-]+(\.[\w-]+)+", t)]
    if bad:
        problems.append(ConfigError(TABLES, bad[0], "a table is namespace.name"))
    for check in (lambda: parse_partition_by(c[PARTITION_BY]),
                  lambda: _catalog(props, c[CATALOG_NAME])):
        try:
            check()
        except ConfigError as exc:
            problems.append(exc)
    problems.extend(_table_problems(c, table_keys(props), tables))
    return problems


def _table_problems(c: dict[str, Any], per_table: dict[str, dict[str, str]],
                    tables: list[str]) -> list[ConfigError]:
    """The `iceberg.table.<table>.*` keys' mistakes (the module docstring says which
    of them Apache's sink takes)."""
    problems = []
    for table, own in per_table.items():
        def key(prop: str, table: str = table) -> str:
            return TABLE_PREFIX + table + "." + prop

        if not c[DYNAMIC] and table not in tables:
            prop = next(iter(own))
            problems.append(ConfigError(key(prop), own[prop], f"{table} is not one of "
                                        f"{TABLES} ({', '.join(tables)})"))
            continue
        regex = own.get(ROUTE_REGEX)
        if regex is not None:
            try:
                re.compile(regex)
            except re.error as exc:
                problems.append(ConfigError(key(ROUTE_REGEX), regex,
                                            f"not a regular expression: {exc}"))
            if not c[DYNAMIC] and not c[ROUTE_FIELD]:
                problems.append(ConfigError(key(ROUTE_REGEX), regex,
                                            f"matches the field {ROUTE_FIELD} names: set it"))
        if TABLE_PARTITION_BY in own:
            try:
                parse_partition_by(own[TABLE_PARTITION_BY].split(","),
                                   key=key(TABLE_PARTITION_BY))
            except ConfigError as exc:
                problems.append(exc)
    return problems


def parse(props: Mapping[str, Any]) -> IcebergSettings:
    c = CONFIG.parse(props)
    problems = _problems(c, props)
    if problems:
        raise problems[0]
    return IcebergSettings(
        connector=str(props.get(NAME, "iceberg")),
        tables=tuple(t.strip() for t in c[TABLES] if t.strip()),
        dynamic=c[DYNAMIC],
        route_field=c[ROUTE_FIELD] or None,
        auto_create=c[AUTO_CREATE],
        evolve=c[EVOLVE],
        id_columns=_names(c[ID_COLUMNS]),
        partition_by=parse_partition_by(c[PARTITION_BY]),
        upsert=c[UPSERT],
        cdc_field=c[CDC_FIELD] or None,
        catalog_name=c[CATALOG_NAME],
        catalog=_catalog(props, c[CATALOG_NAME]),
        commit_interval_ms=c[COMMIT_INTERVAL_MS],
        max_buffered=c[MAX_BUFFERED],
        force_optional=c[FORCE_OPTIONAL],
        case_insensitive=c[CASE_INSENSITIVE],
        auto_create_props=_prefixed(props, AUTO_CREATE_PROPS),
        write_props=_prefixed(props, WRITE_PROPS),
        commit_branch=c[COMMIT_BRANCH] or None,
        per_table=table_keys(props),
    )


def validate(props: Mapping[str, Any]) -> list[ConfigValue]:
    """One result per key, every mistake a line of its own: the per-key checks first,
    then every rule between keys (one broken rule does not hide another)."""
    results = CONFIG.validate(props)
    if any(r.errors for r in results):
        return results
    by_name = {r.name: r for r in results}
    for exc in _problems(CONFIG.parse(props), props):
        result = by_name.get(exc.name)
        if result is None:
            result = by_name[exc.name] = ConfigValue(exc.name)
            results.append(result)
        result.errors.append(str(exc))
    return results
