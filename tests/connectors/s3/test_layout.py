"""Object names and directories, without a server: key layout and parsing, Joda path
formats, time directories across a DST change, field directories, and the JSON
format's bytes (what the exactly-once guarantee needs to be deterministic)."""

from __future__ import annotations

import datetime as dt
import gzip
from typing import Any

import orjson
import pytest

from connect.api import ConfigError, DataError, Schema, SinkRecord, Struct
from connect.api.data import INT64_SCHEMA, OPTIONAL_STRING_SCHEMA
from connectors.s3.config import SinkSettings
from connectors.s3.formats import make_format
from connectors.s3.names import object_key, parse_key
from connectors.s3.partitioners import (
    FieldPartitioner,
    TimeBasedPartitioner,
    compile_path_format,
)


def _layout(**props: str) -> Any:
    return SinkSettings.parse(
        {"s3.bucket.name": "b-1", "flush.size": "1", "format.class": "json", **props}
    ).layout


def test_keys_round_trip_through_parse() -> None:
    layout = _layout(**{"topics.dir": "a/b", "filename.offset.zero.pad.width": "12"})
    key = object_key(layout, "or+ders", "region=eu/x=1", 7, 42, ".json")
    assert key == "a/b/or+ders/region=eu/x=1/or+ders+7+000000000042.json"
    name = parse_key(layout, key, ".json")
    assert name is not None
    assert (name.topic, name.partition, name.start, name.encoded) == (
        "or+ders",
        7,
        42,
        "region=eu/x=1",
    )
    assert parse_key(layout, key, ".avro") is None
    assert parse_key(layout, "a/b/orders/partition=0/other+0+1.json", ".json") is None
    assert parse_key(layout, "elsewhere/orders/partition=0/orders+0+1.json", ".json") is None


def test_joda_path_formats() -> None:
    moment = dt.datetime(2024, 3, 5, 7, 9, 2)
    render = compile_path_format("'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH")
    assert render(moment) == "year=2024/month=03/day=05/hour=07"
    assert compile_path_format("yy-M-d_H.mm.ss 'o''clock'")(moment) == "24-3-5_7.09.02 o'clock"
    assert compile_path_format("MMM/MMMM")(moment) == "Mar/March"
    with pytest.raises(DataError):
        compile_path_format("YYYY-ww")


@pytest.mark.parametrize(
    ("locale", "expected"),
    [
        ("", "March/Mar/Sunday/Sun"),
        ("en-US", "March/Mar/Sunday/Sun"),
        ("fr-FR", "mars/mars/dimanche/dim."),
        ("fr_FR", "mars/mars/dimanche/dim."),
        ("de_DE", "März/März/Sonntag/So."),
        ("ru", "марта/мар./воскресенье/вс"),
    ],
)
def test_month_and_weekday_names_follow_the_locale(locale: str, expected: str) -> None:
    """CLDR names, as Java's (and so Confluent's) formatter writes them; no OS locale
    needs to be installed."""
    sunday = dt.datetime(2024, 3, 3, 12)
    assert compile_path_format("MMMM/MMM/EEEE/EEE", locale)(sunday) == expected


def test_an_unknown_locale_is_refused_naming_the_key() -> None:
    with pytest.raises(ConfigError) as info:
        _layout(locale="xx-YY")
    assert info.value.name == "locale"
    assert _layout(locale="de-AT").locale == "de-AT"


@pytest.mark.parametrize(
    ("props", "conditional"),
    [
        ({}, True),
        ({"s3.conditional.writes": "false"}, False),
        ({"rotate.schedule.interval.ms": "60000", "timezone": "UTC"}, False),
        ({"partitioner.class": "DailyPartitioner", "timezone": "UTC"}, False),  # Wallclock
        (
            {
                "partitioner.class": "DailyPartitioner",
                "timezone": "UTC",
                "timestamp.extractor": "Record",
            },
            True,
        ),
        ({"rotate.interval.ms": "1000"}, False),  # Wallclock time decides the cut
        ({"rotate.interval.ms": "1000", "timestamp.extractor": "Record"}, True),
    ],
)
def test_conditional_writes_only_where_a_replay_cuts_the_same_objects(
    props: dict[str, str], conditional: bool
) -> None:
    settings = SinkSettings.parse(
        {"s3.bucket.name": "b-1", "flush.size": "1", "format.class": "json", **props}
    )
    assert settings.conditional_writes is conditional


def test_time_directories_follow_the_zone_across_dst() -> None:
    hourly = TimeBasedPartitioner("'d'=YYYYMMdd/'h'=HH", 3_600_000, "Europe/Paris", "/")
    before = int(dt.datetime(2024, 3, 31, 0, 30, tzinfo=dt.UTC).timestamp() * 1000)
    after = int(dt.datetime(2024, 3, 31, 1, 30, tzinfo=dt.UTC).timestamp() * 1000)
    assert hourly.directory(before) == "d=20240331/h=01"  # CET, UTC+1
    assert hourly.directory(after) == "d=20240331/h=03"  # CEST, UTC+2: 02:xx never exists
    daily = TimeBasedPartitioner("YYYY-MM-dd", 86_400_000, "America/New_York", "/")
    late = int(dt.datetime(2024, 1, 2, 3, 0, tzinfo=dt.UTC).timestamp() * 1000)
    assert daily.directory(late) == "2024-01-01"


def _record(value: Any, schema: Schema | None = None, offset: int = 0) -> SinkRecord:
    return SinkRecord(
        topic="t", kafka_partition=0, kafka_offset=offset, value=value, value_schema=schema
    )


def test_field_directories_from_structs_and_maps() -> None:
    schema = Schema.struct([("id", INT64_SCHEMA), ("region", OPTIONAL_STRING_SCHEMA)])
    partitioner = FieldPartitioner(["region", "id"], "/")
    records = [
        _record(Struct(schema, {"id": 1, "region": "eu"})),
        _record({"id": 2, "region": "us"}),
    ]
    assert partitioner.encode(records, None) == ["region=eu/id=1", "region=us/id=2"]
    with pytest.raises(DataError, match="no field 'region'"):
        partitioner.encode([_record({"id": 3})], None)
    with pytest.raises(DataError, match="struct or map"):
        partitioner.encode([_record(b"raw")], None)


class _Sink:
    key = "k"

    def __init__(self) -> None:
        self.data = bytearray()

    def write(self, data: Any) -> None:
        self.data += data

    def extend(self, pieces: Any) -> None:
        for piece in pieces:
            self.data += piece


def _encode(layout: Any, values: list[Any], schema: Schema | None = None) -> bytes:
    sink = _Sink()
    writer = make_format(layout).writer(sink, schema)
    writer.write(values[:2])
    writer.write(values[2:])
    writer.finish()
    return bytes(sink.data)


def test_json_lines_are_deterministic_and_gzip_carries_no_timestamp() -> None:
    values = [{"a": "x\ny", "b": b"\x01"}, [1, None], "s", 2.5]
    plain = _encode(_layout(), values)
    assert plain == b'{"a":"x\\ny","b":"AQ=="}\n[1,null]\n"s"\n2.5\n'
    gz = _layout(**{"s3.compression.type": "gzip"})
    assert _encode(gz, values) == _encode(gz, values)
    assert gzip.decompress(_encode(gz, values)) == plain
    assert _encode(gz, values)[4:8] == b"\x00\x00\x00\x00"  # MTIME
    decimal = Schema.struct([("n", INT64_SCHEMA)])
    assert orjson.loads(
        _encode(_layout(), [Struct(decimal, {"n": 5})] * 3, decimal).splitlines()[0]
    ) == {"n": 5}


def test_json_lines_of_a_large_batch_are_each_value_dumped_alone() -> None:
    """Batches are encoded in rounds straight into the sink: every line is what
    orjson writes for the value alone, whatever the round boundaries."""
    values: list[Any] = [
        {"i": i, "s": "é\n\u2028" * (i % 3), "n": None, "f": i / 7, "l": [True, i]}
        for i in range(1000)
    ]
    expected = b"".join(orjson.dumps(v) + b"\n" for v in values)
    assert _encode(_layout(), values) == expected
    assert len(expected.splitlines()) == 1000


def test_avro_objects_are_identical_for_identical_records() -> None:
    schema = Schema.struct([("id", INT64_SCHEMA), ("name", OPTIONAL_STRING_SCHEMA)])
    values = [Struct(schema, {"id": i, "name": None if i % 2 else f"n{i}"}) for i in range(5)]
    avro = _layout(**{"format.class": "avro"})
    assert _encode(avro, values, schema) == _encode(avro, values, schema)
    back_schema, back = make_format(avro).read(_encode(avro, values, schema))
    assert back_schema == schema and back == values


def test_a_batch_splits_into_runs_of_one_topic_partition() -> None:
    from connectors.s3.sink import _runs

    def rec(topic: str, partition: int, offset: int) -> SinkRecord:
        return SinkRecord(topic=topic, kafka_partition=partition, kafka_offset=offset, value=1)

    mixed = [rec("a", 0, 0), rec("a", 0, 1), rec("a", 1, 0), rec("b", 1, 0), rec("a", 0, 2)]
    assert [
        (tp.topic, tp.partition, [r.kafka_offset for r in run]) for tp, run in _runs(mixed)
    ] == [("a", 0, [0, 1]), ("a", 1, [0]), ("b", 1, [0]), ("a", 0, [2])]
    one = mixed[:2]
    assert [(tp.topic, run) for tp, run in _runs(one)] == [("a", one)]
    assert _runs([]) == []
    assert len(_runs([rec("a", 0, 0), rec("b", 0, 0)])) == 2  # same partition, two topics
