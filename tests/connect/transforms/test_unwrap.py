"""ExtractNewRecordState (Debezium's "unwrap"): change events with and without a
schema, every delete handling mode, metadata fields and headers, pass-through of
records that are not change events, config errors, and use through the plugin
aliases and a TransformChain."""

from __future__ import annotations

from typing import Any

import pytest

from connect.api import (
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    ConfigError,
    DataError,
    Headers,
    Schema,
    Struct,
)
from connect.plugins import Plugins
from connect.transforms import TransformChain
from connect.transforms.unwrap import ExtractNewRecordState

from .conftest import configured

ROW = Schema.struct(
    [
        ("id", INT32_SCHEMA),
        ("name", OPTIONAL_STRING_SCHEMA),
        ("region", OPTIONAL_STRING_SCHEMA.with_(default="eu")),
    ],
    name="shop.public.orders.Value",
    optional=True,
)
SOURCE = Schema.struct(
    [
        ("version", STRING_SCHEMA),
        ("connector", STRING_SCHEMA),
        ("name", STRING_SCHEMA),
        ("ts_ms", INT64_SCHEMA),
        ("snapshot", OPTIONAL_STRING_SCHEMA),
        ("db", STRING_SCHEMA),
        ("schema", STRING_SCHEMA),
        ("table", STRING_SCHEMA),
        ("txId", OPTIONAL_INT64_SCHEMA),
        ("lsn", OPTIONAL_INT64_SCHEMA),
    ],
    name="io.debezium.connector.postgresql.Source",
)
ENVELOPE = Schema.struct(
    [
        ("before", ROW),
        ("after", ROW),
        ("source", SOURCE),
        ("op", STRING_SCHEMA),
        ("ts_ms", OPTIONAL_INT64_SCHEMA),
    ],
    name="shop.public.orders.Envelope",
    version=1,
)
KEY = Schema.struct([("id", INT32_SCHEMA)], name="shop.public.orders.Key")
HEARTBEAT = Schema.struct([("ts_ms", INT64_SCHEMA)], name="io.debezium.connector.common.Heartbeat")

OLD = {"id": 1, "name": "old", "region": "us"}
NEW = {"id": 1, "name": "new", "region": "us"}
SOURCE_VALUES = {
    "version": "0.1.0",
    "connector": "postgresql",
    "name": "shop",
    "ts_ms": 1_700_000_000_000,
    "snapshot": "false",
    "db": "shop",
    "schema": "public",
    "table": "orders",
    "txId": 771,
    "lsn": 24_023_128,
}


def event(op: str, before: dict | None = None, after: dict | None = None) -> Struct:
    return Struct(
        ENVELOPE,
        {
            "before": None if before is None else Struct(ROW, before),
            "after": None if after is None else Struct(ROW, after),
            "source": Struct(SOURCE, SOURCE_VALUES),
            "op": op,
            "ts_ms": 1_700_000_000_123,
        },
    )


def plain(op: str, before: dict | None = None, after: dict | None = None) -> dict[str, Any]:
    return {
        "before": before,
        "after": after,
        "source": dict(SOURCE_VALUES),
        "op": op,
        "ts_ms": 1_700_000_000_123,
    }


EVENTS = {
    "c": ("c", None, NEW),
    "r": ("r", None, NEW),
    "u": ("u", OLD, NEW),
    "d": ("d", OLD, None),
    "t": ("t", None, None),
}


@pytest.fixture
def change(sink):
    """A sink record carrying the change event `op` (with a schema unless schemaless)."""

    def make(op: str, *, schemaless: bool = False, **fields: Any):
        code, before, after = EVENTS[op]
        if schemaless:
            return sink(
                topic="shop.public.orders",
                key={"id": 1},
                value=plain(code, before, after),
                **fields,
            )
        return sink(
            topic="shop.public.orders",
            key_schema=KEY,
            key=Struct(KEY, {"id": 1}),
            value_schema=ENVELOPE,
            value=event(code, before, after),
            **fields,
        )

    return make


@pytest.fixture
def tombstone(sink):
    return sink(topic="shop.public.orders", key_schema=KEY, key=Struct(KEY, {"id": 1}))


def unwrap(**config: Any) -> ExtractNewRecordState:
    return configured(ExtractNewRecordState, **config)  # type: ignore[return-value]


# ------------------------------------------------------------- row state


@pytest.mark.parametrize("op", ["c", "r", "u"])
def test_upserts_become_the_after_row(change, op):
    record = change(op, headers=Headers([("trace", "x")]))
    out = unwrap().apply(record)
    assert out.value.to_dict() == NEW
    # The after field's schema, made required: a row always has a value.
    assert out.value_schema == ROW.with_(optional=False)
    assert out.value_schema.name == "shop.public.orders.Value"
    out.value.validate()
    assert (out.topic, out.key, out.key_schema) == (record.topic, record.key, KEY)
    assert out.kafka_offset == record.kafka_offset
    assert list(out.headers) == list(record.headers)


@pytest.mark.parametrize("op", ["c", "r", "u"])
def test_schemaless_upserts_become_the_after_row(change, op):
    out = unwrap().apply(change(op, schemaless=True))
    assert out.value == NEW and out.value_schema is None


def test_truncates_are_dropped(change):
    for mode in ("rewrite", "rewrite-with-tombstone", "tombstone"):
        xf = unwrap(delete__tombstone__handling__mode=mode)
        assert xf.apply(change("t")) is None
        assert xf.apply(change("t", schemaless=True)) is None
    assert (
        unwrap(delete__handling__mode="none", drop__tombstones="false").apply(change("t")) is None
    )


@pytest.mark.parametrize("schemaless", [False, True])
def test_truncates_pass_unchanged_when_kept(change, schemaless):
    """`truncate.handling.mode=keep` hands the truncate event to a sink that can empty
    its table (JdbcSink's truncate.enabled); every other event unwraps as before."""
    xf = unwrap(truncate__handling__mode="keep", delete__handling__mode="none")
    truncate = change("t", schemaless=schemaless)
    assert xf.apply(truncate) is truncate
    row = xf.apply(change("u", schemaless=schemaless)).value
    assert (row if schemaless else row.to_dict()) == NEW
    assert xf.apply(change("d", schemaless=schemaless)).value is None


def test_null_column_reads_as_its_default_unless_told_otherwise(sink):
    record = sink(value_schema=ENVELOPE, value=event("c", after={"id": 2, "region": None}))
    assert unwrap().apply(record).value.to_dict() == {"id": 2, "name": None, "region": "eu"}
    kept = unwrap(replace__null__with__default="false").apply(record)
    assert kept.value.to_dict() == {"id": 2, "name": None, "region": None}


def test_derived_schemas_are_cached_per_envelope_schema(change):
    xf = unwrap(add__fields="op,table")
    first, second = xf.apply(change("c")), xf.apply(change("u"))
    assert first.value_schema is second.value_schema
    # An equal schema built anew finds the same entry.
    rebuilt = Schema.struct([(f.name, f.schema) for f in ENVELOPE.fields], name=ENVELOPE.name)
    other = change("c")
    other.value_schema = rebuilt
    other.value = Struct(
        rebuilt, {f.name: event("c", after=NEW).get(f.name) for f in rebuilt.fields}
    )
    assert xf.apply(other).value.to_dict()["__op"] == "c"
    # Reconfiguring forgets what was derived under the old settings.
    xf.configure({"add.fields": "lsn"})
    assert [f.name for f in xf.apply(change("c")).value_schema.fields][-1] == "__lsn"


# ---------------------------------------------------------------- deletes

# config → (what the delete becomes, whether the tombstone after it is kept)
MODES = [
    ({}, "dropped", False),
    ({"drop.tombstones": "false"}, "dropped", True),
    ({"delete.handling.mode": "drop"}, "dropped", False),
    ({"delete.handling.mode": "none"}, "null", False),
    ({"delete.handling.mode": "none", "drop.tombstones": "false"}, "null", True),
    ({"delete.handling.mode": "rewrite"}, "rewritten", False),
    ({"delete.handling.mode": "REWRITE", "drop.tombstones": "false"}, "rewritten", True),
    ({"delete.tombstone.handling.mode": "drop"}, "dropped", False),
    ({"delete.tombstone.handling.mode": "tombstone"}, "null", False),
    ({"delete.tombstone.handling.mode": "rewrite"}, "rewritten", False),
    ({"delete.tombstone.handling.mode": "rewrite-with-tombstone"}, "rewritten", True),
    ({"delete.tombstone.handling.mode": "delete-to-tombstone"}, "tombstone", False),
    # The newer key wins over the older pair.
    (
        {
            "delete.tombstone.handling.mode": "drop",
            "delete.handling.mode": "rewrite",
            "drop.tombstones": "false",
        },
        "dropped",
        False,
    ),
    (
        {"delete.tombstone.handling.mode": "rewrite-with-tombstone", "drop.tombstones": "true"},
        "rewritten",
        True,
    ),
]


def _kind(out: Any) -> str:
    if out is None:
        return "dropped"
    if out.value is None:
        return "tombstone" if out.value_schema is None else "null"
    return "rewritten"


@pytest.mark.parametrize(("config", "delete", "keeps_tombstone"), MODES)
@pytest.mark.parametrize("schemaless", [False, True])
def test_delete_handling_modes(change, tombstone, config, delete, keeps_tombstone, schemaless):
    xf = ExtractNewRecordState()
    xf.configure(config)
    out = xf.apply(change("d", schemaless=schemaless))
    expected = delete if not (schemaless and delete == "null") else "tombstone"
    assert _kind(out) == expected
    if out is not None:
        assert out.key == change("d", schemaless=schemaless).key  # a delete keeps its key
    assert (xf.apply(tombstone) is tombstone) is keeps_tombstone
    if not keeps_tombstone:
        assert xf.apply(tombstone) is None
    # Upserts are unwrapped whatever the mode.
    assert xf.apply(change("c", schemaless=schemaless)) is not None


def test_null_delete_keeps_the_row_schema(change):
    out = unwrap(delete__tombstone__handling__mode="tombstone").apply(change("d"))
    assert out.value is None and out.value_schema.optional
    assert out.value_schema.name == "shop.public.orders.Value"
    true_tombstone = unwrap(delete__tombstone__handling__mode="delete-to-tombstone")
    out = true_tombstone.apply(change("d"))
    assert out.value is None and out.value_schema is None and out.key == Struct(KEY, {"id": 1})


@pytest.mark.parametrize(
    "config", [{"delete.handling.mode": "rewrite"}, {"delete.tombstone.handling.mode": "rewrite"}]
)
def test_rewrite_marks_every_row(change, config):
    xf = ExtractNewRecordState()
    xf.configure(config)
    deleted = xf.apply(change("d"))
    assert deleted.value.to_dict() == {**OLD, "__deleted": "true"}  # the before row
    created = xf.apply(change("c"))
    assert created.value.to_dict() == {**NEW, "__deleted": "false"}
    assert created.value_schema is deleted.value_schema
    assert created.value_schema.field("__deleted").schema == OPTIONAL_STRING_SCHEMA
    deleted.value.validate()
    assert xf.apply(change("d", schemaless=True)).value == {**OLD, "__deleted": "true"}
    assert xf.apply(change("u", schemaless=True)).value == {**NEW, "__deleted": "false"}


def test_rewrite_of_a_delete_without_before_image(sink):
    xf = unwrap(delete__handling__mode="rewrite")
    out = xf.apply(sink(value_schema=ENVELOPE, value=event("d")))
    assert out.value is None and out.value_schema.optional


# ---------------------------------------------------------------- metadata


def test_add_fields_from_envelope_and_source(change):
    xf = unwrap(add__fields="op,table,lsn,source.ts_ms,ts_ms,db")
    out = xf.apply(change("u"))
    assert out.value.to_dict() == {
        **NEW,
        "__op": "u",
        "__table": "orders",
        "__lsn": 24_023_128,
        "__source_ts_ms": 1_700_000_000_000,
        "__ts_ms": 1_700_000_000_123,
        "__db": "shop",
    }
    schema = out.value_schema
    assert schema.field("__op").schema == OPTIONAL_STRING_SCHEMA  # added fields are optional
    assert schema.field("__source_ts_ms").schema == OPTIONAL_INT64_SCHEMA
    out.value.validate()
    assert xf.apply(change("u", schemaless=True)).value == out.value.to_dict()


def test_add_fields_prefix_rename_and_missing_fields(change):
    xf = unwrap(
        add__fields="op,source.ts_ms:event_time,transaction.id,xmin",
        add__fields__prefix="cdc_",
    )
    out = xf.apply(change("c"))
    # The envelope has no transaction block and its source no xmin: skipped.
    assert out.value.to_dict() == {**NEW, "cdc_op": "c", "event_time": 1_700_000_000_000}
    assert xf.apply(change("c", schemaless=True)).value == out.value.to_dict()


def test_add_fields_on_rewritten_deletes(change):
    xf = unwrap(delete__handling__mode="rewrite", add__fields="op,table")
    out = xf.apply(change("d"))
    assert [f.name for f in out.value_schema.fields] == [
        "id",
        "name",
        "region",
        "__deleted",
        "__op",
        "__table",
    ]
    assert out.value.to_dict() == {**OLD, "__deleted": "true", "__op": "d", "__table": "orders"}


@pytest.mark.parametrize("schemaless", [False, True])
def test_add_headers(change, schemaless):
    xf = unwrap(add__headers="op,source.ts_ms,table", add__headers__prefix="dbz.")
    out = xf.apply(change("u", schemaless=schemaless, headers=Headers([("trace", "x")])))
    headers = {h.key: h.value for h in out.headers}
    assert headers == {
        "trace": "x",
        "dbz.op": "u",
        "dbz.source_ts_ms": 1_700_000_000_000,
        "dbz.table": "orders",
    }
    if not schemaless:
        assert out.headers.last("dbz.op").schema == OPTIONAL_STRING_SCHEMA
    # A delete turned into a null value still says what it was.
    deleted = unwrap(add__headers="op", delete__tombstone__handling__mode="tombstone").apply(
        change("d", schemaless=schemaless)
    )
    assert deleted.value is None and deleted.headers.last("__op").value == "d"


def test_headers_default_prefix(change):
    out = unwrap(add__headers="op").apply(change("c"))
    assert [(h.key, h.value) for h in out.headers] == [("__op", "c")]


def test_route_by_field(change):
    xf = unwrap(route__by__field="region", delete__handling__mode="rewrite")
    assert xf.apply(change("c")).topic == "us"
    assert xf.apply(change("d")).topic == "us"  # the before row, for deletes
    assert xf.apply(change("c", schemaless=True)).topic == "us"
    assert unwrap(route__by__field="missing").apply(change("c")).topic == "shop.public.orders"


def test_drop_fields_named_by_a_header(change):
    xf = unwrap(drop__fields__header__name="drop", drop__fields__from__key="true")
    record = change("c", headers=Headers([("drop", ["name", "id"])]))
    out = xf.apply(record)
    # id is required: kept, so the schema stays compatible; name is optional: dropped.
    assert out.value.to_dict() == {"id": 1, "region": "us"}
    assert out.key == Struct(KEY, {"id": 1})
    loose = unwrap(
        drop__fields__header__name="drop",
        drop__fields__keep__schema__compatible="false",
    )
    assert loose.apply(record).value.to_dict() == {"region": "us"}
    assert loose.apply(
        change("c", schemaless=True, headers=Headers([("drop", "name,id")]))
    ).value == {"region": "us"}
    assert xf.apply(change("c")).value.to_dict() == NEW  # no header, nothing dropped


# ------------------------------------------------------------ pass-through


def test_records_that_are_not_change_events_pass_unchanged(sink):
    schema_change = Schema.struct(
        [("source", SOURCE), ("ts_ms", INT64_SCHEMA), ("ddl", OPTIONAL_STRING_SCHEMA)],
        name="io.debezium.connector.schema.Change",
    )
    records = [
        sink(value_schema=HEARTBEAT, value=Struct(HEARTBEAT, {"ts_ms": 1})),
        sink(
            value_schema=schema_change,
            value=Struct(schema_change, {"source": Struct(SOURCE, SOURCE_VALUES), "ts_ms": 1}),
        ),
        sink(value={"ts_ms": 1}),  # a schemaless heartbeat
        sink(value={"op": "c", "payload": 1}),  # op but no row images
        sink(value="text"),
        sink(value_schema=STRING_SCHEMA, value="text"),
    ]
    xf = unwrap(add__fields="op", add__headers="op")
    for record in records:
        assert xf.apply(record) is record
        assert xf.apply(record) is record  # and again, from the cache


def test_an_envelope_schema_with_a_wrong_value_is_a_data_error(sink):
    with pytest.raises(DataError):
        unwrap().apply(sink(value_schema=ENVELOPE, value={"op": "c"}))
    with pytest.raises(DataError):
        unwrap().apply(sink(value={"op": "c", "before": None, "after": "row"}))


# ----------------------------------------------------------------- config


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("delete.handling.mode", "erase"),
        ("delete.tombstone.handling.mode", "rewrite-deletes"),
        ("drop.tombstones", "maybe"),
        ("add.fields", "op,after.id"),
        ("add.fields", "source.a.b"),
        ("add.fields", "op:"),
        ("add.fields", "op,op"),
        ("add.headers", "before.id"),
        ("drop.fields.from.key", "yes"),
        ("truncate.handling.mode", "apply"),
    ],
)
def test_config_errors_name_the_key(key, value):
    with pytest.raises(ConfigError) as info:
        ExtractNewRecordState().configure({key: value})
    assert info.value.name == key
    assert key in str(info.value)


def test_rewrite_marker_cannot_be_added_again():
    with pytest.raises(ConfigError) as info:
        unwrap(delete__handling__mode="rewrite", add__fields="op:__deleted")
    assert info.value.name == "add.fields"


def test_config_def_lists_debeziums_keys():
    names = set(ExtractNewRecordState().config().names())
    assert {
        "drop.tombstones",
        "delete.handling.mode",
        "delete.tombstone.handling.mode",
        "route.by.field",
        "add.fields",
        "add.fields.prefix",
        "add.headers",
        "add.headers.prefix",
        "drop.fields.header.name",
        "drop.fields.from.key",
        "drop.fields.keep.schema.compatible",
        "replace.null.with.default",
    } <= names


# ------------------------------------------------------- plugins and chains


@pytest.mark.parametrize(
    "name", ["io.debezium.transforms.ExtractNewRecordState", "ExtractNewRecordState"]
)
def test_resolves_by_debeziums_class_name(name):
    assert Plugins().resolve("transform", name) is ExtractNewRecordState


def test_in_a_transform_chain(change, tombstone):
    chain = TransformChain.from_config(
        {
            "transforms": "unwrap,route",
            "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
            "transforms.unwrap.delete.tombstone.handling.mode": "rewrite",
            "transforms.unwrap.add.fields": "op,table",
            "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
            "transforms.route.regex": "shop\\.public\\.(.*)",
            "transforms.route.replacement": "flat.$1",
        },
        Plugins().resolve,
    )
    out = chain.apply(change("d"))
    assert out.topic == "flat.orders"
    assert out.value.to_dict() == {**OLD, "__deleted": "true", "__op": "d", "__table": "orders"}
    assert chain.apply(tombstone) is None  # dropped by unwrap, the chain ends
    assert chain.apply(change("t")) is None


def test_chain_config_errors_name_the_full_key():
    with pytest.raises(ConfigError) as info:
        TransformChain.from_config(
            {
                "transforms": "unwrap",
                "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
                "transforms.unwrap.delete.handling.mode": "erase",
            },
            Plugins().resolve,
        )
    assert info.value.name == "transforms.unwrap.delete.handling.mode"


# ----------------------------------------------------------------- batches


def _batch(ops: list[str]) -> Any:
    """A SourceBatch of envelopes, one per op (rows 0, 1, …)."""
    from connect.api.arrow import batch_from_values
    from connect.api.batches import SourceBatch

    values = []
    for i, op in enumerate(ops):
        code, before, after = EVENTS[op]
        row = None if after is None else {**after, "id": i, "name": None if i % 3 else "n"}
        values.append(event(code, before, row))
    return SourceBatch(
        topic="shop.public.orders",
        value_schema=ENVELOPE,
        values=batch_from_values(ENVELOPE, values),
        source_partition={"server": "shop"},
        source_offset={"lsn": 1},
    )


@pytest.mark.parametrize(
    "config",
    [{}, {"delete.handling.mode": "rewrite"}, {"replace.null.with.default": "false"}],
)
def test_a_batch_of_upserts_unwraps_as_its_records_do(config):
    batch = _batch(["r", "c", "u", "r", "c"])
    transform = unwrap(**config)
    out = transform.apply_batch(batch)
    assert out is not NotImplemented
    assert out.records() == [transform.apply(r) for r in batch.records()]
    # The rows are the after column's children, not copies.
    assert out.values.column(0).buffers()[1] == batch.values.column(1).field(0).buffers()[1]


@pytest.mark.parametrize(
    ("ops", "config"),
    [
        (["r", "d"], {}),  # a delete
        (["r", "t"], {}),  # a truncate
        (["r", "c"], {"add.fields": "op"}),
        (["r", "c"], {"add.headers": "op"}),
        (["r", "c"], {"route.by.field": "name"}),
    ],
)
def test_what_a_batch_cannot_express_goes_record_by_record(ops, config):
    assert unwrap(**config).apply_batch(_batch(ops)) is NotImplemented


def test_a_batch_that_is_no_envelope_passes_unchanged():
    from connect.api.arrow import batch_from_values
    from connect.api.batches import SourceBatch

    batch = SourceBatch(
        topic="beats",
        value_schema=HEARTBEAT,
        values=batch_from_values(HEARTBEAT, [Struct(HEARTBEAT, {"ts_ms": 1})]),
    )
    assert unwrap().apply_batch(batch) is batch
