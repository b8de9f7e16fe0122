"""The batch byte format: round trips of every column combination, and the checks."""

from __future__ import annotations

import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from log.batch import (
    HEADER_SIZE,
    MAGIC,
    decode_columns,
    decode_records,
    encode_batch,
    parse_header,
    set_base_offset,
    verify_crc,
)
from log.compression import CODEC_IDS

maybe_bytes = st.one_of(st.none(), st.binary(max_size=40))
headers_st = st.lists(st.tuples(st.text(max_size=8), maybe_bytes), max_size=3).map(tuple)


@st.composite
def batches(draw: st.DrawFn) -> dict:
    n = draw(st.integers(1, 30))
    return {
        "values": draw(st.lists(maybe_bytes, min_size=n, max_size=n)),
        "keys": draw(st.one_of(st.none(), st.lists(maybe_bytes, min_size=n, max_size=n))),
        "timestamps": draw(
            st.one_of(st.none(), st.lists(st.integers(0, 2**62), min_size=n, max_size=n))
        ),
        "headers": draw(st.one_of(st.none(), st.lists(headers_st, min_size=n, max_size=n))),
        "codec": draw(st.sampled_from(sorted(CODEC_IDS.values()))),
        "base": draw(st.integers(0, 2**40)),
    }


@settings(max_examples=300, deadline=None)
@given(batches())
def test_round_trip(spec: dict) -> None:
    n = len(spec["values"])
    data = encode_batch(
        spec["values"],
        keys=spec["keys"],
        timestamps=spec["timestamps"],
        headers=spec["headers"],
        timestamp=123,
        codec=spec["codec"],
    )
    set_base_offset(data, spec["base"])
    buf = b"\x00" * 7 + bytes(data)  # decoding works at any position in a buffer
    header = parse_header(buf, 7)
    assert header.magic == MAGIC
    assert header.size == len(data)
    assert header.record_count == n
    assert header.base_offset == spec["base"]
    assert header.next_offset == spec["base"] + n
    assert verify_crc(buf, 7, header)
    records = decode_records(buf, 7, header, "t", 3)
    assert [r.offset for r in records] == list(range(spec["base"], spec["base"] + n))
    assert [r.value for r in records] == spec["values"]
    assert [r.key for r in records] == (spec["keys"] or [None] * n)
    expected_ts = spec["timestamps"] or [123] * n
    assert [r.timestamp for r in records] == expected_ts
    assert header.max_timestamp == max(expected_ts)
    assert [r.headers for r in records] == [tuple(h) for h in (spec["headers"] or [()] * n)]
    assert all(r.topic == "t" and r.partition == 3 for r in records)


def test_offset_deltas_and_min_offset() -> None:
    data = encode_batch(
        [b"a", b"b", b"c"],
        keys=[b"1", b"2", b"3"],
        base_offset=100,
        offset_deltas=[0, 5, 9],
        timestamps=[1, 2, 3],
    )
    header = parse_header(data)
    assert header.last_offset == 109 and header.next_offset == 110
    cols = decode_columns(data, 0, header)
    assert list(cols.offsets) == [100, 105, 109]
    recs = decode_records(data, 0, header, "t", 0, min_offset=101)
    assert [(r.offset, r.value) for r in recs] == [(105, b"b"), (109, b"c")]


def test_crc_covers_payload_and_attributes_but_not_base_offset() -> None:
    data = encode_batch([b"hello", b"world"])
    header = parse_header(data)
    set_base_offset(data, 99)  # not covered: still valid
    assert verify_crc(data, 0, parse_header(data))
    for position in (17, 20, 30, HEADER_SIZE, len(data) - 1):
        broken = bytearray(data)
        broken[position] ^= 0x01
        assert not verify_crc(broken, 0, parse_header(broken)), position
    assert header.crc == zlib.crc32(bytes(data[17:]))


def test_empty_batch_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one record"):
        encode_batch([])


def test_compression_shrinks_repetitive_payloads() -> None:
    values = [b"x" * 200] * 100
    plain = encode_batch(values)
    for name in ("gzip", "lz4", "zstd"):
        packed = encode_batch(values, codec=CODEC_IDS[name])
        assert len(packed) < len(plain) / 5, name
        header = parse_header(packed)
        assert [r.value for r in decode_records(packed, 0, header, "t", 0)] == values
