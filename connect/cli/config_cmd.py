"""`connect config check FILE…`: validate connector configs offline, as a worker would at
its door (POST/PUT /connectors, standalone start-up), without a worker.

    $ connect config check sink.properties source.json
    sink.properties: Invalid value jdbc:postgresql://db/x?password=[hidden]&foo=1 for
    configuration connection.url: unknown pgJDBC parameter foo: … (one line)
    source.json: ok (local-file-source, FileStreamSource)

Each file is read as the worker reads a connector config (JSON, Kafka's {"name",
"config"} JSON shape, or Java `.properties`: connect.config_files) and checked by the
same validation the REST API runs before it writes a config (connect.herder.
validation: the runtime's connector keys, the connector's own `validate()`, the sink's
topics and dead-letter topic, the transforms and predicates). One line per problem on
stdout, `FILE: problem`, passwords masked; unknown keys are warned about as the worker
warns (they are not problems). Exit 0 when every file is usable, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import Any

from connect.api import ConfigError, ConnectError
from connect.herder.api import BadRequestError
from connect.herder.secrets import config_secrets, mask_text, password_keys
from connect.herder.validation import (
    config_problems,
    unknown_connector_keys,
    validate_connector_config,
)
from connect.plugins import Plugins

__all__ = ["connector_problems", "register"]


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "config",
        help="check connector config files offline",
        description="Work with connector config files without a worker.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    check = actions.add_parser(
        "check",
        help="validate connector configs as a worker would",
        description="Validate connector config files (JSON or Java .properties) exactly "
        "as a worker validates a config before it creates the connector: one line per "
        "problem, exit status 1 if any.",
    )
    check.add_argument("files", metavar="FILE", nargs="+", help="connector config files")
    check.set_defaults(run=_check)


def connector_problems(plugins: Plugins, config: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """(problems, warnings) of one connector config, one line each, masked: what the
    worker's door (LogHerder.put_connector_config) refuses, and what it warns about."""
    secrets = config_secrets(config, password_keys(plugins, config))
    if not config.get("connector.class"):
        return ['Missing required configuration "connector.class" which has no default value.'], []
    try:
        infos = validate_connector_config(plugins, config)
    except (BadRequestError, ConfigError) as exc:  # an unknown connector class
        return [mask_text(" ".join(str(exc).split()), secrets)], []
    return config_problems(infos), unknown_connector_keys(infos, config)


def _check(args: argparse.Namespace) -> int:
    from connect.config_files import ConfigFileError
    from connect.standalone import load_connector_config

    plugins = Plugins()
    failed = False
    for path in args.files:
        try:
            name, config = load_connector_config(path)
        except ConfigFileError as exc:
            where = path if exc.line is None else f"{path} line {exc.line}"
            print(f"{where}: {exc.reason}")
            failed = True
            continue
        except (ConfigError, ConnectError) as exc:
            print(f"{path}: {' '.join(str(exc).split())}")
            failed = True
            continue
        problems, warnings = connector_problems(plugins, config)
        for line in problems:
            print(f"{path}: {line}")
        for line in warnings:
            print(f"{path}: warning: {line}")
        if problems:
            failed = True
        else:
            kind = config["connector.class"].rsplit(".", 1)[-1]
            print(f"{path}: ok ({name}, {kind})")
    sys.stdout.flush()
    return 1 if failed else 0
