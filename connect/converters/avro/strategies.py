"""Subject name strategies: which registry subject a record's schema goes under.

| strategy                | subject                          |
| TopicNameStrategy       | `<topic>-key` / `<topic>-value`  |
| RecordNameStrategy      | the record's full name           |
| TopicRecordNameStrategy | `<topic>-<record full name>`     |

Each is also accepted under Confluent's class name
(`io.confluent.kafka.serializers.subject.TopicNameStrategy`, …) and Python's
strategy types (`TOPIC`, `RECORD`, `TOPIC_RECORD`).

A strategy is a function `(topic, is_key, record_name) -> subject`; `record_name` is
None when the schema is not an Avro record, which the record strategies refuse.
"""

from __future__ import annotations

from collections.abc import Callable

from connect.api.errors import ConfigError, DataError

__all__ = [
    "STRATEGIES",
    "SubjectNameStrategy",
    "record_name_strategy",
    "strategy_named",
    "topic_name_strategy",
    "topic_record_name_strategy",
]

SubjectNameStrategy = Callable[[str, bool, str | None], str]

_CONFLUENT_PACKAGE = "io.confluent.kafka.serializers.subject"


def topic_name_strategy(topic: str, is_key: bool, record_name: str | None) -> str:
    return f"{topic}-key" if is_key else f"{topic}-value"


def _need_record(strategy: str, record_name: str | None) -> str:
    if record_name is None:
        raise DataError(f"{strategy} needs a record (struct) schema, not a primitive or union")
    return record_name


def record_name_strategy(topic: str, is_key: bool, record_name: str | None) -> str:
    return _need_record("RecordNameStrategy", record_name)


def topic_record_name_strategy(topic: str, is_key: bool, record_name: str | None) -> str:
    return f"{topic}-{_need_record('TopicRecordNameStrategy', record_name)}"


STRATEGIES: dict[str, SubjectNameStrategy] = {
    "TopicNameStrategy": topic_name_strategy,
    "RecordNameStrategy": record_name_strategy,
    "TopicRecordNameStrategy": topic_record_name_strategy,
}


def strategy_named(name: str, *, config_name: str) -> SubjectNameStrategy:
    """The strategy for a short name, Confluent's class name, or Python's
    `TOPIC` / `RECORD` / `TOPIC_RECORD` type names."""
    text = name.strip()
    short = text.rpartition(".")[2] if text.startswith(_CONFLUENT_PACKAGE + ".") else text
    short = {
        "TOPIC": "TopicNameStrategy",
        "RECORD": "RecordNameStrategy",
        "TOPIC_RECORD": "TopicRecordNameStrategy",
    }.get(short.upper(), short)
    try:
        return STRATEGIES[short]
    except KeyError:
        raise ConfigError(
            config_name, name, f"unknown subject name strategy; use one of {sorted(STRATEGIES)}"
        ) from None
