"""The ETags S3 gives objects, computed on our side: how a conditional write that
found an object under its key tells its own earlier copy (a replay after a crash)
from another writer's object.

- a PutObject's ETag is the MD5 of the body;
- a multipart object's is the MD5 of its parts' MD5s (binary, in order), then `-` and
  the part count — and each part's ETag is that part's MD5, which UploadPart returns.

Parts are cut at fixed offsets (upload.py), so equal bytes give equal ETags. Stores
that encrypt with customer or KMS keys give other ETags: there a replay is refused as
a different object, and `s3.conditional.writes=false` is the way out.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

__all__ = ["multipart_etag", "normal", "put_etag"]


def normal(etag: str) -> str:
    """An ETag without its quotes, lower case."""
    return etag.strip().strip('"').lower()


def put_etag(body: bytes | bytearray) -> str:
    return hashlib.md5(body, usedforsecurity=False).hexdigest()


def multipart_etag(part_etags: Sequence[str]) -> str:
    digests = b"".join(bytes.fromhex(normal(e)) for e in part_etags)
    return f"{hashlib.md5(digests, usedforsecurity=False).hexdigest()}-{len(part_etags)}"
