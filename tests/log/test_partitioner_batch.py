"""The batch partitioner (`murmur2_many`, `partitions_for_keys`) equals Kafka's
per-key murmur2 for every key: Kafka's own test vectors, then random keys of every
length checked against the scalar function."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from log.partitioner import (
    _LONG_KEY,
    KeyPartitioner,
    murmur2,
    murmur2_many,
    partition_for_key,
    partitions_for_keys,
    to_positive,
)

#: Apache Kafka's `UtilsTest.testMurmur2` vectors (and the empty key's hash)
KAFKA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
    b"": 275646681,
}


def test_kafka_vectors() -> None:
    keys = list(KAFKA_VECTORS)
    assert [murmur2(k) for k in keys] == list(KAFKA_VECTORS.values())
    got = murmur2_many(keys)
    assert got.dtype == np.int32
    assert got.tolist() == list(KAFKA_VECTORS.values())


def test_a_negative_hash_clears_the_sign_bit() -> None:
    """Kafka's toPositive is `& 0x7fffffff`, not abs(): "foobar" hashes negative."""
    expected = (-790332482 & 0x7FFFFFFF) % 7
    assert to_positive(-790332482) % 7 == expected
    assert partitions_for_keys([b"foobar"], 7).tolist() == [expected]


def test_every_length_from_0_to_100_in_one_batch() -> None:
    rng = np.random.default_rng(7)
    keys = [rng.bytes(n) for n in range(101)]
    rng.shuffle(keys)  # the batch sorts by length inside; the order must come back
    assert murmur2_many(keys).tolist() == [murmur2(k) for k in keys]


def test_long_keys_mixed_with_short_ones() -> None:
    keys = [b"a", b"x" * (_LONG_KEY + 1), b"", b"0123456789", bytes(range(256)) * 20]
    assert murmur2_many(keys).tolist() == [murmur2(k) for k in keys]


def test_no_keys() -> None:
    assert murmur2_many([]).tolist() == []
    assert partitions_for_keys([], 3).tolist() == []


def test_a_partition_count_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="num_partitions"):
        partitions_for_keys([b"k"], 0)


@settings(max_examples=300, deadline=None)
@given(keys=st.lists(st.binary(max_size=100), max_size=60), count=st.integers(1, 10_000))
def test_equals_the_scalar_function(keys: list[bytes], count: int) -> None:
    assert murmur2_many(keys).tolist() == [murmur2(k) for k in keys]
    expected = [partition_for_key(k, count) for k in keys]
    assert partitions_for_keys(keys, count).tolist() == expected
    partitioner = KeyPartitioner()
    assert partitioner.partitions(keys, count).tolist() == expected
    assert [partitioner.partition(k, count) for k in keys] == expected


@settings(max_examples=50, deadline=None)
@given(
    keys=st.lists(
        st.one_of(st.binary(max_size=3), st.binary(min_size=4, max_size=12)),
        min_size=100,
        max_size=400,
    )
)
def test_many_short_keys_of_mixed_lengths(keys: list[bytes]) -> None:
    """The shapes of real keys: many rows, few distinct lengths, repeats."""
    assert murmur2_many(keys + keys[:10]).tolist() == [murmur2(k) for k in keys + keys[:10]]
