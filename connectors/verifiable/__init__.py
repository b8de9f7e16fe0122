"""Kafka's verifiable test connectors: a source of numbered records per task and a
sink that reports what it received, each writing one JSON line per event, so a test
can check that no record was lost (or, after a clean restart, repeated)."""

from connectors.verifiable.sink import VerifiableSinkConnector, VerifiableSinkTask
from connectors.verifiable.source import VerifiableSourceConnector, VerifiableSourceTask

__all__ = [
    "VerifiableSinkConnector",
    "VerifiableSinkTask",
    "VerifiableSourceConnector",
    "VerifiableSourceTask",
]
