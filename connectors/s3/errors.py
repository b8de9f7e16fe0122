"""What can go wrong talking to S3, as categories the connectors act on.

    ConnectError
    └── S3StoreError             an S3 request failed (operation, bucket, key, code)
        ├── S3UnavailableError   transient: unreachable, timed out, 5xx, throttled
        │                        (also a RetriableError: retry later)
        ├── S3AccessError        credentials refused or not allowed: fix the config
        ├── S3BucketMissingError the bucket does not exist: fix the config
        ├── S3PreconditionFailed a conditional write found an object under its key
        │                        (the store then compares ETags)
        └── S3ObjectExistsError  another object holds the key: a conditional write
                                 refused to replace it

`classify` turns a botocore exception into one of these; the message is built from
the facts, so a task's status says which endpoint, bucket and key and what S3 said —
and never a secret (boto3's messages carry none).
"""

from __future__ import annotations

from connect.api import ConnectError, RetriableError

__all__ = [
    "S3AccessError",
    "S3BucketMissingError",
    "S3ObjectExistsError",
    "S3PreconditionFailed",
    "S3StoreError",
    "S3UnavailableError",
    "classify",
]

_ACCESS_CODES = {
    "AccessDenied",
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "ExpiredToken",
    "InvalidToken",
    "AllAccessDisabled",
    "AuthorizationHeaderMalformed",
    "403",
}
_MISSING_BUCKET_CODES = {"NoSuchBucket"}
_TRANSIENT_CODES = {
    "InternalError",
    "ServiceUnavailable",
    "SlowDown",
    "RequestTimeout",
    "RequestTimeTooSkewed",
    "Throttling",
    # An upload the store forgot (e.g. restarted without it): start the object over.
    "NoSuchUpload",
    "ThrottlingException",
    # Two conditional writes of one key in flight at once: S3 asks to retry.
    "ConditionalRequestConflict",
    "500",
    "502",
    "503",
    "504",
}


class S3StoreError(ConnectError):
    """An S3 request failed; the facts are attributes and make up the message."""

    def __init__(
        self,
        operation: str,
        *,
        endpoint: str,
        bucket: str,
        key: str | None = None,
        code: str | None = None,
        detail: str = "",
    ) -> None:
        self.operation = operation
        self.endpoint = endpoint
        self.bucket = bucket
        self.key = key
        self.code = code
        self.detail = detail
        where = f"s3://{bucket}/{key}" if key else f"bucket {bucket}"
        what = f"{code}: {detail}" if code else detail
        super().__init__(f"{self._summary()}: {operation} on {where} at {endpoint} failed ({what})")

    def _summary(self) -> str:
        return "S3 request failed"


class S3UnavailableError(S3StoreError, RetriableError):
    def _summary(self) -> str:
        return "S3 endpoint unavailable"


class S3AccessError(S3StoreError):
    def _summary(self) -> str:
        return "S3 refused the credentials or the access (check aws.access.key.id, "
        "aws.secret.access.key and the bucket's policy)"


class S3BucketMissingError(S3StoreError):
    def _summary(self) -> str:
        return "S3 bucket does not exist (check s3.bucket.name)"


class S3PreconditionFailed(S3StoreError):
    def _summary(self) -> str:
        return "S3 already holds an object under this key"


class S3ObjectExistsError(S3StoreError):
    def _summary(self) -> str:
        return (
            "S3 already holds another object under this key, and a conditional write "
            "refused to replace it: another writer completed it (a zombie task, or an "
            "earlier run with other settings); check both, or set s3.conditional.writes="
            "false to let this writer replace it"
        )


def classify(
    exc: BaseException, operation: str, *, endpoint: str, bucket: str, key: str | None = None
) -> S3StoreError:
    """The category of a botocore exception (anything unknown counts as transient).

    botocore is imported here, where an exception from it is in hand, so that importing
    the connectors (to validate a config) does not load it."""
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        ConnectionClosedError,
        ConnectTimeoutError,
        EndpointConnectionError,
        NoCredentialsError,
        PartialCredentialsError,
        ReadTimeoutError,
    )

    facts = {"endpoint": endpoint, "bucket": bucket, "key": key}
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code = str(
            error.get("Code") or exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", "")
        )
        detail = str(error.get("Message") or "")
        if code in _MISSING_BUCKET_CODES or (code == "404" and operation == "HeadBucket"):
            return S3BucketMissingError(operation, code=code, detail=detail, **facts)
        if code in _ACCESS_CODES:
            return S3AccessError(operation, code=code, detail=detail, **facts)
        if code in ("PreconditionFailed", "412"):
            return S3PreconditionFailed(operation, code=code, detail=detail, **facts)
        if code in _TRANSIENT_CODES:
            return S3UnavailableError(operation, code=code, detail=detail, **facts)
        return S3StoreError(operation, code=code, detail=detail, **facts)
    if isinstance(exc, (NoCredentialsError, PartialCredentialsError)):
        return S3AccessError(operation, code="NoCredentials", detail=str(exc), **facts)
    if isinstance(
        exc, (EndpointConnectionError, ConnectTimeoutError, ReadTimeoutError, ConnectionClosedError)
    ):
        return S3UnavailableError(operation, code="Unreachable", detail=str(exc), **facts)
    if isinstance(exc, (BotoCoreError, OSError)):
        return S3UnavailableError(operation, code=type(exc).__name__, detail=str(exc), **facts)
    return S3StoreError(operation, code=type(exc).__name__, detail=str(exc), **facts)
