"""Dead-letter headers never carry a password: a failure whose message quotes a
connection URL (or the connector's password itself) is masked in
`__connect.errors.exception.message` and `.stacktrace`, as every log line is."""

from __future__ import annotations

from collections.abc import Callable

from connect.errors.dlq import DeadLetterQueueReporter
from connect.errors.handler import ErrorContext, Stage
from connect.herder.secrets import remember_secrets
from log import FileLog


def _failure(message: str) -> ErrorContext:
    try:
        raise ValueError(message)
    except ValueError as exc:
        error = exc
    return ErrorContext(
        stage=Stage.TASK_PUT,
        plugin="Sink",
        error=error,
        topic="in",
        partition=0,
        offset=7,
        raw_value=b"v",
    )


def test_a_url_password_and_a_remembered_secret_are_hidden(
    make_log: Callable[..., FileLog],
) -> None:
    log = make_log()
    remember_secrets(["s3cr3t-literal-pw"])
    reporter = DeadLetterQueueReporter(log, "dlq", connector="c", task=0, context_headers=True)
    reporter(_failure("cannot reach postgresql://app:url-pw-123@db:5432/shop"))
    reporter(_failure("login refused for password s3cr3t-literal-pw"))
    records = log.read("dlq", 0, 0, max_records=10)
    assert len(records) == 2
    for record in records:
        headers = dict(record.headers)
        shown = headers["__connect.errors.exception.message"] + b"\n"
        shown += headers["__connect.errors.exception.stacktrace"]
        assert b"url-pw-123" not in shown and b"s3cr3t-literal-pw" not in shown
        assert b"[hidden]" in headers["__connect.errors.exception.message"]
        assert b"ValueError" in headers["__connect.errors.exception.stacktrace"]
