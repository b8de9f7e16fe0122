"""Kafka's mock test connectors: a source and a sink whose connector or task fails on
purpose after a delay (`mock_mode`, `delay_ms`), to test FAILED states and restarts."""

from connectors.mock.connector import MockConnector, MockFailure
from connectors.mock.sink import MockSinkConnector, MockSinkTask
from connectors.mock.source import MockSourceConnector, MockSourceTask

__all__ = [
    "MockConnector",
    "MockFailure",
    "MockSinkConnector",
    "MockSinkTask",
    "MockSourceConnector",
    "MockSourceTask",
]
