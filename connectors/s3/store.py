"""One bucket, reached through boto3: every S3 call the connectors make, retried.

Each call is tried `1 + s3.part.retries` times while it fails transiently
(unreachable, timed out, 5xx, throttled), sleeping `s3.retry.backoff.ms` before the
first retry and twice as long before each next one (at most 10 s); then, or at once
for anything else, it raises the category from `connectors.s3.errors`. boto3's own
retries are off so that these keys alone decide.

`check_bucket` is what a task runs at start: one HeadBucket that turns a missing
bucket, refused credentials or an unreachable endpoint into an error whose message
says which — the task fails with it and the REST status shows it.

Conditional writes (`conditional=True`, the sink's `s3.conditional.writes`): an object
is completed — PutObject or CompleteMultipartUpload — with `If-None-Match: *`, so S3
never replaces a completed object. When S3 answers PreconditionFailed (an object is
there), one HeadObject compares its ETag with the one our bytes give (etags.py): equal
means it is our own object from before a crash, and the write counts as done; an
empty object is a torn PutObject (SeaweedFS shows one when a writer dies between the
request's headers and its body) and is replaced; else S3ObjectExistsError, which
fails the task. A store that answers NotImplemented to the
header is written to without it from then on (one warning).

Parts go up in the background (`submit`): two threads send them while the task
thread encodes the next records — the network wait and the request signing (hashlib,
sockets: both release the GIL) overlap the Python work. At most `IN_FLIGHT` parts are
queued or sending per task; `submit` blocks beyond that, so memory stays bounded.
Completions (`finish`) run on a third thread, which waits for an object's parts and
then completes it.

Thread safety: a boto3 client may be shared by threads; a Store holds nothing else
that changes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from connectors.s3.config import StoreSettings
from connectors.s3.errors import (
    S3ObjectExistsError,
    S3PreconditionFailed,
    S3StoreError,
    S3UnavailableError,
    classify,
)
from connectors.s3.etags import multipart_etag, normal, put_etag

__all__ = ["ObjectInfo", "Store"]

_log = logging.getLogger("connectors.s3")
_MAX_BACKOFF_S = 10.0
IN_FLIGHT = 3
UPLOAD_THREADS = 2
T = TypeVar("T")


class ObjectInfo:
    """A listed object: its key, size and ETag."""

    __slots__ = ("etag", "key", "size")

    def __init__(self, key: str, size: int, etag: str) -> None:
        self.key = key
        self.size = size
        self.etag = etag

    def __repr__(self) -> str:
        return f"ObjectInfo({self.key!r}, {self.size})"


class Store:
    """The bucket of a connector's config (see the module docstring)."""

    def __init__(
        self,
        settings: StoreSettings,
        *,
        sleep: Callable[[float], Any] = time.sleep,
        conditional: bool = False,
    ) -> None:
        self.settings = settings
        self.conditional = conditional
        self.bucket = settings.bucket
        self._pool: ThreadPoolExecutor | None = None
        self._committer: ThreadPoolExecutor | None = None
        self._slots = threading.BoundedSemaphore(IN_FLIGHT)
        self.endpoint = settings.url or f"https://s3.{settings.region}.amazonaws.com"
        self._sleep = sleep
        # boto3 is imported by the first Store, not with the module: the worker's own
        # process imports the connector classes to validate configs and never talks
        # to S3 (boto3 and botocore are ~24 MB of a process's memory).
        import boto3
        from botocore.config import Config

        session = boto3.session.Session(
            aws_access_key_id=settings.access_key_id or None,
            aws_secret_access_key=settings.secret_access_key.value or None,
            region_name=settings.region,
        )
        self.client = session.client(
            "s3",
            endpoint_url=settings.url,
            config=Config(
                retries={"max_attempts": 1, "mode": "standard"},
                connect_timeout=settings.connect_timeout_ms / 1000,
                read_timeout=settings.read_timeout_ms / 1000,
                s3={"addressing_style": "path" if settings.path_style else "auto"},
                max_pool_connections=16,
                # Checksums only where S3 demands one: the body is signed (SigV4) over
                # http, and a CRC per part on top costs CPU for nothing.
                request_checksum_calculation="when_required",
                response_checksum_validation="when_required",
            ),
        )

    # ----------------------------------------------------------- background parts

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        """Run `fn` on an upload thread; blocks while IN_FLIGHT calls are pending."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(UPLOAD_THREADS, thread_name_prefix="s3-upload")
        self._slots.acquire()
        try:
            future = self._pool.submit(fn)
        except BaseException:
            self._slots.release()
            raise
        future.add_done_callback(lambda _: self._slots.release())
        return future

    def finish(self, fn: Callable[[], T]) -> Future[T]:
        """Run `fn` — an object's completion, which waits for its parts — on the one
        committer thread: never on an upload thread, whose parts it may wait for."""
        if self._committer is None:
            self._committer = ThreadPoolExecutor(1, thread_name_prefix="s3-complete")
        return self._committer.submit(fn)

    def close(self) -> None:
        for pool in (self._committer, self._pool):
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
        self._pool = self._committer = None

    # ------------------------------------------------------------------ retries

    def call(self, operation: str, fn: Callable[[], T], *, key: str | None = None) -> T:
        """`fn()` with the retries of the module docstring."""
        attempts = 1 + self.settings.part_retries
        backoff = self.settings.retry_backoff_ms / 1000
        for attempt in range(attempts):
            try:
                return fn()
            except Exception as exc:  # botocore raises many unrelated types
                error = classify(
                    exc, operation, endpoint=self.endpoint, bucket=self.bucket, key=key
                )
                if not isinstance(error, S3UnavailableError) or attempt == attempts - 1:
                    raise error from exc
                delay = min(_MAX_BACKOFF_S, backoff * (2**attempt))
                _log.warning(
                    "%s; retry %d of %d in %.1f s", error, attempt + 1, attempts - 1, delay
                )
                self._sleep(delay)
        raise AssertionError("unreachable")

    # ----------------------------------------------------------------- the calls

    def check_bucket(self) -> None:
        """Raise the S3StoreError that says why the bucket cannot be used."""
        self.call("HeadBucket", lambda: self.client.head_bucket(Bucket=self.bucket))

    def put(self, key: str, body: bytes | bytearray | memoryview) -> None:
        data = bytes(body) if isinstance(body, memoryview) else body  # boto3 refuses views
        self._complete(
            "PutObject",
            key,
            lambda extra: self.client.put_object(Bucket=self.bucket, Key=key, Body=data, **extra),
            lambda: put_etag(data),
        )

    def create_multipart(self, key: str) -> str:
        response = self.call(
            "CreateMultipartUpload",
            lambda: self.client.create_multipart_upload(Bucket=self.bucket, Key=key),
            key=key,
        )
        return str(response["UploadId"])

    def upload_part(self, key: str, upload_id: str, number: int, body: bytes | bytearray) -> str:
        response = self.call(
            "UploadPart",
            lambda: self.client.upload_part(
                Bucket=self.bucket, Key=key, UploadId=upload_id, PartNumber=number, Body=body
            ),
            key=key,
        )
        return str(response["ETag"])

    def complete_multipart(self, key: str, upload_id: str, etags: list[str]) -> None:
        parts = [{"ETag": etag, "PartNumber": i + 1} for i, etag in enumerate(etags)]
        try:
            written = self._complete(
                "CompleteMultipartUpload",
                key,
                lambda extra: self.client.complete_multipart_upload(
                    Bucket=self.bucket,
                    Key=key,
                    UploadId=upload_id,
                    MultipartUpload={"Parts": parts},
                    **extra,
                ),
                lambda: multipart_etag(etags),
            )
        except S3ObjectExistsError:
            self.abort_multipart(key, upload_id)
            raise
        if not written:
            self.abort_multipart(key, upload_id)  # ours is there already: drop the parts

    def _complete(
        self,
        operation: str,
        key: str,
        send: Callable[[dict[str, str]], Any],
        our_etag: Callable[[], str],
    ) -> bool:
        """The call that makes an object visible, conditional when the store is (see
        the module docstring); False when our own object was there already."""
        if not self.conditional:
            self.call(operation, lambda: send({}), key=key)
            return True
        try:
            self.call(operation, lambda: send({"IfNoneMatch": "*"}), key=key)
            return True
        except S3PreconditionFailed:
            pass
        except S3StoreError as exc:
            if exc.code not in ("NotImplemented", "501"):
                raise
            _log.warning(
                "%s does not support conditional writes (%s): objects are written without "
                "If-None-Match from now on",
                self.endpoint,
                exc.code,
            )
            self.conditional = False
            self.call(operation, lambda: send({}), key=key)
            return True
        head = self.call(
            "HeadObject", lambda: self.client.head_object(Bucket=self.bucket, Key=key), key=key
        )
        theirs, ours = normal(str(head.get("ETag", ""))), our_etag()
        if theirs != ours and int(head.get("ContentLength", -1)) == 0:
            # A torn PutObject: SeaweedFS shows an empty object when the writer died
            # after the request's headers, before its body. Ours are never empty (a
            # set holds a record), so no writer completed it: replace it.
            _log.warning(
                "s3://%s/%s is an empty object left by a writer that died mid-upload: replacing it",
                self.bucket,
                key,
            )
            self.call(operation, lambda: send({}), key=key)
            return True
        if theirs != ours:
            raise S3ObjectExistsError(
                operation,
                endpoint=self.endpoint,
                bucket=self.bucket,
                key=key,
                code="PreconditionFailed",
                detail=f"its ETag is {theirs}, this writer's object's would be {ours}",
            )
        _log.info("s3://%s/%s is already there, identical: a replay", self.bucket, key)
        return False

    def abort_multipart(self, key: str, upload_id: str) -> None:
        """Best effort: an upload left behind is invisible and costs only storage."""
        try:
            self.call(
                "AbortMultipartUpload",
                lambda: self.client.abort_multipart_upload(
                    Bucket=self.bucket, Key=key, UploadId=upload_id
                ),
                key=key,
            )
        except S3StoreError as exc:
            _log.info("could not abort the upload of %s: %s", key, exc)

    def get(self, key: str) -> bytes:
        def fetch() -> bytes:
            response = self.client.get_object(Bucket=self.bucket, Key=key)
            return bytes(response["Body"].read())

        return self.call("GetObject", fetch, key=key)

    def list(self, prefix: str, *, start_after: str = "") -> Iterator[ObjectInfo]:
        """Every object under `prefix`, in key order, page by page (each page retried)."""
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"Bucket": self.bucket, "Prefix": prefix}
            if token:
                kwargs["ContinuationToken"] = token
            elif start_after:
                kwargs["StartAfter"] = start_after
            page = self.call(
                "ListObjectsV2", lambda kw=kwargs: self.client.list_objects_v2(**kw), key=prefix
            )
            for item in page.get("Contents", ()):
                yield ObjectInfo(
                    item["Key"], int(item.get("Size", 0)), str(item.get("ETag", "")).strip('"')
                )
            if not page.get("IsTruncated"):
                return
            token = page.get("NextContinuationToken")
