"""Tributary's connectors. `ALIASES` maps the names users write in `connector.class`
(short names, and the Kafka / Confluent class names of the equivalent connectors) to
"module:Class" paths; the runtime imports a connector only when a config names it."""

from __future__ import annotations

__all__ = ["ALIASES"]

_FILE_SOURCE = "connectors.file.source:FileStreamSourceConnector"
_FILE_SINK = "connectors.file.sink:FileStreamSinkConnector"

_PATHS: dict[str, str] = {
    "FileStreamSource": _FILE_SOURCE,
    "FileStreamSourceConnector": _FILE_SOURCE,
    "org.apache.kafka.connect.file.FileStreamSourceConnector": _FILE_SOURCE,
    "FileStreamSink": _FILE_SINK,
    "FileStreamSinkConnector": _FILE_SINK,
    "org.apache.kafka.connect.file.FileStreamSinkConnector": _FILE_SINK,
}


ALIASES: dict[str, str] = dict(_PATHS)
