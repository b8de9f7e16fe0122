"""HTTP basic authentication for the REST API (`rest.basic.auth.users.file`).

Kafka ships this as its BasicAuthSecurityRestExtension, whose login module reads a
properties file of `user: password` lines. The same files work here: one user per
line, `user: password`, `user=password` or `user password`, `#` and `!` comments.

Every request needs valid credentials (Kafka exempts only signed inter-worker
requests, which a standalone worker has none of) — except under the middleware's
`public` path prefixes, which hold only static files without data (the web console's
page and scripts, connect.rest.ui); otherwise the answer is 401 with a
`WWW-Authenticate` challenge and Kafka's error body. Passwords are compared in constant
time, and an unknown user costs the same comparison as a wrong password.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from starlette.types import ASGIApp, Receive, Scope, Send

from connect.api import ConfigError
from connect.rest.errors import error_response

__all__ = ["BasicAuth", "BasicAuthMiddleware"]

_USERS_FILE_KEY = "rest.basic.auth.users.file"
# A key ends at the first unescaped '=', ':' or whitespace (java.util.Properties).
_LINE = re.compile(r"((?:\\.|[^=:\s\\])+)\s*[=:]?\s*(.*)")
_UNAUTHORIZED = "User cannot access the resource."


class BasicAuth:
    """The users allowed in, and the check of an `Authorization` header."""

    def __init__(self, users: Mapping[str, str], *, realm: str = "Connect") -> None:
        if not users:
            raise ValueError("BasicAuth needs at least one user")
        self._users = {u.encode(): p.encode() for u, p in users.items()}
        self.realm = realm
        self._dummy = b"\0" * 32

    @classmethod
    def from_file(cls, path: str | Path) -> BasicAuth:
        """Users from a Kafka-style users file (see the module docstring)."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                _USERS_FILE_KEY, str(path), f"cannot read {path}: {exc.strerror}"
            ) from None
        except UnicodeDecodeError:
            raise ConfigError(_USERS_FILE_KEY, str(path), "the file is not UTF-8") from None
        users: dict[str, str] = {}
        for number, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            if not line or line[0] in "#!":
                continue
            match = _LINE.fullmatch(line)
            if match is None or not match.group(2):
                raise ConfigError(
                    _USERS_FILE_KEY, str(path), f"line {number} is not 'user: password'"
                )
            users[re.sub(r"\\(.)", r"\1", match.group(1))] = match.group(2)
        if not users:
            raise ConfigError(_USERS_FILE_KEY, str(path), "the file names no user")
        return cls(users)

    def check(self, authorization: str | None) -> bool:
        """Whether an `Authorization` header value carries a known user's password."""
        if not authorization:
            return False
        scheme, _, encoded = authorization.partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            decoded = base64.b64decode(encoded.strip(), validate=True)
        except (binascii.Error, ValueError):
            return False
        user, sep, password = decoded.partition(b":")
        if not sep:
            return False
        expected = self._users.get(user)
        ok = hmac.compare_digest(password, expected if expected is not None else self._dummy)
        return ok and expected is not None

    @property
    def challenge(self) -> str:
        return f'Basic realm="{self.realm}", charset="UTF-8"'


class BasicAuthMiddleware:
    """ASGI middleware: refuse HTTP requests without valid basic-auth credentials,
    except GETs of paths under `public` (a prefix and what lies below it)."""

    def __init__(self, app: ASGIApp, *, auth: BasicAuth, public: Sequence[str] = ()) -> None:
        self.app = app
        self.auth = auth
        self.public = tuple(p.rstrip("/") for p in public)

    def _is_public(self, scope: Scope) -> bool:
        if scope.get("method") not in ("GET", "HEAD"):
            return False
        path: str = scope.get("path", "")
        if ".." in path.split("/"):
            return False  # never let a dot-segment walk out of a public prefix
        return any(path == p or path.startswith(p + "/") for p in self.public)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self._is_public(scope):
            header = None
            for name, value in scope["headers"]:
                if name == b"authorization":
                    header = value.decode("latin-1")
                    break
            if not self.auth.check(header):
                response = error_response(
                    401, _UNAUTHORIZED, headers={"WWW-Authenticate": self.auth.challenge}
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
