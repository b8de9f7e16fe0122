"""TimestampConverter among string/unix/Date/Time/Timestamp, and the date patterns."""

from __future__ import annotations

import datetime as dt

import pytest

from connect.api import (
    INT32_SCHEMA,
    INT64_SCHEMA,
    STRING_SCHEMA,
    ConfigError,
    DataError,
    Date,
    Schema,
    Struct,
    Time,
    Timestamp,
    Type,
)
from connect.transforms._dateformat import DateFormat, DateFormatError
from connect.transforms.timestamp import TimestampConverterKey, TimestampConverterValue

from .conftest import configured

MS = 1_700_000_000_123  # 2023-11-14T22:13:20.123Z
MOMENT = dt.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=dt.UTC)
FORMAT = "yyyy-MM-dd'T'HH:mm:ss.SSSX"
TEXT = "2023-11-14T22:13:20.123Z"

# (form, schema, value) of the same instant in each form.
FORMS = {
    "string": (STRING_SCHEMA, TEXT),
    "unix": (INT64_SCHEMA, MS),
    "Timestamp": (Timestamp.schema(), MOMENT),
}


@pytest.mark.parametrize("source", list(FORMS))
@pytest.mark.parametrize("target", list(FORMS))
def test_whole_value_round_trips_with_schema(sink, source, target):
    schema, value = FORMS[source]
    xf = configured(TimestampConverterValue, target__type=target, format=FORMAT)
    out = xf.apply(sink(value_schema=schema, value=value))
    assert out.value == FORMS[target][1]
    assert out.value_schema == FORMS[target][0]


@pytest.mark.parametrize("source", list(FORMS))
@pytest.mark.parametrize("target", list(FORMS))
def test_whole_value_schemaless(sink, source, target):
    xf = configured(TimestampConverterKey, target__type=target, format=FORMAT)
    out = xf.apply(sink(key=FORMS[source][1]))
    assert out.key == FORMS[target][1] and out.key_schema is None


def test_date_and_time_keep_their_half(sink):
    to_date = configured(TimestampConverterValue, target__type="Date")
    out = to_date.apply(sink(value_schema=INT64_SCHEMA, value=MS))
    assert out.value == dt.date(2023, 11, 14) and out.value_schema == Date.schema()
    to_time = configured(TimestampConverterValue, target__type="Time")
    out = to_time.apply(sink(value=MOMENT))
    assert out.value == dt.time(22, 13, 20, 123000)
    back = configured(TimestampConverterValue, target__type="unix").apply(
        sink(value_schema=Time.schema(), value=dt.time(0, 0, 1))
    )
    assert back.value == 1000
    days = configured(TimestampConverterValue, target__type="unix").apply(
        sink(value_schema=Date.schema(), value=dt.date(1970, 1, 2))
    )
    assert days.value == 86_400_000


@pytest.mark.parametrize(
    ("precision", "unix"),
    [
        ("seconds", 1_700_000_000),
        ("milliseconds", MS),
        ("microseconds", MS * 1000),
        ("nanoseconds", MS * 1_000_000),
    ],
)
def test_unix_precision(sink, precision, unix):
    to_unix = configured(TimestampConverterValue, target__type="unix", unix__precision=precision)
    assert to_unix.apply(sink(value=MOMENT)).value == unix
    from_unix = configured(
        TimestampConverterValue, target__type="Timestamp", unix__precision=precision
    )
    expected = MOMENT.replace(microsecond=0) if precision == "seconds" else MOMENT
    assert from_unix.apply(sink(value=unix)).value == expected


def test_negative_unix_truncates_toward_zero(sink):
    xf = configured(TimestampConverterValue, target__type="unix", unix__precision="seconds")
    before_epoch = dt.datetime(1969, 12, 31, 23, 59, 58, 500000, tzinfo=dt.UTC)
    assert xf.apply(sink(value=before_epoch)).value == -1


def test_field_in_struct(sink):
    schema = Schema.struct(
        [("id", INT32_SCHEMA), ("at", Schema(Type.STRING, optional=True))], name="E"
    )
    xf = configured(
        TimestampConverterValue, field="at", target__type="Timestamp", format="yyyy-MM-dd"
    )
    out = xf.apply(sink(value_schema=schema, value=Struct(schema, {"id": 1, "at": "2024-02-29"})))
    assert out.value_schema.name == "E"
    assert out.value_schema.field("at").schema == Timestamp.schema(optional=True)
    assert out.value.get("at") == dt.datetime(2024, 2, 29, tzinfo=dt.UTC)
    empty = xf.apply(sink(value_schema=schema, value=Struct(schema, {"id": 1, "at": None})))
    assert empty.value.get("at") is None
    tombstone = xf.apply(sink(value_schema=schema, value=None))
    assert tombstone.value is None


def test_field_in_map(sink):
    xf = configured(
        TimestampConverterValue, field="at", target__type="string", format="dd/MM/yyyy HH:mm"
    )
    assert xf.apply(sink(value={"at": MS, "x": 1})).value == {"at": "14/11/2023 22:13", "x": 1}
    record = sink(value=None)
    assert xf.apply(record) is record


def test_data_errors(sink):
    xf = configured(TimestampConverterValue, target__type="Timestamp")
    with pytest.raises(DataError):
        xf.apply(sink(value_schema=INT32_SCHEMA, value=5))
    with pytest.raises(DataError, match="format"):
        xf.apply(sink(value="2020-01-01"))
    parse = configured(TimestampConverterValue, target__type="unix", format="yyyy-MM-dd")
    with pytest.raises(DataError, match="parse"):
        parse.apply(sink(value="January"))
    with pytest.raises(DataError):
        configured(TimestampConverterValue, field="nope", target__type="unix").apply(
            sink(value_schema=Schema.struct([("a", INT64_SCHEMA)]), value=None)
        )


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"target__type": "date"}, "target.type"),  # case matters, as in Kafka
        ({}, "target.type"),
        ({"target__type": "string"}, "format"),
        ({"target__type": "unix", "format": "yyyy-bb"}, "format"),
        ({"target__type": "unix", "unix__precision": "minutes"}, "unix.precision"),
    ],
)
def test_config_errors(config, key):
    with pytest.raises(ConfigError) as info:
        configured(TimestampConverterValue, **config)
    assert info.value.name == key


# -------------------------------------------------------------- date patterns


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        ("yyyyMMdd", "20231114"),
        ("yyyy-MM-dd HH:mm:ss.SSS", "2023-11-14 22:13:20.123"),
        ("yyyyMMddHHmmssSSS", "20231114221320123"),
        ("EEE, d MMM yyyy hh:mm:ss a", "Tue, 14 Nov 2023 10:13:20 PM"),
        ("EEEE MMMM dd yy 'at' H'h'", "Tuesday November 14 23 at 22h"),
        ("yyyy-MM-dd'T'HH:mm:ssZ", "2023-11-14T22:13:20+0000"),
        ("D/yyyy", "318/2023"),
        ("''yyyy''", "'2023'"),
    ],
)
def test_date_format_round_trip(pattern, text):
    fmt = DateFormat.compile(pattern)
    assert fmt.format(fmt.parse(text)) == text


def test_date_format_parses_offsets():
    fmt = DateFormat.compile("yyyy-MM-dd'T'HH:mmXXX")
    assert fmt.parse("2023-11-14T23:13+01:00") == fmt.parse("2023-11-14T22:13Z")


def test_date_format_errors():
    with pytest.raises(DateFormatError):
        DateFormat.compile("yyyy-'MM")
    with pytest.raises(DateFormatError):
        DateFormat.compile("yyyy-MM-dd").parse("2023-13-01")
