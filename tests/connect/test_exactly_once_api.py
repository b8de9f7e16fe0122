"""What each shipped source connector says about exactly-once delivery (KIP-618's
`exactlyOnceSupport` / `canDefineTransactionBoundaries`), and the API's defaults.

The worker refuses `exactly.once.support=required` for a connector that does not
answer SUPPORTED, so a wrong answer either blocks a user for nothing or, worse,
promises exactly-once for a source that cannot replay: each answer is checked here
against the reason the connector gives for it."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from connect.api import (
    ConnectorTransactionBoundaries,
    ExactlyOnceSupport,
    SourceConnector,
    SourceTaskContext,
)
from connectors.file.source import FileStreamSourceConnector
from connectors.jdbc.source import JdbcSourceConnector
from connectors.postgres.source import PostgresCdcSourceConnector
from connectors.s3.source import S3SourceConnector
from connectors.verifiable.source import VerifiableSourceConnector

SUPPORTED, UNSUPPORTED = ExactlyOnceSupport.SUPPORTED, ExactlyOnceSupport.UNSUPPORTED


@pytest.mark.parametrize(
    ("connector", "props", "answer"),
    [
        # An append-only file replays from a byte position; stdin cannot be read again.
        (FileStreamSourceConnector, {"file": "in.txt", "topic": "t"}, SUPPORTED),
        (FileStreamSourceConnector, {"topic": "t"}, UNSUPPORTED),
        # Offsets that say which rows come next, and bulk's whole table every time.
        (JdbcSourceConnector, {"mode": "incrementing"}, SUPPORTED),
        (JdbcSourceConnector, {"mode": "timestamp"}, SUPPORTED),
        (JdbcSourceConnector, {"mode": "timestamp+incrementing"}, SUPPORTED),
        (JdbcSourceConnector, {"mode": "bulk"}, UNSUPPORTED),
        (JdbcSourceConnector, {"mode": "sideways"}, None),  # invalid: validation says so
        (S3SourceConnector, {}, SUPPORTED),
        (VerifiableSourceConnector, {}, SUPPORTED),
        # LSN offsets: a restart streams the replication slot from the stored one.
        (PostgresCdcSourceConnector, {}, SUPPORTED),
    ],
)
def test_shipped_sources_answer_exactly_once_support(
    connector: type[SourceConnector], props: dict[str, str], answer: ExactlyOnceSupport | None
) -> None:
    assert connector().exactly_once_support(props) is answer


@pytest.mark.parametrize(
    "connector",
    [
        FileStreamSourceConnector,
        JdbcSourceConnector,
        PostgresCdcSourceConnector,
        S3SourceConnector,
        VerifiableSourceConnector,
    ],
)
def test_shipped_sources_leave_transaction_boundaries_to_the_worker(
    connector: type[SourceConnector],
) -> None:
    # None of these tasks ask for a TransactionContext: poll or interval boundaries.
    answer = connector().can_define_transaction_boundaries({})
    assert answer is ConnectorTransactionBoundaries.UNSUPPORTED


def test_the_api_defaults_promise_nothing() -> None:
    class Plain(SourceConnector):
        def start(self, props: Mapping[str, str]) -> None: ...
        def task_class(self) -> type: return object
        def task_configs(self, max_tasks: int) -> list[dict[str, str]]: return []
        def stop(self) -> None: ...
        def config(self):  # type: ignore[no-untyped-def]
            raise NotImplementedError

    class Context(SourceTaskContext):
        configs = {}  # type: ignore[assignment]
        offset_storage_reader = None  # type: ignore[assignment]

    assert Plain().exactly_once_support({}) is None
    assert Plain().can_define_transaction_boundaries({}) is (
        ConnectorTransactionBoundaries.UNSUPPORTED
    )
    assert Context().transaction_context() is None
