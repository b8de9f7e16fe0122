"""A chain runs under the error handler one transform at a time, as Kafka's
TransformationChain runs each stage through its RetryWithToleranceOperator (Apache
Kafka, connect/runtime/src/main/java/org/apache/kafka/connect/runtime/
TransformationChain.java): only the failing transform is retried, and the failure is
reported under that transform's class as the config named it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from connect.api import ConfigDef, SinkRecord, Transformation
from connect.errors import ErrorContext, ErrorPolicy, RetryWithTolerance
from connect.plugins import Plugins
from connect.transforms import TransformChain

HERE = "tests.connect.transforms.test_chain_stages"


class Counting(Transformation):
    """Counts its calls; adds one to the value."""

    calls = 0

    def config(self) -> ConfigDef:
        return ConfigDef()

    def configure(self, configs: Mapping[str, Any]) -> None:
        return None

    def apply(self, record: Any) -> Any:
        Counting.calls += 1
        return record.new_record(value=record.value + 1)


class Flaky(Counting):
    """Fails its first `failures` calls, then doubles the value."""

    failures = 0

    def apply(self, record: Any) -> Any:
        Flaky.calls += 1
        if Flaky.calls <= Flaky.failures:
            raise ValueError(f"flaky call {Flaky.calls}")
        return record.new_record(value=record.value * 2)


def _chain() -> TransformChain:
    return TransformChain.from_config(
        {
            "transforms": "count,flaky",
            "transforms.count.type": f"{HERE}.Counting",
            "transforms.flaky.type": f"  {HERE}.Flaky ",
            "transforms.flaky.predicate": "big",
            "predicates": "big",
            "predicates.big.type": "TopicNameMatches",
            "predicates.big.pattern": "big.*",
        },
        Plugins().resolve,
    )


def _record(sink: Callable[..., SinkRecord], topic: str = "big-orders") -> SinkRecord:
    return sink(topic=topic, value=1)


def test_only_the_failing_transform_is_retried(sink: Callable[..., SinkRecord]) -> None:
    Counting.calls, Flaky.calls, Flaky.failures = 0, 0, 2
    errors = RetryWithTolerance(ErrorPolicy(retry_timeout_ms=30_000), connector="c", task=0)
    ok, out = errors.transform(_chain(), _record(sink))
    assert ok and out is not None and out.value == 4  # (1 + 1) * 2
    assert (Counting.calls, Flaky.calls) == (1, 3)  # was (3, 3): the whole chain again


def test_a_failure_is_reported_as_the_transform_that_failed(
    sink: Callable[..., SinkRecord],
) -> None:
    Counting.calls, Flaky.calls, Flaky.failures = 0, 0, 1
    reported: list[ErrorContext] = []
    errors = RetryWithTolerance(
        ErrorPolicy(tolerate_all=True), connector="c", task=0, reporters=[reported.append]
    )
    assert errors.transform(_chain(), _record(sink)) == (False, None)
    [ctx] = reported
    assert ctx.plugin == f"{HERE}.Flaky"  # as configured (trimmed), not 'TransformChain'
    assert str(ctx.error) == "flaky call 1"


def test_stages_keep_predicates_and_drops(sink: Callable[..., SinkRecord]) -> None:
    Counting.calls, Flaky.calls, Flaky.failures = 0, 0, 0
    chain = _chain()
    errors = RetryWithTolerance(ErrorPolicy(), connector="c", task=0)
    ok, out = errors.transform(chain, _record(sink, topic="small"))  # the predicate skips flaky
    assert ok and out is not None and out.value == 2 and Flaky.calls == 0
    assert chain.apply(_record(sink, topic="small")).value == out.value
    # A plain callable still runs, as one operation named by its class.
    assert errors.transform(lambda r: None, _record(sink)) == (True, None)
