"""Kafka's default partitioner hash, so keyed data lands in the same partition on the
embedded log and on Apache Kafka (and a topic can move between them).

`murmur2` is MurmurHash2 exactly as Kafka's `Utils.murmur2` computes it (seed
0x9747b28c, little-endian 4-byte words, the same tail and final mix) and returns the
same signed 32-bit int; `partition_for_key` is `toPositive(murmur2(key)) % n`.

Pure Python costs about a microsecond per short key, so `KeyPartitioner` memoises
recent keys: in change-data capture the same keys recur constantly. A batch of keys
(a source task's `SourceBatch`) takes `murmur2_many` / `KeyPartitioner.partitions`
instead, which run the same arithmetic on numpy columns:

1. the keys are joined into one byte buffer, and sorted by their number of 4-byte
   words, longest first, so word j of every key that has one is a prefix of the rows;
2. word j of those rows is read at once (a little-endian uint32 view of the buffer at
   every byte offset) and mixed into their hashes, for j = 0, 1, … up to the longest;
3. the tail (the last `length % 4` bytes) is one more such read, masked to its bytes;
4. the final mix, then the rows back in their order.

uint32 arrays wrap on multiplication exactly as the `& 0xFFFFFFFF` of the scalar code
(and Java's int arithmetic) does. Keys longer than `_LONG_KEY` bytes, which would add
a numpy pass per word for a handful of rows, are hashed one by one.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "KeyPartitioner",
    "murmur2",
    "murmur2_many",
    "partition_for_key",
    "partitions_for_keys",
    "to_positive",
]

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF
_MEMO_LIMIT = 65_536
_WORD = struct.Struct("<I")
_LONG_KEY = 1024
#: the bytes of a tail of 0..3 bytes within a little-endian uint32
_TAIL_MASKS = (0, 0xFF, 0xFFFF, 0xFFFFFF)


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


def murmur2_many(keys: Sequence[bytes]) -> np.ndarray:
    """`murmur2` of every key as a numpy int32 array, a column at a time (see the
    module docstring)."""
    import numpy as np  # here, not above: `import log` stays without numpy's import time

    m = np.uint32(_M)
    n = len(keys)
    lengths = np.fromiter(map(len, keys), dtype=np.int64, count=n)
    if n == 0:
        return np.empty(0, dtype=np.int32)
    long_rows = np.flatnonzero(lengths > _LONG_KEY)
    if len(long_rows):
        out = np.empty(n, dtype=np.int32)
        short_rows = np.flatnonzero(lengths <= _LONG_KEY)
        out[short_rows] = murmur2_many([keys[i] for i in short_rows.tolist()])
        out[long_rows] = [murmur2(keys[i]) for i in long_rows.tolist()]
        return out
    # Step 1: one buffer, zero bytes past its end so that every 4-byte read fits;
    # a uint32 "view" at byte stride reads the little-endian word at any offset
    data = np.frombuffer(b"".join(keys) + bytes(4), dtype=np.uint8)
    words_at = np.ndarray((len(data) - 3,), dtype="<u4", buffer=data, strides=(1,))
    starts = np.zeros(n, dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    words = lengths // 4
    order = np.argsort(-words, kind="stable")
    starts, lengths, words = starts[order], lengths[order], words[order]
    h = np.uint32(_SEED) ^ lengths.astype(np.uint32)
    # Step 2: word j of the rows that have one (a prefix, the rows being sorted)
    has = np.searchsorted(-words, -np.arange(int(words[0])), side="left")
    for j, rows in enumerate(has.tolist()):
        k = words_at[starts[:rows] + 4 * j] * m
        k ^= k >> 24
        k *= m
        h[:rows] = (h[:rows] * m) ^ k
    # Step 3: the tail bytes, xor-ed in together (they take distinct bits)
    tail = lengths % 4
    h ^= words_at[starts + 4 * words] & np.array(_TAIL_MASKS, dtype=np.uint32)[tail]
    h = np.where(tail > 0, h * m, h)
    # Step 4: the final mix, and the rows back in their order
    h ^= h >> 13
    h *= m
    h ^= h >> 15
    out = np.empty(n, dtype=np.uint32)
    out[order] = h
    return out.view(np.int32)


def partitions_for_keys(keys: Sequence[bytes], num_partitions: int) -> np.ndarray:
    """`partition_for_key` of every key, as a numpy int64 array."""
    import numpy as np

    if num_partitions < 1:  # numpy would answer 0 with a warning, not raise
        raise ValueError(f"num_partitions must be at least 1, got {num_partitions}")
    positive = murmur2_many(keys).view(np.uint32) & np.uint32(0x7FFFFFFF)
    return positive.astype(np.int64) % num_partitions


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

    def partitions(self, keys: Sequence[bytes], num_partitions: int) -> np.ndarray:
        """The partition of every key of a batch (`partitions_for_keys`): a column at
        a time, so the memo is not consulted; a numpy int64 array."""
        return partitions_for_keys(keys, num_partitions)
