"""`connect`: the command line entry point. Subcommands live in their own modules.

Exit statuses, the same for every command: 0 done; 1 the command failed (one line
on stderr saying what and where); 2 the command line itself is wrong (one line, from
`connect.cli.options.Parser`); 130 interrupted by Ctrl-C (SIGINT), without a
traceback, after the command stopped what it was doing cleanly.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib import metadata

from connect.cli.options import EXIT_INTERRUPTED, Interrupted, Parser

__all__ = ["main"]


def _version() -> str:
    try:
        return metadata.version("tributary")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    # Imported here, inside main's KeyboardInterrupt guard: a Ctrl-C while the
    # subcommands load is still an exit 130 without a traceback.
    from connect.cli import config_cmd, log_cmd, ops_cmd, registry_cmd, status_cmd, worker_cmd

    parser = Parser(
        prog="connect",
        description="Tributary: move data from sources through a durable log into sinks. "
        "Run `connect COMMAND --help` for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s (tributary) {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    log_cmd.register(commands)
    worker_cmd.register(commands)
    status_cmd.register(commands)
    ops_cmd.register(commands)
    registry_cmd.register(commands)
    config_cmd.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        return int(args.run(args) or 0)
    except KeyboardInterrupt as exc:
        # Whatever the command had open was closed by its own `finally`/`with` blocks
        # while the exception travelled here; only the traceback is left to spare.
        message = str(exc) if isinstance(exc, Interrupted) else ""
        print(message or "interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
