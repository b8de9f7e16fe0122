"""`connect standalone WORKER [CONNECTOR …]` and `connect distributed WORKER`: run a
worker until SIGTERM or SIGINT, then stop cleanly (final offset commits; a distributed
worker then leaves its group expecting to return). Config files are JSON or Java
`.properties` (connect.config_files), so Kafka's `connect-standalone.properties
connect-file-source.properties` run as they are."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from typing import Any

from connect.api import ConfigError, ConnectError
from connect.cli.options import EXIT_INTERRUPTED
from connect.worker.memory import tune_process_memory
from log import LogError

__all__ = ["register"]

_WORKER_HELP = "the worker config file, JSON or Java .properties"


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "standalone",
        help="run a standalone worker",
        description="Run a standalone worker with the embedded log.",
    )
    parser.add_argument("worker_config", metavar="WORKER", help=_WORKER_HELP)
    parser.add_argument(
        "connector_configs",
        metavar="CONNECTOR",
        nargs="*",
        help="connector config files to run, JSON or .properties (default: none, add them "
        "through the REST API)",
    )
    parser.add_argument("--log-level", default="INFO", help="logging level of the worker")
    parser.set_defaults(run=_standalone)
    parser = commands.add_parser(
        "distributed",
        help="run a worker of a distributed cluster",
        description="Run one worker of a cluster sharing one log (the embedded log's "
        "directory, or a Kafka cluster with bootstrap.servers); connectors are managed "
        "through the REST API of any worker.",
    )
    parser.add_argument("worker_config", metavar="WORKER", help=_WORKER_HELP)
    parser.add_argument("--log-level", default="INFO", help="logging level of the worker")
    parser.set_defaults(run=_distributed)


def _standalone(args: argparse.Namespace) -> int:
    tune_process_memory()  # before a second thread or an Arrow buffer exists
    from connect.standalone import StandaloneWorker, load_connector_config, load_worker_config

    _logging(args)
    try:
        config = load_worker_config(args.worker_config)
        connectors = [load_connector_config(path) for path in args.connector_configs]
        if _refused(args.connector_configs, connectors):
            return 1
        worker = StandaloneWorker(config, connectors)
    except (ConfigError, ConnectError, LogError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return _serve(worker)


def _refused(paths: list[str], connectors: list[tuple[str, dict[str, str]]]) -> bool:
    """Validate each connector file as the worker's door will (`connect config check`
    does the same), before the log is opened: a file with a config error is one line
    naming it and every problem, and the worker does not start, instead of a worker
    that starts and leaves the connector failing."""
    from connect.cli.config_cmd import connector_problems
    from connect.plugins import Plugins

    plugins = Plugins()
    refused = False
    for path, (_, config) in zip(paths, connectors, strict=True):
        problems, _ = connector_problems(plugins, config)
        if problems:
            print(f"error: connector config {path}: {'; '.join(problems)}", file=sys.stderr)
            refused = True
    return refused


def _distributed(args: argparse.Namespace) -> int:
    tune_process_memory()  # before a second thread or an Arrow buffer exists
    from connect.distributed import DistributedWorker
    from connect.standalone import load_worker_config

    _logging(args)
    try:
        worker = DistributedWorker(load_worker_config(args.worker_config, standalone=False))
    except (ConfigError, ConnectError, LogError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return _serve(worker)


def _logging(args: argparse.Namespace) -> None:
    from connect.herder.secrets import install_log_masking

    logging.basicConfig(
        level=args.log_level.upper(),
        stream=sys.stderr,
        format="[%(asctime)s] %(levelname)s %(name)s: %(message)s",
    )
    install_log_masking()  # before the first line: a config error may quote a URL


def _serve(worker: Any) -> int:
    """Start `worker`, run until SIGTERM or SIGINT, stop it cleanly. Exit 0 after
    SIGTERM (a service manager's stop), 130 after SIGINT (Ctrl-C), as every `connect`
    command does."""
    stop = threading.Event()
    received: list[int] = []

    def _stop(signum: int, _frame: object) -> None:
        received.append(signum)
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _stop)
    try:
        worker.start()
    except (ConfigError, ConnectError, LogError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        worker.stop()
        return 1
    print("worker started", file=sys.stderr, flush=True)
    stop.wait()
    worker.stop()
    print("worker stopped", file=sys.stderr, flush=True)
    return EXIT_INTERRUPTED if received[:1] == [signal.SIGINT] else 0
