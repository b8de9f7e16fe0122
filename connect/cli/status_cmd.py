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
import json
import sys
from typing import Any

from connect.cli.rest_client import CliRestError, add_rest_options, call

__all__ = ["register"]

_HEADER = ("CONNECTOR", "TYPE", "STATE", "WORKER", "TRACE")


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "status",
        help="show the connectors and tasks of a running worker",
        description="Show the state of every connector and task of a running worker.",
    )
    add_rest_options(parser)
    parser.set_defaults(run=_status)


def _status(args: argparse.Namespace) -> int:
    try:
        connectors = _fetch(args)
    except CliRestError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(connectors, indent=2, sort_keys=True))
    else:
        print(render(connectors))
    return 0


def _fetch(args: argparse.Namespace) -> dict[str, Any]:
    data = call(args, "GET", "/connectors?expand=status&expand=info")
    if not isinstance(data, dict):
        raise CliRestError(f"{args.url} answered {type(data).__name__}, not a connector map")
    return data


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
