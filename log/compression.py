"""Batch compression codecs, numbered as in Kafka's batch attributes.

A whole batch payload is compressed at once (never record by record), so the codec
cost is paid once per batch. gzip comes from the standard library; lz4 and zstd from
the well-kept `lz4` and `zstandard` packages. Snappy (Kafka's codec 2) is not offered:
it has no maintained pure-wheel binding here.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

import lz4.frame
import zstandard

__all__ = ["CODEC_IDS", "CODEC_NAMES", "compress", "decompress"]

NONE, GZIP, LZ4, ZSTD = 0, 1, 3, 4
CODEC_IDS: dict[str, int] = {"none": NONE, "gzip": GZIP, "lz4": LZ4, "zstd": ZSTD}
CODEC_NAMES: dict[int, str] = {v: k for k, v in CODEC_IDS.items()}

_zstd_c = zstandard.ZstdCompressor(level=3)
_zstd_d = zstandard.ZstdDecompressor()


def _gzip(data: bytes) -> bytes:
    return zlib.compress(data, 6, wbits=31)


def _gunzip(data: bytes) -> bytes:
    return zlib.decompress(data, wbits=31)


def _unzstd(data: bytes) -> bytes:
    # Frames written by one-shot compress() carry their content size.
    return _zstd_d.decompress(data)


_COMPRESS: dict[int, Callable[[bytes], bytes]] = {
    GZIP: _gzip,
    LZ4: lz4.frame.compress,
    ZSTD: _zstd_c.compress,
}
_DECOMPRESS: dict[int, Callable[[bytes], bytes]] = {
    GZIP: _gunzip,
    LZ4: lz4.frame.decompress,
    ZSTD: _unzstd,
}


def compress(codec: int, data: bytes) -> bytes:
    return _COMPRESS[codec](data)


def decompress(codec: int, data: bytes) -> bytes:
    try:
        fn = _DECOMPRESS[codec]
    except KeyError:
        raise ValueError(f"unknown compression codec {codec}") from None
    return fn(data)
