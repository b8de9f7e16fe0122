"""`connect registry WORKER`: serve the schema registry alone over the worker's
`log.dir` (its `schema.registry.*` keys say where and how) until SIGTERM or SIGINT.
WORKER is JSON or Java `.properties`, read as `connect standalone` reads it (a
standalone worker's config serves the registry over that worker's log). Several of
these, and workers with `schema.registry.enable`, may serve one log: they agree on
every id and version, because replaying `_schemas` alone decides. Exit 0 after
SIGTERM, 130 after SIGINT (Ctrl-C), as every `connect` command."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from typing import Any

from connect.api import ConfigError, ConnectError
from connect.cli.options import EXIT_INTERRUPTED
from log import LogError

__all__ = ["register"]


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "registry",
        help="run the schema registry alone",
        description="Serve Confluent Schema Registry's REST API over the worker's log.dir. "
        "WORKER is a worker config file, JSON or Java .properties. Keys it reads: log.dir; "
        "schema.registry.listeners, where it listens (default http://127.0.0.1:8081; only "
        "http, the first is served; http://0.0.0.0:8081 for every interface); "
        "schema.registry.basic.auth.users.file "
        "(user:password lines: basic auth when set); schema.registry.topic (its "
        "compacted topic, default _schemas); schema.registry.compatibility.level "
        "(default BACKWARD).",
    )
    parser.add_argument(
        "worker_config",
        metavar="WORKER",
        help="a worker config: log.dir and the schema.registry.* keys described above",
    )
    parser.add_argument("--log-level", default="INFO", help="logging level of the registry")
    parser.set_defaults(run=_registry)


def _registry(args: argparse.Namespace) -> int:
    from connect.registry.core import RegistryError
    from connect.registry.rest.service import RegistryService
    from connect.standalone import load_worker_config
    from log import FileLog

    logging.basicConfig(
        level=args.log_level.upper(),
        stream=sys.stderr,
        format="[%(asctime)s] %(levelname)s %(name)s: %(message)s",
    )
    stop = threading.Event()
    received: list[int] = []

    def _stop(signum: int, _frame: object) -> None:
        received.append(signum)
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _stop)
    log = None
    service = None
    try:
        config = load_worker_config(args.worker_config)
        if not config.get("log.dir"):
            raise ConfigError("log.dir", None, "connect registry serves the embedded log")
        log = FileLog(config["log.dir"])
        service = RegistryService(config, log)
        service.start()
    except (ConfigError, ConnectError, LogError, RegistryError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        if service is not None:
            service.stop()
        if log is not None:
            log.close()
        return 1
    print(f"schema registry listening on {service.url}", file=sys.stderr, flush=True)
    stop.wait()
    service.stop()
    log.close()
    print("schema registry stopped", file=sys.stderr, flush=True)
    return EXIT_INTERRUPTED if received[:1] == [signal.SIGINT] else 0
