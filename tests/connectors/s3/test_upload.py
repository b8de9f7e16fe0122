"""ObjectUpload against the real endpoint: parts cut at fixed multiples of the part
size whatever the writes' sizes, so a replay's object has the same bytes and ETag."""

from __future__ import annotations

import hashlib
import random

from connectors.s3.config import STORE, StoreSettings
from connectors.s3.store import Store
from connectors.s3.upload import ObjectUpload
from tests.s3 import Bucket

PART = 5 * 1024 * 1024


def _store(bucket: Bucket) -> Store:
    return Store(StoreSettings.of(STORE.parse({**bucket.props, "s3.part.size": str(PART)})))


def _multipart_etag(data: bytes) -> str:
    """S3's ETag of a multipart object: the MD5 of its parts' MD5s, dash, part count."""
    digests = [hashlib.md5(data[i : i + PART]).digest() for i in range(0, len(data), PART)]
    return f"{hashlib.md5(b''.join(digests)).hexdigest()}-{len(digests)}"


def _upload(store: Store, key: str, data: bytes, seed: int) -> None:
    rng = random.Random(seed)
    upload = ObjectUpload(store, key, PART)
    pos = 0
    while pos < len(data):
        n = rng.choice((1, 700, 4096, 300_000, 2 * PART + 17))
        chunk = data[pos : pos + n]
        if rng.random() < 0.5:
            upload.write(chunk)
        else:  # many small pieces, as the JSON lines writer hands them over
            upload.extend(chunk[i : i + 997] for i in range(0, len(chunk), 997))
        pos += n
    assert upload.size == len(data)
    upload.complete().result(timeout=60)


def test_parts_are_cut_at_fixed_offsets_whatever_the_writes(s3_bucket: Bucket) -> None:
    data = random.Random(7).randbytes(3 * PART + 12345)
    store = _store(s3_bucket)
    try:
        _upload(store, "a", data, seed=1)
        _upload(store, "b", data, seed=2)  # other write sizes: the same object
    finally:
        store.close()
    etags = [
        s3_bucket.client.head_object(Bucket=s3_bucket.name, Key=k)["ETag"].strip('"')
        for k in ("a", "b")
    ]
    assert etags == [_multipart_etag(data)] * 2
    assert s3_bucket.get("a") == s3_bucket.get("b") == data


def test_a_small_object_is_one_put_and_an_empty_write_changes_nothing(
    s3_bucket: Bucket,
) -> None:
    store = _store(s3_bucket)
    try:
        upload = ObjectUpload(store, "small", PART)
        upload.extend([b"a\n", b"", bytearray(b"b\n")])
        upload.write(b"")
        upload.write(memoryview(b"c\n"))
        upload.complete().result(timeout=30)
    finally:
        store.close()
    assert s3_bucket.get("small") == b"a\nb\nc\n"
    etag = s3_bucket.client.head_object(Bucket=s3_bucket.name, Key="small")["ETag"]
    assert etag.strip('"') == hashlib.md5(b"a\nb\nc\n").hexdigest()  # not multipart
