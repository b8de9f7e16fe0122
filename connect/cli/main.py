"""`connect`: the command line entry point. Subcommands live in their own modules."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from connect.cli import log_cmd, ops_cmd, registry_cmd, status_cmd, worker_cmd

__all__ = ["main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="connect",
        description="Tributary: move data from sources through a durable log into sinks.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    log_cmd.register(commands)
    worker_cmd.register(commands)
    status_cmd.register(commands)
    ops_cmd.register(commands)
    registry_cmd.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
