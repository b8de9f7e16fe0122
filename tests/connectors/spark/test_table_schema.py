"""A lake that stays one table: SparkParquetSink refuses a value schema whose files the
readers (Spark's mergeSchema, pyarrow's datasets) could not read with the table's, before
anything of it is written — through put(), put_batches(), after a restart, in the
runtime — and the rule it applies agrees with what the two readers really do."""

from __future__ import annotations

import decimal
import json
import re
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from connect.api import (
    FLOAT32_SCHEMA,
    FLOAT64_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    Decimal,
    Schema,
    SinkRecord,
    Struct,
    TopicPartition,
)
from connect.worker.task_base import State
from connectors.spark.table_schema import SchemaConflictError, merge_schemas
from log import FileLog
from tests.connectors.spark.helpers import (
    ORDER,
    T0,
    lake_files,
    lake_rows,
    order,
    records,
    start_task,
)
from tests.connectors.spark.test_sink_batches import _converter, _worker_task, batches, messages

TP = TopicPartition("orders", 0)


def _with_amount(amount: Schema, name: str = "orders", *extra: tuple[str, Schema]) -> Schema:
    fields = [(f.name, amount if f.name == "amount" else f.schema) for f in ORDER.fields]
    return Schema.struct([*fields, *extra], name=name, version=2)


#: `ALTER COLUMN amount TYPE text`: the registry accepts it (Avro reads bytes as string).
ORDER_TEXT = _with_amount(STRING_SCHEMA)
#: A decimal's precision grows at the same scale, and an optional column comes.
ORDER_WIDE = _with_amount(
    Decimal.schema(2, precision=12), "orders", ("note", OPTIONAL_STRING_SCHEMA)
)


def text_order(i: int) -> Struct:
    value = Struct(ORDER_TEXT)
    source = order(i)
    for field in ORDER.fields:
        text = field.name == "amount"
        value.put(field.name, f"{source.get('amount')}" if text else source.get(field.name))
    return value


def wide_order(i: int) -> Struct:
    value = Struct(ORDER_WIDE)
    for field in ORDER.fields:
        value.put(field.name, order(i).get(field.name))
    value.put("note", f"n{i}")
    return value


def custom(ids: range, schema: Schema, make: Any, topic: str = "orders") -> list[SinkRecord]:
    return [
        SinkRecord(
            topic=topic,
            kafka_partition=0,
            value_schema=schema,
            value=make(i),
            timestamp=T0 + i * 1000,
            kafka_offset=i,
        )
        for i in ids
    ]


def text_messages(ids: range) -> list[bytes | None]:
    """JsonConverter's messages of ORDER_TEXT values."""
    values = [text_order(i) for i in ids]
    return _converter().from_connect_batch("orders", [ORDER_TEXT] * len(values), values)


def snapshot(lake: Path) -> list[str]:
    """Every file under the lake's topics directory (temp files included)."""
    return sorted(
        p.relative_to(lake).as_posix() for p in (lake / "topics").rglob("*") if p.is_file()
    )


AMOUNT_CONFLICT = "column amount is decimal128(10, 2) in the table and string in the new schema"


def test_a_type_the_readers_cannot_merge_stops_the_task_before_anything_is_written(
    tmp_path: Path,
) -> None:
    task, _ = start_task(tmp_path, flush_size="5")
    task.open([TP])
    task.put(records(range(10)))
    before = snapshot(tmp_path)
    assert len(before) == 2
    # 10 and 11 would be buffered, but the run after them does not fit: the put fails,
    # and neither they nor the text amounts reach a file.
    with pytest.raises(SchemaConflictError) as info:
        task.put(records(range(10, 12)) + custom(range(12, 15), ORDER_TEXT, text_order))
    message = str(info.value)
    assert message.startswith("topic orders: ")
    assert AMOUNT_CONFLICT in message
    assert "\n" not in message and str(tmp_path) not in message
    assert info.value.topic == "orders"
    assert [(c.column, c.held, c.new) for c in info.value.conflicts] == [
        ("amount", "decimal128(10, 2)", "string")
    ]
    assert snapshot(tmp_path) == before
    assert task.pre_commit({TP: 15}) == {TP: 10}
    # The same schema again is refused again (the verdict is not cached as accepted).
    with pytest.raises(SchemaConflictError):
        task.put(custom(range(12, 15), ORDER_TEXT, text_order))
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    ("narrow", "wide", "held", "new"),
    [
        (INT32_SCHEMA, INT64_SCHEMA, "int32", "int64"),
        (FLOAT32_SCHEMA, FLOAT64_SCHEMA, "float", "double"),
    ],
)
def test_int_to_long_and_float_to_double_are_refused_as_spark_cannot_merge_them(
    tmp_path: Path, narrow: Schema, wide: Schema, held: str, new: str
) -> None:
    def row(schema: Schema, value: Any) -> Struct:
        out = Struct(schema)
        out.put("id", value[0])
        out.put("qty", value[1])
        return out

    v1 = Schema.struct([("id", INT64_SCHEMA), ("qty", narrow)], name="items")
    v2 = Schema.struct([("id", INT64_SCHEMA), ("qty", wide)], name="items", version=2)
    task, _ = start_task(tmp_path, flush_size="2")
    task.put(custom(range(2), v1, lambda i: row(v1, (i, i))))
    before = snapshot(tmp_path)
    with pytest.raises(SchemaConflictError, match=f"column qty is {held} in the table and {new}"):
        task.put(custom(range(2, 4), v2, lambda i: row(v2, (i, i))))
    assert snapshot(tmp_path) == before


def test_the_batch_path_refuses_the_same_change(tmp_path: Path) -> None:
    task, _ = start_task(tmp_path, flush_size="5")
    task.open([TP])
    task.put_batches(batches(messages(range(10))))
    task.put([])
    before = snapshot(tmp_path)
    assert len(before) == 2
    data = messages(range(10, 12)) + text_messages(range(12, 14))
    with pytest.raises(SchemaConflictError, match=re.escape(AMOUNT_CONFLICT)):
        task.put_batches(batches(data, first=10))
    assert snapshot(tmp_path) == before
    assert task.pre_commit({TP: 14}) == {TP: 10}


def test_a_restarted_task_reads_the_tables_schema_from_its_files(tmp_path: Path) -> None:
    first, _ = start_task(tmp_path, flush_size="5")
    first.put(records(range(5)) + custom(range(5, 10), ORDER_WIDE, wide_order))
    first.stop()
    assert len(lake_files(tmp_path)) == 2
    again, context = start_task(tmp_path, flush_size="5")  # a new instance: knows nothing
    again.open([TP])
    assert context.seeks == {TP: 10}
    # The narrower decimal and the missing column are what the table holds already.
    again.put(records(range(10, 15)))
    assert len(lake_files(tmp_path)) == 3
    before = snapshot(tmp_path)
    with pytest.raises(SchemaConflictError, match="column amount is decimal128\\(12, 2\\)"):
        again.put(custom(range(15, 20), ORDER_TEXT, text_order))
    assert snapshot(tmp_path) == before
    # Another topic is another table: the text amount is its first schema.
    other, _ = start_task(tmp_path, flush_size="5")
    other.put(custom(range(5), ORDER_TEXT, text_order, topic="payments"))
    assert len(lake_files(tmp_path, "payments")) == 1


def test_the_runtime_fails_the_task_with_the_message_and_nothing_of_the_change_lands(
    tmp_path: Path,
) -> None:
    lake = tmp_path / "lake"
    statuses: list[tuple[State, str | None]] = []
    failed = threading.Event()

    def on_status(_connector: str, _task: int, state: State, trace: str | None) -> None:
        statuses.append((state, trace))
        if state is State.FAILED:
            failed.set()

    with FileLog(tmp_path / "log", background=False) as log:
        log.create_topic("orders", 1)
        log.append("orders", 0, messages(range(14)))
        first = _worker_task(tmp_path, log, lake)
        for _ in range(3):
            first.iterate()
        first.commit_final()
        first.stop_plugin()
        first.close_resources()
        assert [r["id"] for r in lake_rows(lake)] == list(range(14))
        before = snapshot(lake)
        # The column's type changes; a new task (a restart) meets it.
        log.append("orders", 0, text_messages(range(14, 20)))
        again = _worker_task(tmp_path, log, lake, on_status, started=False)
        again.start()
        try:
            assert failed.wait(30), f"the task did not fail: {statuses}"
        finally:
            again.stop()
            again.await_stop(30)
    state, trace = statuses[-1]
    assert state is State.FAILED and trace is not None
    assert "SchemaConflictError: topic orders: " in trace
    assert AMOUNT_CONFLICT in trace
    assert snapshot(lake) == before


# ------------------------------------------------------------------ with the readers


def _pair(kind: pa.DataType, name: str = "x") -> pa.Table:
    if pa.types.is_struct(kind):
        value: Any = {f.name: (1 if pa.types.is_integer(f.type) else "1") for f in kind}
    elif pa.types.is_list(kind):
        value = [1] if pa.types.is_integer(kind.value_type) else ["1"]
    elif pa.types.is_decimal(kind):
        value = decimal.Decimal("1.5")
    elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
        value = "1"
    elif pa.types.is_binary(kind):
        value = b"1"
    elif pa.types.is_timestamp(kind):
        return pa.table({"id": [1], name: pa.array([1], pa.int64()).cast(kind)})
    elif pa.types.is_date(kind):
        return pa.table({"id": [1], name: pa.array([1], pa.int32()).cast(kind)})
    else:
        value = 1
    return pa.table({"id": [1], name: pa.array([value], kind)})


STRUCT_A = pa.struct([("a", pa.int64())])
UTC_MS = pa.timestamp("ms", tz="UTC")
READER_CASES = {
    "int32 → int64": (pa.int32(), pa.int64()),
    "int8 → int32": (pa.int8(), pa.int32()),
    "float → double": (pa.float32(), pa.float64()),
    "int64 → double": (pa.int64(), pa.float64()),
    "decimal precision 10 → 12": (pa.decimal128(10, 2), pa.decimal128(12, 2)),
    "decimal precision 12 → 10": (pa.decimal128(12, 2), pa.decimal128(10, 2)),
    "decimal scale 2 → 3": (pa.decimal128(10, 2), pa.decimal128(10, 3)),
    "decimal → string": (pa.decimal128(10, 2), pa.string()),
    "bytes → string": (pa.binary(), pa.string()),
    "int64 → string": (pa.int64(), pa.string()),
    "string → large_string": (pa.string(), pa.large_string()),
    "timestamp ms → us": (UTC_MS, pa.timestamp("us", tz="UTC")),
    "timestamp UTC → Tokyo": (UTC_MS, pa.timestamp("ms", tz="Asia/Tokyo")),
    "timestamp UTC → local": (UTC_MS, pa.timestamp("ms")),
    "date → timestamp": (pa.date32(), UTC_MS),
    "struct gains a field": (STRUCT_A, pa.struct([("a", pa.int64()), ("b", pa.string())])),
    "struct field int → string": (STRUCT_A, pa.struct([("a", pa.string())])),
    "list of int → of string": (pa.list_(pa.int64()), pa.list_(pa.string())),
}


@pytest.mark.spark
@pytest.mark.parametrize(("held", "new"), READER_CASES.values(), ids=READER_CASES.keys())
def test_the_rule_agrees_with_spark_and_pyarrow(
    spark: Any, tmp_path: Path, held: pa.DataType, new: pa.DataType
) -> None:
    old_file, new_file = _pair(held), _pair(new)
    pq.write_table(old_file, tmp_path / "a.parquet")
    pq.write_table(new_file, tmp_path / "b.parquet")
    _, conflicts = merge_schemas(old_file.schema, new_file.schema)
    assert _readers_merge(spark, tmp_path) == (not conflicts), conflicts


@pytest.mark.spark
def test_columns_come_and_go_and_differ_in_case_as_the_readers_say(
    spark: Any, tmp_path: Path
) -> None:
    cases = {
        "a new column": (pa.table({"id": [1]}), pa.table({"id": [2], "y": ["a"]}), True),
        "a dropped column": (pa.table({"id": [1], "y": ["a"]}), pa.table({"id": [2]}), True),
        "a name in another case": (pa.table({"id": [1]}), pa.table({"ID": [2]}), False),
    }
    for label, (old, new, merges) in cases.items():
        where = tmp_path / label.replace(" ", "-")
        where.mkdir()
        pq.write_table(old, where / "a.parquet")
        pq.write_table(new, where / "b.parquet")
        _, conflicts = merge_schemas(old.schema, new.schema)
        assert (not conflicts) == merges, label
        if merges:
            assert _readers_merge(spark, where), label
        else:  # each reader reads them, but not as the same table
            spark_columns = spark.read.option("mergeSchema", "true").parquet(str(where)).columns
            arrow_columns = pa.unify_schemas([old.schema, new.schema]).names
            assert spark_columns == ["id"] and arrow_columns == ["id", "ID"], label


def _readers_merge(spark: Any, directory: Path) -> bool:
    """Whether Spark (mergeSchema) and pyarrow (a dataset over the unified schema) both
    read the directory's files as one table, every row."""
    try:
        rows = spark.read.option("mergeSchema", "true").parquet(str(directory)).collect()
        spark_ok = len(rows) == 2
    except Exception as exc:  # Spark's AnalysisException / SparkException over py4j
        assert "CANNOT_MERGE" in str(exc) or "merge" in str(exc).lower(), exc
        spark_ok = False
    try:
        schemas = [pq.read_schema(p) for p in sorted(directory.glob("*.parquet"))]
        unified = pa.unify_schemas(schemas, promote_options="permissive")
        arrow_ok = ds.dataset(str(directory), schema=unified).to_table().num_rows == 2
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        arrow_ok = False
    return spark_ok and arrow_ok


@pytest.mark.spark
def test_an_accepted_change_keeps_the_topic_one_table_for_both_readers(
    spark: Any, tmp_path: Path
) -> None:
    task, _ = start_task(tmp_path, flush_size="5")
    task.put(records(range(5)) + custom(range(5, 10), ORDER_WIDE, wide_order))
    task.put_batches(batches(messages(range(10, 15)), first=10))  # the batch path, v1 again
    task.put([])
    assert len(lake_files(tmp_path)) == 3
    table = tmp_path / "topics/orders"
    df = spark.read.option("mergeSchema", "true").parquet(str(table))
    assert dict(df.dtypes)["amount"] == "decimal(12,2)"
    rows = {r.id: r for r in df.collect()}
    assert sorted(rows) == list(range(15))
    assert rows[7].note == "n7" and rows[12].note is None
    assert rows[12].amount == decimal.Decimal("15.00")
    unified = pa.unify_schemas(
        [pq.read_schema(f) for f in lake_files(tmp_path)], promote_options="permissive"
    )
    arrow = ds.dataset(str(table), schema=unified, partitioning="hive").to_table()
    assert sorted(arrow.column("id").to_pylist()) == list(range(15))


@pytest.mark.spark
def test_the_spark_writer_restarted_knows_its_files_schema(spark: Any, tmp_path: Path) -> None:
    first, _ = start_task(tmp_path, flush_size="5", parquet_writer="spark")
    first.open([TP])
    first.put(records(range(5)))
    first.stop()
    footer = first.storage.read_parquet_schema(
        lake_files(tmp_path)[0].relative_to(tmp_path).as_posix()
    )
    assert footer == pq.read_schema(lake_files(tmp_path)[0])
    # Spark wrote the timestamps as TIMESTAMP(MICROS, UTC): pyarrow reads them as such,
    # and the record path's millisecond timestamps join them.
    assert footer.field("at").type == pa.timestamp("us", tz="UTC")
    again, _ = start_task(tmp_path, flush_size="5", parquet_writer="spark")
    again.open([TP])
    again.put(records(range(5, 10)))
    assert len(lake_files(tmp_path)) == 2
    before = snapshot(tmp_path)
    with pytest.raises(SchemaConflictError, match=re.escape(AMOUNT_CONFLICT)):
        again.put(custom(range(10, 15), ORDER_TEXT, text_order))
    assert snapshot(tmp_path) == before
    assert (
        spark.read.option("mergeSchema", "true").parquet(str(tmp_path / "topics/orders")).count()
        == 10
    )


@pytest.mark.spark
def test_a_schemaless_field_null_in_a_whole_batch_takes_its_type_later(
    spark: Any, tmp_path: Path
) -> None:
    """Schemaless JSON gives a field null in every row of a batch Arrow's null type,
    which Spark merges with nothing: files leave such a column out."""
    data = [json.dumps({"id": i, "note": None}).encode() for i in range(4)]
    data += [json.dumps({"id": i, "note": f"n{i}"}).encode() for i in range(4, 8)]
    raw = [
        SinkRecord(topic="orders", kafka_partition=0, value=v, kafka_offset=i, timestamp=T0)
        for i, v in enumerate(data)
    ]
    task, _ = start_task(tmp_path, flush_size="4", value_format="json")
    task.put(raw[:4])  # one poll: Arrow's reader types the column null
    task.put(raw[4:])
    assert len(lake_files(tmp_path)) == 2
    assert pq.read_schema(lake_files(tmp_path)[0]).names == ["id"]
    df = spark.read.option("mergeSchema", "true").parquet(str(tmp_path / "topics/orders"))
    assert dict(df.dtypes)["note"] == "string"
    notes = {r.id: r.note for r in df.collect()}
    assert notes == {i: (f"n{i}" if i >= 4 else None) for i in range(8)}


@pytest.mark.spark
def test_a_file_that_is_no_parquet_is_a_storage_error_naming_it(spark: Any, tmp_path: Path) -> None:
    from connectors.spark.storage import HadoopStorage, LocalStorage, StorageError

    (tmp_path / "x.parquet").write_bytes(b"PAR1 not really a Parquet file PAR1")
    (tmp_path / "tiny.parquet").write_bytes(b"PAR1")
    for storage in (HadoopStorage(tmp_path.as_uri(), spark), LocalStorage(tmp_path)):
        for name in ("x.parquet", "tiny.parquet", "missing.parquet"):
            with pytest.raises(StorageError) as info:
                storage.read_parquet_schema(name)
            assert name in str(info.value) and "\n" not in str(info.value)


@pytest.mark.spark
def test_a_lake_of_int96_timestamps_goes_on_as_int96_and_refuses_a_mix(
    spark: Any, tmp_path: Path
) -> None:
    """Spark wrote timestamps as INT96 before TIMESTAMP_MICROS became the sink's default:
    configured so, a restarted task goes on; by default it refuses to mix the two,
    which pyarrow could not read as one column."""
    int96 = {"spark_conf_spark_sql_parquet_outputTimestampType": "INT96"}
    try:
        first, _ = start_task(tmp_path, flush_size="5", parquet_writer="spark", **int96)
        first.put(records(range(5)))
        assert pq.read_schema(lake_files(tmp_path)[0]).field("at").type == pa.timestamp("ns")
        again, _ = start_task(tmp_path, flush_size="5", parquet_writer="spark", **int96)
        again.open([TP])
        again.put(records(range(5, 10)))
        assert len(lake_files(tmp_path)) == 2
    finally:
        spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    default, _ = start_task(tmp_path, flush_size="5", parquet_writer="spark")
    default.open([TP])
    before = snapshot(tmp_path)
    conflict = "column at is timestamp[ns] in the table and timestamp[us, tz=UTC] in the new"
    with pytest.raises(SchemaConflictError, match=re.escape(conflict)):
        default.put(records(range(10, 15)))
    assert snapshot(tmp_path) == before


def test_an_avro_change_the_registry_accepts_is_refused_by_the_lake(tmp_path: Path) -> None:
    """`ALTER COLUMN amount TYPE text` under a registry: BACKWARD accepts it (Avro reads
    bytes as string); the lake cannot hold both types in one column."""
    from connect.converters.avro import AvroConverter
    from connect.converters.avro.client import drop_mock_registry, mock_registry
    from connect.registry.avro import AvroSchema, check_level

    converter = AvroConverter()
    converter.configure({"schema.registry.url": "mock://lake-text"}, False)
    try:
        data = [converter.from_connect_data("orders", ORDER, order(i)) for i in range(5)]
        data += [converter.from_connect_data("orders", ORDER_TEXT, text_order(i)) for i in (5, 6)]
        registry = mock_registry("lake-text")
        v1, v2 = (AvroSchema.parse(registry.get_schema(i)) for i in (1, 2))
        assert check_level("BACKWARD", new=v2, existing=[v1]) == []
        decoded = converter.to_connect_batch("orders", data)
    finally:
        drop_mock_registry("lake-text")
    recs = [
        SinkRecord(
            topic="orders",
            kafka_partition=0,
            value_schema=sv.schema,
            value=sv.value,
            kafka_offset=i,
            timestamp=T0,
        )
        for i, sv in enumerate(decoded)
    ]
    task, _ = start_task(tmp_path, flush_size="5")
    task.put(recs[:5])
    before = snapshot(tmp_path)
    with pytest.raises(SchemaConflictError, match=re.escape(AMOUNT_CONFLICT)):
        task.put(recs[5:])
    assert snapshot(tmp_path) == before
