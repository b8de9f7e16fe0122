"""Config files as users have them: JSON or Java `.properties`, and Kafka's worker keys.

Every command that reads a worker or connector config file (`connect standalone`,
`connect distributed`, `connect registry`, `connect log --worker-config`) reads it
through `read_config_file`, so a file that one of them accepts, all of them accept.

The format, decided once per file:
1. a name ending in `.properties` is a properties file, one ending in `.json` is JSON;
2. any other name is JSON when its first non-blank character is `{`, else a properties
   file (Kafka's ConnectStandalone also tries JSON first, then properties; a `{` never
   starts a properties key in a real file).
Properties are read by `java.util.Properties.load`'s rules (connect.properties); JSON
must be an object. A file that cannot be read or parsed is one `ConfigFileError`
line naming the file (and the line, for properties).

Kafka Connect worker keys that mean something else here, or nothing, are accepted;
`kafka_worker_notes` says in one line each what they do here (see its docstring for
`bootstrap.servers` in a standalone worker, which decides where the log is).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from connect import properties
from connect.api import ConfigError

__all__ = [
    "KAFKA_WORKER_NOTES",
    "STANDALONE_LOG_SUFFIX",
    "ConfigFileError",
    "kafka_worker_notes",
    "read_config_file",
]


class ConfigFileError(ConfigError):
    """A config file that cannot be read or parsed: `what` it was (worker config,
    connector config), its `path`, the `line` when known, and the `reason`."""

    def __init__(
        self, what: str, path: str | Path, reason: str, *, line: int | None = None
    ) -> None:
        super().__init__(what, str(path), reason)
        self.path = str(path)
        self.line = line
        where = f"{what} {path}" + (f" line {line}" if line is not None else "")
        self.args = (f"{where}: {reason}",)

    def __str__(self) -> str:
        return str(self.args[0])


def read_config_file(path: str | Path, what: str) -> dict[str, Any]:
    """The key → value map of the config file at `path` (JSON values keep their JSON
    types; properties values are strings). `what` names the file in errors."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise ConfigFileError(what, path, "is a directory, not a file") from None
    except OSError as exc:
        raise ConfigFileError(what, path, f"cannot be read: {exc.strerror}") from None
    # Step 1
    suffix = path.suffix.lower()
    if suffix == ".properties":
        return _properties(data, path, what)
    text = properties.decode(data)
    # Step 2
    if suffix == ".json" or text.lstrip()[:1] == "{":
        return _json(text, path, what)
    return _properties(data, path, what)


def _json(text: str, path: Path, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        line = getattr(exc, "lineno", None)
        reason = getattr(exc, "msg", str(exc))
        raise ConfigFileError(what, path, f"is not valid JSON: {reason}", line=line) from None
    if not isinstance(value, dict):
        raise ConfigFileError(what, path, "must be a JSON object of key: value")
    return value


def _properties(data: bytes, path: Path, what: str) -> dict[str, Any]:
    try:
        return dict(properties.parse(properties.decode(data)))
    except properties.PropertiesError as exc:
        raise ConfigFileError(what, path, exc.reason, line=exc.line) from None


#: Where a standalone worker keeps its embedded log when its config names Kafka's
#: standalone offsets file and no log.dir: that path with this suffix.
STANDALONE_LOG_SUFFIX = ".tributary"

_NO_REPLICAS = (
    "there are no replicas on the embedded log, and on Kafka the broker's default is used"
)

#: Kafka Connect worker keys that are accepted without effect here, and why.
KAFKA_WORKER_NOTES: dict[str, str] = {
    "plugin.path": "plugins are Python packages found through the 'tributary.connectors' "
    "entry points and by connector.class; no directory is searched",
    "internal.key.converter": "the runtime's internal topics are always JSON (Kafka 3.0 "
    "removed this key too)",
    "internal.value.converter": "the runtime's internal topics are always JSON (Kafka 3.0 "
    "removed this key too)",
    "internal.key.converter.schemas.enable": "the runtime's internal topics are always "
    "schemaless JSON",
    "internal.value.converter.schemas.enable": "the runtime's internal topics are always "
    "schemaless JSON",
    "offset.storage.replication.factor": _NO_REPLICAS,
    "config.storage.replication.factor": _NO_REPLICAS,
    "status.storage.replication.factor": _NO_REPLICAS,
    "metric.reporters": "metrics are served at /metrics for Prometheus; no reporter class "
    "is loaded",
    "rest.extension.classes": "REST extensions are Java classes; none is loaded",
}


def kafka_worker_notes(
    raw: Mapping[str, Any], *, standalone: bool
) -> tuple[dict[str, Any], list[str]]:
    """(keys to set over the parsed worker config, one note per Kafka worker key that
    does something else here or nothing) for the worker config `raw`.

    `offset.storage.file.filename` is Kafka's standalone worker's state file; its stock
    `connect-standalone.properties` names it beside `bootstrap.servers=localhost:9092`,
    the broker every Kafka worker needs. Here the embedded log replaces the broker, and
    a standalone worker must not try to reach a Kafka cluster the user never asked
    for. So in a standalone worker (`connect standalone`, `connect registry`) a config
    that names `offset.storage.file.filename` keeps everything on this machine: the log
    is `log.dir`, or without it the directory `<offset.storage.file.filename>.tributary`
    (never the file itself, which a Kafka worker may have written), and
    `bootstrap.servers` is not used. Without `offset.storage.file.filename`,
    `bootstrap.servers` selects the Kafka log as before: that is how to ask for Kafka.
    A distributed worker has no state file, so there the key is only noted.
    """
    updates: dict[str, Any] = {}
    notes = [f"{key}: accepted, {note}" for key, note in KAFKA_WORKER_NOTES.items() if key in raw]
    state_file = raw.get("offset.storage.file.filename")
    if not state_file:
        return updates, notes
    if not standalone:
        notes.append(
            "offset.storage.file.filename: accepted, a distributed worker keeps source "
            "offsets in its offset.storage.topic"
        )
        return updates, notes
    log_dir = raw.get("log.dir") or f"{state_file}{STANDALONE_LOG_SUFFIX}"
    if not raw.get("log.dir"):
        updates["log.dir"] = log_dir
    note = (
        f"offset.storage.file.filename: a standalone worker keeps its records and source "
        f"offsets in the embedded log at {log_dir}"
    )
    if raw.get("bootstrap.servers"):
        updates["bootstrap.servers"] = []
        note += (
            f"; bootstrap.servers {raw['bootstrap.servers']} is not used (to run on Kafka, "
            "remove offset.storage.file.filename)"
        )
    notes.append(note)
    return updates, notes
