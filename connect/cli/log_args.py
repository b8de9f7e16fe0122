"""The command line of `connect log`: each subcommand's arguments, declared once.

Why a module of its own: the declarations are help text, long and declarative, and
were one 160-line function in front of what the commands do. Here each subcommand is
one function that adds its parser to `sub` (the `connect log` subparsers) and returns
it; `connect.cli.log_cmd.register` pairs each with the function that runs it. Defaults
that say how the log is opened (`creates_log`) or how records print (`json`) are
declared here, beside the arguments they go with.
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = [
    "alter",
    "consume",
    "create",
    "delete",
    "describe",
    "dump",
    "groups",
    "log_options",
    "produce",
    "topics",
]


def topics(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser("topics", help="list topics", description="List the topics of the log.")
    p.add_argument("--all", action="store_true", help="include internal topics")
    return p


def create(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "create",
        help="create a topic (and the log directory if it is missing)",
        description="Create a topic, and the log directory if it does not exist yet.",
    )
    p.add_argument("topic", help="the new topic's name ([a-zA-Z0-9._-], at most 249)")
    p.add_argument("--partitions", type=int, default=1, help="number of partitions")
    p.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="topic config, e.g. cleanup.policy=compact (repeatable; default: none, the "
        "log's topic settings)",
    )
    p.set_defaults(creates_log=True)
    return p


def describe(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "describe",
        help="partitions, offsets, size and config of a topic",
        description="Show a topic's partitions (earliest and latest offsets, size, "
        "segments) and the config it overrides.",
    )
    p.add_argument("topic", help="the topic")
    p.add_argument("--json", action="store_true", help="print JSON")
    return p


def alter(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "alter",
        help="change topic config or add partitions",
        description="Change a topic's config or add partitions (never fewer).",
    )
    p.add_argument("topic", help="the topic")
    p.add_argument(
        "--partitions", type=int, help="grow to this many partitions (default: unchanged)"
    )
    p.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set this topic config key (repeatable; default: none changed)",
    )
    return p


def produce(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "produce",
        help="append lines from stdin to a topic",
        description="Append each line of stdin to a topic as one record (the log "
        "directory is created if it is missing; the topic must exist).",
    )
    p.add_argument("topic", help="an existing topic")
    p.add_argument(
        "--key-separator",
        help="split each line into key and value at this string (default: no key)",
    )
    p.add_argument(
        "--partition",
        type=int,
        help="write to this partition only (default: by key, keyless lines spread)",
    )
    p.set_defaults(creates_log=True)
    return p


def consume(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "consume",
        help="print records of a topic",
        description="Print the records of a topic as they arrive, until --max-messages, "
        "--timeout-ms or Ctrl-C (exit 130; with --group, what was printed is committed).",
    )
    p.add_argument("topic", help="the topic")
    start = p.add_mutually_exclusive_group()
    start.add_argument(
        "--from-beginning",
        action="store_true",
        help="start at each partition's earliest offset (default: the end, or the "
        "group's committed offsets)",
    )
    start.add_argument(
        "--offset",
        type=int,
        help="start at this offset (needs --partition; default: see --from-beginning)",
    )
    p.add_argument("--partition", type=int, help="read this partition only (default: all)")
    p.add_argument(
        "--max-messages", type=int, help="exit after this many records (default: no limit)"
    )
    p.add_argument(
        "--group",
        help="consume as this consumer group and commit its offsets (default: no group, "
        "nothing committed)",
    )
    p.add_argument(
        "--timeout-ms",
        type=int,
        help="exit after this long without a record (default: follow until Ctrl-C)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print JSON lines with partition, offset, timestamp, key, value, headers",
    )
    p.add_argument("--print-key", action="store_true", help="print KEY<TAB>VALUE")
    p.add_argument(
        "--isolation-level",
        choices=("read_uncommitted", "read_committed"),
        default="read_uncommitted",
        help="read_committed prints only records of committed transactions, up to the "
        "last stable offset (default: read_uncommitted, every record, as Kafka's)",
    )
    return p


def dump(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "dump",
        help="write every record of a topic, up to its current end, as JSON lines",
        description=(
            "Write every record of a topic, from each partition's earliest offset to its "
            "end when the dump starts, as JSON lines (the format of consume --json); a "
            "progress bar shows on a terminal's stderr. With --output the file appears "
            "only once the dump is complete: an interrupted or failed dump leaves no file "
            "(and an older file of that name as it was)."
        ),
    )
    p.add_argument("topic", help="the topic")
    p.add_argument("-o", "--output", metavar="FILE", help="write to this file (default: stdout)")
    shown = p.add_mutually_exclusive_group()
    shown.add_argument(
        "--progress",
        action="store_true",
        default=None,
        help="always show the progress bar (default: only when stderr is a terminal)",
    )
    shown.add_argument("--no-progress", dest="progress", action="store_false", help="never show it")
    p.set_defaults(json=True)
    return p


def delete(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "delete",
        help="delete a topic and its data",
        description="Delete a topic and its data. Internal topics (the workers' configs, "
        "offsets, statuses, group and schemas, also under the names a --worker-config "
        "gives them, and every topic named __*) are refused without --force.",
    )
    p.add_argument("topic", help="the topic")
    p.add_argument(
        "--force",
        action="store_true",
        help="delete even an internal topic (what the workers remember is lost)",
    )
    return p


def groups(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "groups",
        help="list consumer groups and their committed offsets",
        description="List consumer groups with each partition's committed offset, end and lag.",
    )
    return p


def log_options(parser: argparse.ArgumentParser, *, inherited: bool) -> None:
    """Where the log is: on `connect log` and on each of its subcommands (see
    `connect.cli.options.add_everywhere`)."""
    default = argparse.SUPPRESS if inherited else None
    parser.add_argument(
        "--log-dir",
        default=default,
        metavar="DIR",
        help="the log directory (default: --worker-config's log.dir; one of them is needed)",
    )
    parser.add_argument(
        "--worker-config",
        default=default,
        metavar="WORKER",
        help="take the log directory from this worker config's log.dir, JSON or .properties "
        "(relative to the current directory, as for a worker started here; default: none)",
    )
