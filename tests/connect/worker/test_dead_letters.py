"""Dead letters with `errors.tolerance=none`: as in Kafka, the record that fails a sink
task is reported first — logged and written to the dead-letter topic with the
failure in its headers — and only then does the task fail (a standalone worker)."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from connect.herder.api import BadRequestError
from connect.herder.standalone import StandaloneHerder
from connect.storage.configs import TargetState
from tests.connect.plugins_for_tests import ListSink
from tests.waiting import wait_until

CONV = "tests.connect.plugins_for_tests.Utf8Converter"
ERR = "__connect.errors."
#: failure → (the bad value, the stage, the failing class as configured, the connector
#: config's part)
FAILURES = {
    "converter": (b"\xff\xfe", "VALUE_CONVERTER", CONV, {}),
    "transform": (
        b"oops",
        "TRANSFORMATION",
        "org.apache.kafka.connect.transforms.Cast$Value",
        {
            "transforms": "cast",
            "transforms.cast.type": "org.apache.kafka.connect.transforms.Cast$Value",
            "transforms.cast.spec": "int32",
        },
    ),
}


@pytest.mark.parametrize("isolation", ["thread", "process"])
@pytest.mark.parametrize("failure", sorted(FAILURES))
def test_tolerance_none_dead_letters_the_failing_record_then_fails_the_task(
    start_herder: Callable[..., StandaloneHerder],
    caplog: pytest.LogCaptureFixture,
    failure: str,
    isolation: str,
) -> None:
    bad, stage, plugin, extra = FAILURES[failure]
    ListSink.RECEIVED.clear()
    caplog.set_level(logging.ERROR, logger="connect.errors")
    herder = start_herder(**{"task.isolation": isolation})
    herder.log.create_topic("in", 1)
    herder.log.append(
        "in", 0, [b"12", bad, b"34"], headers=[[("origin", b"shop")] for _ in range(3)]
    )
    herder.put_connector_config(
        "sink",
        {
            "connector.class": "tests.connect.plugins_for_tests.ListSink",
            "topics": "in",
            "key.converter": CONV,
            "value.converter": CONV,
            "header.converter": CONV,
            "errors.tolerance": "none",
            "errors.log.enable": "true",
            "errors.deadletterqueue.topic.name": "dlq",
            "errors.deadletterqueue.context.headers.enable": "true",
            **extra,
        },
        allow_replace=False,
    )
    wait_until(
        lambda: [t.state for t in herder.connector_status("sink").tasks] == ["FAILED"], 60, "FAILED"
    )
    assert "Tolerance exceeded" in (herder.connector_status("sink").tasks[0].trace or "")
    # Reported before the task failed (was: the dead-letter topic stayed empty).
    [dead] = herder.log.read("dlq", 0, 0)
    assert dead.value == bad
    headers = dict(dead.headers)
    assert headers["origin"] == b"shop"  # the record's own headers travel with it
    assert headers[ERR + "topic"] == b"in"
    assert headers[ERR + "partition"] == b"0"
    assert headers[ERR + "offset"] == b"1"
    assert headers[ERR + "connector.name"] == b"sink"
    assert headers[ERR + "task.id"] == b"0"
    assert headers[ERR + "stage"] == stage.encode()
    assert headers[ERR + "class.name"] == plugin.encode()
    assert headers[ERR + "exception.class.name"] == b"org.apache.kafka.connect.errors.DataException"
    assert headers[ERR + "exception.message"]
    assert b"DataError" in headers[ERR + "exception.stacktrace"]
    if isolation == "thread":  # caplog sees the task's log
        # The log reporter ran too, naming where the record was.
        assert f"Executing stage '{stage}'" in caplog.text
        assert "topic 'in', partition 0, offset 1" in caplog.text
    # Nothing past the failing record was delivered or committed.
    assert [r.value for r in ListSink.RECEIVED] == []
    committed = herder.log.committed_offsets("connect-sink")
    assert all(o.offset <= 1 for o in committed.values())


@pytest.mark.parametrize(
    ("subscription", "consumed_by"),
    [({"topics": "in,dlq"}, "topics"), ({"topics.regex": "in|dl.*"}, "topics.regex")],
)
def test_a_dead_letter_topic_the_sink_consumes_is_refused(
    start_herder: Callable[..., StandaloneHerder], subscription: dict[str, str], consumed_by: str
) -> None:
    """A record dead-lettered into a topic its sink reads would come back, fail and be
    dead-lettered again, for ever: the door refuses such a config, and a task whose config
    was stored before the door checked it (an older version) refuses to start, both
    naming the key."""
    ListSink.RECEIVED.clear()
    herder = start_herder()
    herder.log.create_topic("in", 1)
    herder.log.append("in", 0, [b"12", b"\xff\xfe"])
    config = {
        "connector.class": "tests.connect.plugins_for_tests.ListSink",
        **subscription,
        "value.converter": CONV,
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": "dlq",
    }
    why = (
        "Invalid value dlq for configuration errors.deadletterqueue.topic.name: the connector "
        f"consumes that topic ({consumed_by})"
    )
    with pytest.raises(BadRequestError) as refused:
        herder.put_connector_config("sink", config, allow_replace=False)
    assert why in str(refused.value)
    assert herder.connectors() == []
    # Stored as an older version stored it, past the door: the task's own check.
    herder.configs.put_connector_config("sink", config, target=TargetState.STARTED)
    herder._connector_written("sink")
    wait_until(
        lambda: [t.state for t in herder.connector_status("sink").tasks] == ["FAILED"], 30, "FAILED"
    )
    assert why in (herder.connector_status("sink").tasks[0].trace or "")
    assert herder.log.latest_offset("dlq", 0) == 0  # nothing went round
