"""Dead-letter headers and error logs name what failed as Kafka's do.

Kafka's DeadLetterQueueReporter writes `__connect.errors.class.name` as the executing
class's name and `__connect.errors.exception.class.name` as the error's class
(Apache Kafka, connect/runtime/src/main/java/org/apache/kafka/connect/runtime/errors/
DeadLetterQueueReporter.java, `populateContextHeaders`); the executing class is the
converter's for a converter stage, each transform's own for a transformation
(connect/runtime/.../TransformationChain.java runs every stage through the operator
with `transformationStage.transformClass()`), and `SinkTask.class` for a record a task
reports as errant (connect/runtime/.../errors/WorkerErrantRecordReporter.java,
`executeFailed(Stage.TASK_PUT, SinkTask.class, ...)`). JsonConverter and the SMTs throw
`org.apache.kafka.connect.errors.DataException`. Here a plugin is named by the class
its config gave, so a config in Kafka's names gets Kafka's headers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from connect.api import (
    AlreadyExistsError,
    ConfigError,
    ConnectError,
    IllegalWorkerStateError,
    NotFoundError,
    RetriableError,
    SchemaError,
)
from connect.converters.errors import ConversionError
from connect.errors import kafka_exception_class
from connect.herder.standalone import StandaloneHerder
from tests.connect.plugins_for_tests import ListSink
from tests.waiting import wait_until

ERR = "__connect.errors."
CAST = "org.apache.kafka.connect.transforms.Cast$Value"
DATA_EXCEPTION = b"org.apache.kafka.connect.errors.DataException"


def _dead_letters(herder: StandaloneHerder, count: int) -> list[dict[str, bytes]]:
    wait_until(
        lambda: "dlq" in herder.log.list_topics() and herder.log.latest_offset("dlq", 0) >= count,
        60,
        f"{count} dead letters",
    )
    return [dict(r.headers) for r in herder.log.read("dlq", 0, 0, max_records=count)]


@pytest.mark.parametrize(
    "converter", ["org.apache.kafka.connect.json.JsonConverter", "JsonConverter"]
)
def test_headers_and_log_name_the_converter_and_the_transform_as_configured(
    start_herder: Callable[..., StandaloneHerder],
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
    converter: str,
) -> None:
    caplog.set_level(logging.ERROR, logger="connect.errors")
    herder = start_herder(**{"task.isolation": "thread"})
    herder.log.create_topic("in", 1)
    herder.log.append("in", 0, [b'{"a":"1"}', b"{not json", b'{"a":"x"}', b'{"a":"2"}'])
    herder.put_connector_config(
        "sink",
        {
            "connector.class": "FileStreamSink",
            "file": str(tmp_path / "out.txt"),
            "topics": "in",
            "value.converter": converter,
            "value.converter.schemas.enable": "false",
            # Two transforms: the failure is the second one's, not the chain's.
            "transforms": "route,cast",
            "transforms.route.type": "RegexRouter",
            "transforms.route.regex": "in",
            "transforms.route.replacement": "orders",
            "transforms.cast.type": CAST,
            "transforms.cast.spec": "a:int32",
            "errors.tolerance": "all",
            "errors.log.enable": "true",
            "errors.deadletterqueue.topic.name": "dlq",
            "errors.deadletterqueue.context.headers.enable": "true",
        },
        allow_replace=False,
    )
    bad_json, bad_cast = _dead_letters(herder, 2)
    assert bad_json[ERR + "stage"] == b"VALUE_CONVERTER"
    assert bad_json[ERR + "class.name"] == converter.encode()
    assert bad_json[ERR + "exception.class.name"] == DATA_EXCEPTION
    assert bad_cast[ERR + "stage"] == b"TRANSFORMATION"
    assert bad_cast[ERR + "class.name"] == CAST.encode()
    assert bad_cast[ERR + "exception.class.name"] == DATA_EXCEPTION
    out = tmp_path / "out.txt"
    wait_until(lambda: out.exists() and out.read_text().count("\n") == 2, 30, "the good records")
    assert out.read_text() == "{a=1}\n{a=2}\n"  # cast, and the chain went on after a failure
    # The log reporter names the transform that failed too (was: 'TransformChain').
    assert f"Executing stage 'TRANSFORMATION' with class '{CAST}'" in caplog.text
    assert f"Executing stage 'VALUE_CONVERTER' with class '{converter}'" in caplog.text
    assert "TransformChain" not in caplog.text


def test_an_errant_record_is_named_as_kafkas_reporter_names_it(
    start_herder: Callable[..., StandaloneHerder],
) -> None:
    ListSink.RECEIVED.clear()
    ListSink.FAIL_ON = {"no"}
    try:
        herder = start_herder(**{"task.isolation": "thread"})
        herder.log.create_topic("in", 1)
        herder.log.append("in", 0, [b"yes", b"no", b"yes"])
        herder.put_connector_config(
            "sink",
            {
                "connector.class": "tests.connect.plugins_for_tests.ListSink",
                "topics": "in",
                "value.converter": "org.apache.kafka.connect.storage.StringConverter",
                "errors.tolerance": "all",
                "errors.deadletterqueue.topic.name": "dlq",
                "errors.deadletterqueue.context.headers.enable": "true",
            },
            allow_replace=False,
        )
        [errant] = _dead_letters(herder, 1)
    finally:
        ListSink.FAIL_ON = set()
    assert errant[ERR + "stage"] == b"TASK_PUT"
    assert errant[ERR + "class.name"] == b"org.apache.kafka.connect.sink.SinkTask"
    assert errant[ERR + "exception.class.name"] == b"builtins.ValueError"  # no Kafka class


@pytest.mark.parametrize(
    ("error", "kafka"),
    [
        (
            ConversionError("t", "bad", direction="from_bytes"),
            "org.apache.kafka.connect.errors.DataException",
        ),
        (SchemaError("bad"), "org.apache.kafka.connect.errors.DataException"),
        (RetriableError("later"), "org.apache.kafka.connect.errors.RetriableException"),
        (ConnectError("no"), "org.apache.kafka.connect.errors.ConnectException"),
        (NotFoundError("gone"), "org.apache.kafka.connect.errors.NotFoundException"),
        (AlreadyExistsError("x"), "org.apache.kafka.connect.errors.AlreadyExistsException"),
        (
            IllegalWorkerStateError("x"),
            "org.apache.kafka.connect.errors.IllegalWorkerStateException",
        ),
        (ConfigError("k", "v", "bad"), "org.apache.kafka.common.config.ConfigException"),
        (ZeroDivisionError("x"), "builtins.ZeroDivisionError"),
    ],
)
def test_errors_map_to_the_kafka_exception_they_stand_for(error: BaseException, kafka: str) -> None:
    assert kafka_exception_class(error) == kafka


def test_a_task_failed_by_a_transform_says_which_in_its_status(
    start_herder: Callable[..., StandaloneHerder], tmp_path: Path
) -> None:
    herder = start_herder(**{"task.isolation": "thread"})
    herder.log.create_topic("in", 1)
    herder.log.append("in", 0, [b'{"a":"x"}'])
    herder.put_connector_config(
        "sink",
        {
            "connector.class": "FileStreamSink",
            "file": str(tmp_path / "out.txt"),
            "topics": "in",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "false",
            "transforms": "route,cast",
            "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
            "transforms.route.regex": "in",
            "transforms.route.replacement": "orders",
            "transforms.cast.type": CAST,
            "transforms.cast.spec": "a:int32",
        },
        allow_replace=False,
    )
    wait_until(
        lambda: [t.state for t in herder.connector_status("sink").tasks] == ["FAILED"], 30, "FAILED"
    )
    trace = herder.connector_status("sink").tasks[0].trace or ""
    assert f"Tolerance exceeded in error handler (stage TRANSFORMATION, class {CAST})" in trace
