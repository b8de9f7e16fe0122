"""The operator's commands over a running worker's REST API:

    connect ps                         every task: connector, task, state, worker, type,
                                       records in and out (GET /ops/tasks)
    connect lag [CONNECTOR]            per sink connector and partition: log end offset,
                                       committed offset, lag (GET /ops/lag)
    connect offsets get CONNECTOR      the committed offsets (GET /connectors/…/offsets)
    connect offsets set CONNECTOR …    alter them (PATCH), from JSON or --sink T:P=N;
                                       a sink offset outside its partition's range
                                       [log start, log end] is refused (400), naming it
    connect offsets reset CONNECTOR    reset them (DELETE); for a sink connector with
      [--to-datetime 2026-11-01T00:00:00Z]   move each partition to its first record at
                                       or after that time (the log's time index), then
                                       PATCH: replay from a point in time
    connect offsets set|reset CONNECTOR --to-earliest | --to-latest
                                       a sink connector: every partition to its log
                                       start (replay all the log holds) or its log end
                                       (skip to new records)

Changing offsets needs the connector STOPPED (`PUT /connectors/NAME/stop`), as Kafka
Connect's offsets API requires; the commands say so instead of trying. Each command
takes `--url`, `--json` and the basic-auth options of `connect status` (`offsets`
before or after its action); a failure is one line on stderr and exit status 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from connect.cli.options import add_everywhere
from connect.cli.rest_client import CliRestError, add_rest_options, call, path_name

__all__ = ["register"]


class _UsageError(Exception):
    """A mistake in the command line, explained in one line."""


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "ps",
        help="show every task with its state, worker and records in/out",
        description="Show every task of a running worker: state, worker, type, records.",
    )
    add_rest_options(parser)
    parser.set_defaults(run=_guarded(_ps))

    parser = commands.add_parser(
        "lag",
        help="show how far sink connectors are behind the log",
        description="Per sink connector and partition: log end offset, committed, lag.",
    )
    parser.add_argument("connector", nargs="?", help="one sink connector (default: all)")
    add_rest_options(parser)
    parser.set_defaults(run=_guarded(_lag))

    parser = commands.add_parser(
        "offsets",
        help="get, set or reset a connector's offsets",
        description="A connector's offsets through the REST offsets API.",
    )
    sub = parser.add_subparsers(dest="offsets_command", metavar="ACTION", required=True)
    p = sub.add_parser("get", help="print the committed offsets")
    p.add_argument("connector", help="the connector's name")
    p.set_defaults(run=_guarded(_get))

    p = sub.add_parser(
        "set",
        help="alter offsets of a STOPPED connector",
        description=(
            "Alter offsets of a STOPPED connector. OFFSETS is Kafka's body (an object "
            'with "offsets", or just the array), as JSON text, @FILE or - for stdin; '
            "for a sink connector --sink TOPIC:PARTITION=OFFSET, --to-earliest or "
            "--to-latest may be given instead. A sink offset must lie within its "
            "partition's log start and log end offsets (the worker refuses others)."
        ),
    )
    p.add_argument("connector", help="the connector's name")
    p.add_argument("offsets", nargs="?", help="JSON, @FILE or -")
    p.add_argument(
        "--sink",
        action="append",
        default=[],
        metavar="TOPIC:PARTITION=OFFSET",
        help="a sink partition's new offset (repeatable; default: none, OFFSETS given)",
    )
    _add_ends(p)
    p.set_defaults(run=_guarded(_set))

    p = sub.add_parser(
        "reset",
        help="reset offsets of a STOPPED connector (or, for a sink, move them to a time)",
    )
    p.add_argument("connector", help="the connector's name")
    p.add_argument(
        "--to-datetime",
        metavar="ISO-8601",
        help="sink connectors: the first record at or after this time in each partition "
        "(e.g. 2026-11-01T00:00:00Z; a time without an offset is UTC; default: none, "
        "the offsets are deleted)",
    )
    _add_ends(p)
    p.set_defaults(run=_guarded(_reset))
    add_everywhere(parser, sub, add_rest_options)


def _add_ends(parser: argparse.ArgumentParser) -> None:
    ends = parser.add_mutually_exclusive_group()
    ends.add_argument(
        "--to-earliest",
        dest="to_end",
        action="store_const",
        const="earliest",
        help="sink connectors: every partition to its log start (replay all it holds)",
    )
    ends.add_argument(
        "--to-latest",
        dest="to_end",
        action="store_const",
        const="latest",
        help="sink connectors: every partition to its log end (skip to new records)",
    )


def _guarded(command: Any) -> Any:
    def run(args: argparse.Namespace) -> int:
        try:
            return int(command(args) or 0)
        except (CliRestError, _UsageError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        except BrokenPipeError:
            return 0

    return run


def _table(header: tuple[str, ...], rows: list[tuple[Any, ...]], numeric: set[int]) -> str:
    cells = [header, *[tuple(str(c) for c in row) for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = []
    for row in cells:
        parts = [
            cell.rjust(w) if i in numeric and row is not header else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)


# ------------------------------------------------------------------------ ps


def _ps(args: argparse.Namespace) -> None:
    tasks = call(args, "GET", "/ops/tasks")["tasks"]
    if args.json:
        print(json.dumps(tasks, indent=2, sort_keys=True))
        return
    if not tasks:
        print("no tasks")
        return
    rows = [
        (
            t["connector"],
            t["task"],
            t["state"],
            t["worker_id"],
            t["type"],
            t["records_in"],
            t["records_out"],
        )
        for t in tasks
    ]
    header = ("CONNECTOR", "TASK", "STATE", "WORKER", "TYPE", "IN", "OUT")
    print(_table(header, rows, {1, 5, 6}))


# ----------------------------------------------------------------------- lag


def _lag(args: argparse.Namespace) -> None:
    path = "/ops/lag"
    if args.connector:
        path += "?connector=" + path_name(args.connector)
    entries = call(args, "GET", path)["lag"]
    if args.json:
        print(json.dumps(entries, indent=2, sort_keys=True))
        return
    if not entries:
        print("no sink partitions")
        return
    rows = [
        (
            e["connector"],
            e["topic"],
            e["partition"],
            e["log_end_offset"],
            "-" if e["committed_offset"] is None else e["committed_offset"],
            e["lag"],
        )
        for e in entries
    ]
    header = ("CONNECTOR", "TOPIC", "PARTITION", "LOG-END", "COMMITTED", "LAG")
    print(_table(header, rows, {2, 3, 4, 5}))


# ------------------------------------------------------------------- offsets


def _offsets_path(name: str) -> str:
    return f"/connectors/{path_name(name)}/offsets"


def _print_offsets(offsets: list[dict[str, Any]]) -> None:
    if not offsets:
        print("no offsets")
        return
    if all("kafka_topic" in (o.get("partition") or {}) for o in offsets):
        rows = [
            (
                o["partition"]["kafka_topic"],
                o["partition"]["kafka_partition"],
                (o.get("offset") or {}).get("kafka_offset", "-"),
            )
            for o in offsets
        ]
        print(_table(("TOPIC", "PARTITION", "OFFSET"), rows, {1, 2}))
        return
    rows = [
        (json.dumps(o.get("partition"), sort_keys=True), json.dumps(o.get("offset")))
        for o in offsets
    ]
    print(_table(("PARTITION", "OFFSET"), rows, set()))


def _get(args: argparse.Namespace) -> None:
    answer = call(args, "GET", _offsets_path(args.connector))
    if args.json:
        print(json.dumps(answer, indent=2, sort_keys=True))
    else:
        _print_offsets(answer.get("offsets") or [])


def _require_stopped(args: argparse.Namespace) -> None:
    """Refuse early, with the way out, unless the connector is STOPPED."""
    status = call(args, "GET", f"/connectors/{path_name(args.connector)}/status")
    state = (status.get("connector") or {}).get("state")
    if state != "STOPPED":
        raise _UsageError(
            f"connector {args.connector} is {state}; its offsets can only be changed while "
            f"it is STOPPED (as Kafka Connect's offsets API requires): stop it first with "
            f"PUT /connectors/{path_name(args.connector)}/stop, then resume it afterwards"
        )


def _read_offsets(text: str) -> list[dict[str, Any]]:
    if text == "-":
        text = sys.stdin.read()
    elif text.startswith("@"):
        try:
            text = Path(text[1:]).read_text()
        except OSError as exc:
            raise _UsageError(f"cannot read {text[1:]}: {exc.strerror}") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise _UsageError(f"the offsets are not JSON: {exc}") from None
    if isinstance(data, dict):
        data = data.get("offsets")
    if not isinstance(data, list) or not all(isinstance(o, dict) for o in data):
        raise _UsageError('the offsets must be an array of {"partition", "offset"} objects')
    return data


def _sink_entry(spec: str) -> dict[str, Any]:
    where, sep, offset = spec.rpartition("=")
    topic, colon, partition = where.rpartition(":")
    if not sep or not colon or not topic or not partition.isdigit() or not offset.isdigit():
        raise _UsageError(f"--sink expects TOPIC:PARTITION=OFFSET, got {spec!r}")
    return {
        "partition": {"kafka_topic": topic, "kafka_partition": int(partition)},
        "offset": {"kafka_offset": int(offset)},
    }


def _patch(args: argparse.Namespace, offsets: list[dict[str, Any]]) -> None:
    answer = call(args, "PATCH", _offsets_path(args.connector), {"offsets": offsets})
    if args.json:
        print(json.dumps({**answer, "offsets": offsets}, indent=2, sort_keys=True))
        return
    print(answer.get("message", "offsets altered"))
    _print_offsets(offsets)


def _set(args: argparse.Namespace) -> None:
    ways = (args.offsets is not None) + bool(args.sink) + (args.to_end is not None)
    if ways != 1:
        raise _UsageError(
            "give the offsets one way: as JSON (or @FILE, -), with --sink, or with "
            "--to-earliest / --to-latest"
        )
    if args.to_end is not None:
        _move_to_end(args)
        return
    offsets = _read_offsets(args.offsets) if args.offsets else [_sink_entry(s) for s in args.sink]
    _require_stopped(args)
    _patch(args, offsets)


def _require_sink(args: argparse.Namespace, option: str) -> None:
    info = call(args, "GET", f"/connectors/{path_name(args.connector)}")
    if info.get("type") != "sink":
        raise _UsageError(
            f"{option} moves a sink connector through the log; {args.connector} is a "
            f"{info.get('type')} connector (its offsets belong to its source system)"
        )


def _move_to_end(args: argparse.Namespace) -> None:
    """--to-earliest / --to-latest: each partition's log start or end, then PATCH."""
    _require_sink(args, f"--to-{args.to_end}")
    _require_stopped(args)
    path = f"/ops/connectors/{path_name(args.connector)}/offsets-at-end?end={args.to_end}"
    offsets = call(args, "GET", path)["offsets"]
    if not offsets:
        raise _UsageError(f"connector {args.connector} reads no partition that exists yet")
    _patch(args, offsets)


def _parse_time(text: str) -> int:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise _UsageError(
            f"--to-datetime expects an ISO-8601 time like 2026-11-01T00:00:00Z, got {text!r}"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def _reset(args: argparse.Namespace) -> None:
    if args.to_datetime is not None and args.to_end is not None:
        raise _UsageError(f"give --to-datetime or --to-{args.to_end}, not both")
    if args.to_end is not None:
        _move_to_end(args)
        return
    if args.to_datetime is None:
        _require_stopped(args)
        answer = call(args, "DELETE", _offsets_path(args.connector))
        print(json.dumps(answer, indent=2) if args.json else answer.get("message", "reset"))
        return
    timestamp_ms = _parse_time(args.to_datetime)
    _require_sink(args, "--to-datetime")
    _require_stopped(args)
    path = f"/ops/connectors/{path_name(args.connector)}/offsets-for-time"
    offsets = call(args, "GET", f"{path}?timestamp_ms={timestamp_ms}")["offsets"]
    if not offsets:
        raise _UsageError(f"connector {args.connector} reads no partition that exists yet")
    _patch(args, offsets)
