"""The converter's view of a schema registry: a small protocol, two implementations,
and the cache that keeps HTTP off the hot path.

    SchemaRegistryClient (protocol)   register · lookup · get_schema · latest
    ├── HttpSchemaRegistryClient      any Confluent-compatible registry, over HTTP/1.1
    │                                 keep-alive (http.client), fail-over across URLs,
    │                                 basic auth
    ├── MemorySchemaRegistryClient    in memory, for tests; counts its calls
    └── CachedSchemaRegistryClient    wraps one of the above: (subject, schema) → id and
                                      id → schema are remembered for good, the latest
                                      version of a subject for `latest.cache.ttl.sec`

`client_for(urls, …)` picks the implementation from `schema.registry.url`:
`http(s)://…` (comma-separated for fail-over), `mock://<scope>` (a memory registry
shared by every converter naming the same scope, as Confluent's serializers offer), or
`embedded` — the registry running inside this worker, which its package installs with
`set_embedded_factory` (until it does, `embedded` is refused with a ConfigError).

Errors:

    ConnectError
    ├── RegistryClientError          the registry answered with an error; keeps
    │   │                            `http_status`, `error_code`, `message`
    │   └── SchemaNotFoundError      404: unknown subject, version or schema id
    └── RetriableError
        └── RegistryUnavailableError no URL answered (connection refused, timeout, 5xx)

The converter turns RegistryClientError into a ConversionError (a DataError: the
record goes to the dead-letter queue when tolerance allows), and lets
RegistryUnavailableError through so the worker retries instead of dropping records.
"""

from __future__ import annotations

import base64
import http.client
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol
from urllib.parse import quote, unquote, urlsplit

import orjson

from connect.api.errors import ConfigError, ConnectError, RetriableError

__all__ = [
    "CachedSchemaRegistryClient",
    "HttpSchemaRegistryClient",
    "MemorySchemaRegistryClient",
    "RegisteredSchema",
    "RegistryClientError",
    "RegistryUnavailableError",
    "SchemaNotFoundError",
    "SchemaRegistryClient",
    "client_for",
    "set_embedded_factory",
]

EMBEDDED_URL = "embedded"
MOCK_SCHEME = "mock://"
_CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
_ACCEPT = (
    "application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json, application/json"
)


class RegisteredSchema(NamedTuple):
    schema_id: int
    version: int
    schema: str


class RegistryClientError(ConnectError):
    """The registry refused a request; the facts are Confluent's error body."""

    def __init__(self, http_status: int, error_code: int, message: str) -> None:
        self.http_status = http_status
        self.error_code = error_code
        self.message = message
        super().__init__(f"{message} (HTTP {http_status}, error code {error_code})")


class SchemaNotFoundError(RegistryClientError):
    """A 404: the subject, version or schema id does not exist."""


class RegistryUnavailableError(RetriableError):
    """No registry URL could be reached (or each answered with a server error)."""

    def __init__(self, urls: Sequence[str], reason: str) -> None:
        self.urls = list(urls)
        self.reason = reason
        super().__init__(f"schema registry unavailable at {', '.join(self.urls)}: {reason}")


class SchemaRegistryClient(Protocol):
    """What the converter needs from a registry (schemas are Avro JSON text)."""

    def register(self, subject: str, schema: str) -> int:
        """Register `schema` under `subject` (or find it there); its global id."""
        ...

    def lookup(self, subject: str, schema: str) -> int:
        """The id of `schema` if `subject` already has it; SchemaNotFoundError if not."""
        ...

    def get_schema(self, schema_id: int) -> str:
        """The schema text of a global id; SchemaNotFoundError if unknown."""
        ...

    def latest(self, subject: str) -> RegisteredSchema:
        """The newest live version of `subject`; SchemaNotFoundError if none."""
        ...


# ------------------------------------------------------------------------- memory


class MemorySchemaRegistryClient:
    """A registry in a dict: one id per distinct schema text, versions per subject,
    no compatibility checks. `calls` counts the requests each method served."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._ids: dict[str, int] = {}
        self._schemas: dict[int, str] = {}
        self._subjects: dict[str, list[int]] = {}

    def register(self, subject: str, schema: str) -> int:
        with self._lock:
            self.calls["register"] += 1
            schema_id = self._ids.get(schema)
            if schema_id is None:
                schema_id = self._ids[schema] = len(self._ids) + 1
                self._schemas[schema_id] = schema
            versions = self._subjects.setdefault(subject, [])
            if schema_id not in versions:
                versions.append(schema_id)
            return schema_id

    def lookup(self, subject: str, schema: str) -> int:
        with self._lock:
            self.calls["lookup"] += 1
            schema_id = self._ids.get(schema)
            if subject not in self._subjects:
                raise SchemaNotFoundError(404, 40401, f"Subject '{subject}' not found.")
            if schema_id is None or schema_id not in self._subjects[subject]:
                raise SchemaNotFoundError(404, 40403, "Schema not found")
            return schema_id

    def get_schema(self, schema_id: int) -> str:
        with self._lock:
            self.calls["get_schema"] += 1
            try:
                return self._schemas[schema_id]
            except KeyError:
                raise SchemaNotFoundError(404, 40403, f"Schema {schema_id} not found") from None

    def latest(self, subject: str) -> RegisteredSchema:
        with self._lock:
            self.calls["latest"] += 1
            versions = self._subjects.get(subject)
            if not versions:
                raise SchemaNotFoundError(404, 40401, f"Subject '{subject}' not found.")
            schema_id = versions[-1]
            return RegisteredSchema(schema_id, len(versions), self._schemas[schema_id])


_MOCK_SCOPES: dict[str, MemorySchemaRegistryClient] = {}
_MOCK_LOCK = threading.Lock()


def mock_registry(scope: str) -> MemorySchemaRegistryClient:
    """The memory registry of a `mock://<scope>` URL (created on first use)."""
    with _MOCK_LOCK:
        client = _MOCK_SCOPES.get(scope)
        if client is None:
            client = _MOCK_SCOPES[scope] = MemorySchemaRegistryClient()
        return client


def drop_mock_registry(scope: str) -> None:
    with _MOCK_LOCK:
        _MOCK_SCOPES.pop(scope, None)


# --------------------------------------------------------------------------- HTTP


class _Endpoint:
    """One base URL and its kept-alive connection."""

    def __init__(self, url: str, timeout_s: float) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self.url = url
        self.https = parts.scheme == "https"
        self.host = parts.hostname
        self.port = parts.port or (443 if self.https else 80)
        self.base_path = parts.path.rstrip("/")
        self.userinfo = (
            f"{unquote(parts.username)}:{unquote(parts.password or '')}" if parts.username else None
        )
        self.timeout_s = timeout_s
        self.conn: http.client.HTTPConnection | None = None

    def connection(self) -> http.client.HTTPConnection:
        if self.conn is None:
            cls = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
            self.conn = cls(self.host, self.port, timeout=self.timeout_s)
        return self.conn

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


class HttpSchemaRegistryClient:
    """Talks to a Confluent-compatible registry. Each URL keeps one HTTP/1.1
    connection open; a request that fails on a stale connection is retried once on a
    fresh one, then on the next URL. Not for concurrent use by many threads at once
    (calls are serialized by a lock; the cache in front makes them rare)."""

    def __init__(
        self,
        urls: Sequence[str],
        *,
        user_info: str | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        if not urls:
            raise ValueError("at least one schema registry URL is needed")
        self._endpoints = [_Endpoint(u.strip(), timeout_s) for u in urls]
        self._user_info = user_info
        self._lock = threading.Lock()
        self.requests = 0

    def close(self) -> None:
        with self._lock:
            for endpoint in self._endpoints:
                endpoint.close()

    # ---------------------------------------------------------------- the protocol

    def register(self, subject: str, schema: str) -> int:
        body = self._request(
            "POST", f"/subjects/{quote(subject, safe='')}/versions", {"schema": schema}
        )
        return int(body["id"])

    def lookup(self, subject: str, schema: str) -> int:
        body = self._request("POST", f"/subjects/{quote(subject, safe='')}", {"schema": schema})
        return int(body["id"])

    def get_schema(self, schema_id: int) -> str:
        body = self._request("GET", f"/schemas/ids/{int(schema_id)}")
        if body.get("schemaType", "AVRO") != "AVRO":
            raise RegistryClientError(
                200, -1, f"schema {schema_id} is {body['schemaType']}, not AVRO"
            )
        return str(body["schema"])

    def latest(self, subject: str) -> RegisteredSchema:
        body = self._request("GET", f"/subjects/{quote(subject, safe='')}/versions/latest")
        return RegisteredSchema(int(body["id"]), int(body["version"]), str(body["schema"]))

    # ---------------------------------------------------------------- transport

    def _headers(self, endpoint: _Endpoint, has_body: bool) -> dict[str, str]:
        headers = {"Accept": _ACCEPT}
        if has_body:
            headers["Content-Type"] = _CONTENT_TYPE
        user_info = self._user_info or endpoint.userinfo
        if user_info:
            token = base64.b64encode(user_info.encode()).decode("ascii")
            headers["Authorization"] = f"Basic {token}"
        return headers

    def _request(self, method: str, path: str, body: Any = None) -> Any:
        payload = orjson.dumps(body) if body is not None else None
        last = "no attempt"
        with self._lock:
            for endpoint in self._endpoints:
                for attempt in (1, 2):  # a kept-alive connection may have gone stale
                    try:
                        conn = endpoint.connection()
                        conn.request(
                            method,
                            endpoint.base_path + path,
                            body=payload,
                            headers=self._headers(endpoint, payload is not None),
                        )
                        response = conn.getresponse()
                        data = response.read()
                        status = response.status
                        self.requests += 1
                    except (OSError, http.client.HTTPException) as exc:
                        endpoint.close()
                        last = f"{endpoint.url}: {exc!r}"
                        if attempt == 2:
                            break
                        continue
                    if response.will_close:
                        endpoint.close()
                    if status >= 500:
                        last = f"{endpoint.url}: HTTP {status} {data[:200]!r}"
                        break  # a server fault: try the next URL
                    return _answer(status, data)
        raise RegistryUnavailableError([e.url for e in self._endpoints], last)


def _answer(status: int, data: bytes) -> Any:
    try:
        body = orjson.loads(data) if data else None
    except orjson.JSONDecodeError:
        body = None
    if 200 <= status < 300:
        if body is None:
            raise RegistryClientError(status, -1, f"unreadable registry answer {data[:200]!r}")
        return body
    if isinstance(body, dict):
        code, message = int(body.get("error_code", -1)), str(body.get("message", ""))
    else:
        code, message = -1, data[:200].decode("utf-8", "replace")
    cls = SchemaNotFoundError if status == 404 else RegistryClientError
    raise cls(status, code, message)


# -------------------------------------------------------------------------- cache


class CachedSchemaRegistryClient:
    """Remembers every answer that cannot change: (subject, schema) → id from
    register and lookup, id → schema text. `latest` answers are kept for
    `latest_ttl_s` seconds (None: for good, as Confluent's default -1)."""

    def __init__(
        self,
        inner: SchemaRegistryClient,
        *,
        latest_ttl_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.inner = inner
        self._ids: dict[tuple[str, str], int] = {}
        self._schemas: dict[int, str] = {}
        self._latest: dict[str, tuple[float, RegisteredSchema]] = {}
        self._latest_ttl_s = latest_ttl_s
        self._clock = clock

    def register(self, subject: str, schema: str) -> int:
        key = (subject, schema)
        schema_id = self._ids.get(key)
        if schema_id is None:
            schema_id = self._ids[key] = self.inner.register(subject, schema)
            self._schemas.setdefault(schema_id, schema)
        return schema_id

    def lookup(self, subject: str, schema: str) -> int:
        key = (subject, schema)
        schema_id = self._ids.get(key)
        if schema_id is None:
            schema_id = self._ids[key] = self.inner.lookup(subject, schema)
            self._schemas.setdefault(schema_id, schema)
        return schema_id

    def get_schema(self, schema_id: int) -> str:
        schema = self._schemas.get(schema_id)
        if schema is None:
            schema = self._schemas[schema_id] = self.inner.get_schema(schema_id)
        return schema

    def latest(self, subject: str) -> RegisteredSchema:
        now = self._clock()
        cached = self._latest.get(subject)
        if cached is not None and (
            self._latest_ttl_s is None or now - cached[0] < self._latest_ttl_s
        ):
            return cached[1]
        answer = self.inner.latest(subject)
        self._latest[subject] = (now, answer)
        self._schemas.setdefault(answer.schema_id, answer.schema)
        return answer


# ------------------------------------------------------------------------ factory

EmbeddedFactory = Callable[[Mapping[str, Any]], SchemaRegistryClient]
_embedded_factory: EmbeddedFactory | None = None


def set_embedded_factory(factory: EmbeddedFactory | None) -> None:
    """Install (or remove) how `schema.registry.url=embedded` reaches the registry
    running in this process. The registry package calls this when it starts; the
    factory gets the converter's configs and returns a client (no HTTP needed)."""
    global _embedded_factory
    _embedded_factory = factory


def _install_local_registry() -> None:
    """A worker names its log (connect.registry.local); start a registry over it."""
    from connect.registry.local import local_log, remember_uninstall

    log, topic = local_log()
    if log is not None:
        from connect.registry.embedded import install_embedded_registry

        remember_uninstall(install_embedded_registry(log, topic=topic))


def client_for(
    urls: Sequence[str],
    *,
    user_info: str | None = None,
    configs: Mapping[str, Any] | None = None,
    config_name: str = "schema.registry.url",
) -> SchemaRegistryClient:
    """The (uncached) client for the `schema.registry.url` list."""
    if not urls:
        raise ConfigError(config_name, None, "a schema registry URL is required")
    first = urls[0].strip()
    if first == EMBEDDED_URL:
        if _embedded_factory is None:
            _install_local_registry()
        if _embedded_factory is None:
            raise ConfigError(config_name, first, "no embedded schema registry runs in this worker")
        return _embedded_factory(configs or {})
    if first.startswith(MOCK_SCHEME):
        if len(urls) > 1:
            raise ConfigError(config_name, ",".join(urls), "a mock:// URL must stand alone")
        return mock_registry(first[len(MOCK_SCHEME) :])
    try:
        return HttpSchemaRegistryClient(urls, user_info=user_info)
    except ValueError as exc:
        raise ConfigError(config_name, ",".join(urls), str(exc)) from None
