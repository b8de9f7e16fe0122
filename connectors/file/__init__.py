"""Kafka's FileStream connectors: a file's lines to a topic, and a topic to a file."""

from connectors.file.sink import FileStreamSinkConnector, FileStreamSinkTask
from connectors.file.source import FileStreamSourceConnector, FileStreamSourceTask

__all__ = [
    "FileStreamSinkConnector",
    "FileStreamSinkTask",
    "FileStreamSourceConnector",
    "FileStreamSourceTask",
]
