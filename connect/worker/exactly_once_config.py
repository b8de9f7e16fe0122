"""The exactly-once source keys (Kafka Connect's KIP-618) and what follows from
them for a worker: whether its sources run in transactions (`exactly.once.source.support`),
whether it takes part in fencing, the tasks' transactional ids and timeouts, the
validation of a connector's `exactly.once.support` / `transaction.boundary` keys, the
sinks' isolation level, and the fencing of a connector's producers.

Why apart from connect.worker.source_transactions: the herder (validation, fencing)
and the sink side need these rules without the transactions' machinery; that module
is what a running source task does with them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from connect.api import ConnectorTransactionBoundaries, ExactlyOnceSupport, SourceConnector
from log import Log

__all__ = [
    "SUPPORT_KEY",
    "exactly_once_enabled",
    "exactly_once_problems",
    "fence_producers",
    "fencing_ready",
    "sink_isolation_level",
    "transaction_timeout_ms",
    "transactional_id",
]

SUPPORT_KEY = "exactly.once.source.support"
_DEFAULT_TIMEOUT_MS = 60_000  # Kafka's producer transaction.timeout.ms
_TIMEOUT_KEY = "transaction.timeout.ms"


def exactly_once_enabled(worker_config: Mapping[str, Any]) -> bool:
    """Whether this worker's source tasks run exactly once (`preparing` runs them as
    `disabled` does: `fencing_ready`)."""
    return str(worker_config.get(SUPPORT_KEY) or "disabled") == "enabled"


def fencing_ready(worker_config: Mapping[str, Any]) -> bool:
    """Whether this worker does what exactly-once needs of every worker of a cluster,
    while its own source tasks may still run without transactions: `preparing`
    (Kafka's first step of a rolling upgrade to `enabled`) and `enabled`. Such a
    worker runs zombie-fencing rounds (as the leader, and on `PUT
    /connectors/{name}/fence`), fences a source connector's tasks before its
    offsets are altered or reset, and its sinks read committed records only, so
    that workers already `enabled` in the same cluster can rely on it."""
    return str(worker_config.get(SUPPORT_KEY) or "disabled") in ("preparing", "enabled")


def transactional_id(
    worker_config: Mapping[str, Any], worker_id: str, connector: str, task: int
) -> str:
    """Kafka's `<group.id>-<connector>-<task>`; a standalone worker has no group.id and
    uses its worker id, which its restarts keep (so a restart fences its predecessor)."""
    prefix = worker_config.get("group.id") or worker_id
    return f"{prefix}-{connector}-{task}"


def transaction_timeout_ms(
    worker_config: Mapping[str, Any], connector_props: Mapping[str, str]
) -> int:
    """The connector's `producer.override.transaction.timeout.ms`, else the worker's
    `producer.transaction.timeout.ms`, else Kafka's 60 s."""
    for value in (
        connector_props.get("producer.override." + _TIMEOUT_KEY),
        worker_config.get("producer." + _TIMEOUT_KEY),
    ):
        if value not in (None, ""):
            return int(str(value))
    return _DEFAULT_TIMEOUT_MS


def exactly_once_problems(
    connector: SourceConnector, config: Mapping[str, str], worker_support: str
) -> dict[str, list[str]]:
    """The errors of a source connector's exactly-once keys, by key (the herder's
    validation puts each on its key), each saying what to do about it."""
    problems: dict[str, list[str]] = {}
    required = str(config.get("exactly.once.support", "requested")).strip() == "required"
    boundary = str(config.get("transaction.boundary", "poll")).strip()
    if required and worker_support != "enabled":
        problems.setdefault("exactly.once.support", []).append(
            f"this worker's exactly.once.source.support is '{worker_support}': set it to "
            "'enabled' on every worker, or set exactly.once.support=requested"
        )
    if required:
        answer = _ask(connector.exactly_once_support, config)
        if answer is not ExactlyOnceSupport.SUPPORTED:
            said = "does not say" if answer is None else f"answers {answer}"
            problems.setdefault("exactly.once.support", []).append(
                f"the connector {said} that it supports exactly-once delivery with this "
                "configuration: change the configuration as its documentation says, or "
                "set exactly.once.support=requested to run it at least once"
            )
    if boundary == "connector" and worker_support == "enabled":
        answer = _ask(connector.can_define_transaction_boundaries, config)
        if answer is not ConnectorTransactionBoundaries.SUPPORTED:
            problems.setdefault("transaction.boundary", []).append(
                "the connector cannot define its own transaction boundaries: use "
                "transaction.boundary=poll or interval"
            )
    interval = str(config.get("transaction.boundary.interval.ms") or "").strip()
    if interval and boundary != "interval":
        problems.setdefault("transaction.boundary.interval.ms", []).append(
            f"only used with transaction.boundary=interval (it is '{boundary}'): remove "
            "it or set transaction.boundary=interval"
        )
    elif interval.startswith("-") and interval[1:].isdigit():
        problems.setdefault("transaction.boundary.interval.ms", []).append("must be at least 0")
    return problems


def _ask(question: Any, config: Mapping[str, str]) -> Any:
    """A connector's answer, None when it raises (a plugin's bug is 'does not know')."""
    try:
        return question(dict(config))
    except Exception:
        return None


def sink_isolation_level(
    worker_config: Mapping[str, Any], connector_props: Mapping[str, str]
) -> str:
    """A sink's consumer isolation level: the connector's
    `consumer.override.isolation.level`, else the worker's `consumer.isolation.level`,
    else read_committed where sources run exactly once, on this worker or on others
    of a cluster being upgraded (`fencing_ready`: a sink must not pass on what an
    aborted transaction wrote), else Kafka's default, read_uncommitted."""
    for value in (
        connector_props.get("consumer.override.isolation.level"),
        worker_config.get("consumer.isolation.level"),
    ):
        if value in ("read_committed", "read_uncommitted"):
            return str(value)
    return "read_committed" if fencing_ready(worker_config) else "read_uncommitted"


def fence_producers(log: Log, ids: Sequence[str], *, transaction_timeout_ms: int) -> None:
    """Fence every producer of `ids` (Kafka's Admin.fenceProducers): a new epoch for
    each id, which aborts what its last producer left open; the handle is closed at
    once. A zombie writing under one of them gets ProducerFencedError."""
    for tid in ids:
        producer = log.transactional_producer(tid, transaction_timeout_ms=transaction_timeout_ms)
        try:
            producer.init_transactions()
        finally:
            producer.close()
