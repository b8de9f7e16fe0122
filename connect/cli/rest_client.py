"""How the operator's commands talk to a worker's REST API: the shared options
(`--url`, `--user`, `--password`, `--timeout`, `--json`, with the same environment
variables as `connect status`) and one call that turns every failure into a
one-line `CliRestError` (a command prints it and exits 1, never a traceback).

urllib, not an HTTP library: the CLI must start fast and needs one request or two.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import quote

__all__ = ["DEFAULT_URL", "CliRestError", "add_rest_options", "call", "path_name", "rest_url"]

DEFAULT_URL = "http://127.0.0.1:8083"


class CliRestError(Exception):
    """Why a request failed, in one line; `status` is the HTTP status if one came."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def add_rest_options(parser: argparse.ArgumentParser, *, inherited: bool = False) -> None:
    """The REST options on `parser`; `inherited=True` for a subcommand whose group has
    them too (see `connect.cli.options.add_everywhere`): given there, they win."""

    def default(value: Any) -> Any:
        return argparse.SUPPRESS if inherited else value

    parser.add_argument(
        "--url",
        type=rest_url,
        default=default(os.environ.get("CONNECT_REST_URL") or DEFAULT_URL),
        help="the worker's REST API; a URL without a scheme means http:// "
        f"(default: $CONNECT_REST_URL or {DEFAULT_URL})",
    )
    parser.add_argument(
        "--user",
        default=default(os.environ.get("CONNECT_REST_USER")),
        help="basic-auth user (default: $CONNECT_REST_USER)",
    )
    parser.add_argument(
        "--password",
        default=default(os.environ.get("CONNECT_REST_PASSWORD")),
        help="basic-auth password (default: $CONNECT_REST_PASSWORD, better than the flag, "
        "which other users can see in the process list)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=default(10.0),
        help="seconds to wait for the worker's answer (default: 10)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        default=default(False),
        help="print the API's JSON instead of a table",
    )


def rest_url(text: str) -> str:
    """`--url` as a base URL: `host:port` means `http://host:port` (as curl reads it);
    a scheme other than http or https is a usage error, not a failed request."""
    url = text.strip().rstrip("/")
    if "://" not in url:
        url = "http://" + url
    scheme = url.partition("://")[0].lower()
    if scheme not in ("http", "https"):
        raise argparse.ArgumentTypeError(f"{text!r} is not an http:// or https:// URL")
    if not url.partition("://")[2]:
        raise argparse.ArgumentTypeError(f"{text!r} names no host")
    return url


def path_name(name: str) -> str:
    """A connector name as one path segment."""
    return quote(name, safe="")


def call(args: argparse.Namespace, method: str, path: str, body: Any = None) -> Any:
    """The JSON answer of `method path` (None for an empty body)."""
    url = args.url.rstrip("/") + path
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Accept", "application/json")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if args.user is not None:
        token = f"{args.user}:{args.password or ''}".encode()
        request.add_header("Authorization", "Basic " + base64.b64encode(token).decode())
    try:
        with urllib.request.urlopen(request, timeout=args.timeout) as response:
            raw = response.read()
    except urllib.error.HTTPError as exc:
        raise CliRestError(
            f"{args.url} answered {exc.code}: {_error_message(exc)}", status=exc.code
        ) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise CliRestError(f"cannot reach the worker at {args.url}: {reason}") from None
    except ValueError as exc:
        raise CliRestError(f"bad --url {args.url!r}: {exc}") from None
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        raise CliRestError(f"{args.url} did not answer JSON; is it a Connect worker?") from None


def _error_message(exc: urllib.error.HTTPError) -> str:
    try:
        message = json.loads(exc.read()).get("message")
    except (ValueError, AttributeError, OSError):
        message = None
    hint = " (use --user/--password)" if exc.code == 401 else ""
    return (str(message) if message else exc.reason or "error") + hint
