"""Kafka's default partitioner hash, so keyed data lands in the same partition on the
embedded log and on Apache Kafka (and a topic can move between them).

`murmur2` is MurmurHash2 exactly as Kafka's `Utils.murmur2` computes it (seed
0x9747b28c, little-endian 4-byte words, the same tail and final mix) and returns the
same signed 32-bit int; `partition_for_key` is `toPositive(murmur2(key)) % n`.

Pure Python costs about a microsecond per short key, so `KeyPartitioner` memoises
recent keys: in change-data capture the same keys recur constantly.
"""

from __future__ import annotations

import struct

__all__ = ["KeyPartitioner", "murmur2", "partition_for_key", "to_positive"]

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF
_MEMO_LIMIT = 65_536
_WORD = struct.Struct("<I")


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 of `data`, as a signed 32-bit int."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    end = length - length % 4
    for (k,) in _WORD.iter_unpack(data[:end]):
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = length % 4
    if tail == 3:
        h ^= data[end + 2] << 16
    if tail >= 2:
        h ^= data[end + 1] << 8
    if tail >= 1:
        h ^= data[end]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(number: int) -> int:
    """Kafka's `Utils.toPositive`: clear the sign bit (not abs())."""
    return number & 0x7FFFFFFF


def partition_for_key(key: bytes, num_partitions: int) -> int:
    return to_positive(murmur2(key)) % num_partitions


class KeyPartitioner:
    """`partition_for_key` with a bounded memo of recent keys."""

    def __init__(self) -> None:
        self._memo: dict[bytes, int] = {}

    def partition(self, key: bytes, num_partitions: int) -> int:
        h = self._memo.get(key)
        if h is None:
            if len(self._memo) >= _MEMO_LIMIT:
                self._memo.clear()
            h = self._memo[key] = to_positive(murmur2(key))
        return h % num_partitions
