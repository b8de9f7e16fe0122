"""`connect status`: the state of every connector and task of a running worker, read
from its REST API (`GET /connectors?expand=status&expand=info`).

    CONNECTOR  TYPE    STATE    WORKER          TRACE
    src        source  RUNNING  127.0.0.1:8083
      task 0           FAILED   127.0.0.1:8083  RuntimeError: boom

`--json` prints the API's answer as it is. A worker that cannot be reached, or that
refuses the request, gets one line on stderr and exit status 1. Credentials come from
`--user`/`--password` or CONNECT_REST_USER / CONNECT_REST_PASSWORD.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import urllib.error
import urllib.request
from typing import Any

__all__ = ["register"]

DEFAULT_URL = "http://127.0.0.1:8083"
_HEADER = ("CONNECTOR", "TYPE", "STATE", "WORKER", "TRACE")


class StatusError(Exception):
    """Why the status could not be read, in one line."""


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "status",
        help="show the connectors and tasks of a running worker",
        description="Show the state of every connector and task of a running worker.",
    )
    parser.add_argument(
        "--url",
        default=os.environ.get("CONNECT_REST_URL", DEFAULT_URL),
        help=f"the worker's REST API (default $CONNECT_REST_URL or {DEFAULT_URL})",
    )
    parser.add_argument(
        "--user", default=os.environ.get("CONNECT_REST_USER"), help="basic-auth user"
    )
    parser.add_argument(
        "--password",
        default=os.environ.get("CONNECT_REST_PASSWORD"),
        help="basic-auth password (better: $CONNECT_REST_PASSWORD)",
    )
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds (default 10)")
    parser.add_argument("--json", action="store_true", help="print the API's JSON")
    parser.set_defaults(run=_status)


def _status(args: argparse.Namespace) -> int:
    try:
        connectors = _fetch(args)
    except StatusError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(connectors, indent=2, sort_keys=True))
    else:
        print(render(connectors))
    return 0


def _fetch(args: argparse.Namespace) -> dict[str, Any]:
    url = args.url.rstrip("/") + "/connectors?expand=status&expand=info"
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    if args.user is not None:
        token = f"{args.user}:{args.password or ''}".encode()
        request.add_header("Authorization", "Basic " + base64.b64encode(token).decode())
    try:
        with urllib.request.urlopen(request, timeout=args.timeout) as response:
            body = response.read()
    except urllib.error.HTTPError as exc:
        raise StatusError(f"{args.url} answered {exc.code}: {_error_message(exc)}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise StatusError(f"cannot reach the worker at {args.url}: {reason}") from None
    except ValueError as exc:
        raise StatusError(f"bad --url {args.url!r}: {exc}") from None
    try:
        data = json.loads(body)
    except ValueError:
        raise StatusError(f"{args.url} did not answer JSON; is it a Connect worker?") from None
    if not isinstance(data, dict):
        raise StatusError(f"{args.url} answered {type(data).__name__}, not a connector map")
    return data


def _error_message(exc: urllib.error.HTTPError) -> str:
    try:
        message = json.loads(exc.read()).get("message")
    except (ValueError, AttributeError, OSError):
        message = None
    hint = " (use --user/--password)" if exc.code == 401 else ""
    return (str(message) if message else exc.reason or "error") + hint


def summary(trace: str | None) -> str:
    """One line of a trace: the exception line of a Python traceback (its last
    unindented line), else the first line (Java traces start with it)."""
    if not trace:
        return ""
    lines = [line for line in trace.strip().splitlines() if line.strip()]
    if lines and lines[0].startswith("Traceback ("):
        unindented = [line for line in lines if not line[0].isspace()]
        return unindented[-1] if unindented else lines[-1]
    return lines[0] if lines else ""


def render(connectors: dict[str, Any]) -> str:
    if not connectors:
        return "no connectors"
    rows: list[tuple[str, ...]] = [_HEADER]
    for name in sorted(connectors):
        status = connectors[name].get("status") or {}
        info = connectors[name].get("info") or {}
        connector = status.get("connector") or {}
        rows.append(
            (
                name,
                status.get("type") or info.get("type") or "",
                connector.get("state", "UNKNOWN"),
                connector.get("worker_id", ""),
                summary(connector.get("trace")),
            )
        )
        for task in sorted(status.get("tasks") or [], key=lambda t: t.get("id", 0)):
            rows.append(
                (
                    f"  task {task.get('id')}",
                    "",
                    task.get("state", "UNKNOWN"),
                    task.get("worker_id", ""),
                    summary(task.get("trace")),
                )
            )
    widths = [max(len(row[i]) for row in rows) for i in range(len(_HEADER) - 1)]
    lines = []
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return "\n".join(lines)
