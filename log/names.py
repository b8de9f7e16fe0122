"""Topic names: Kafka's rule, so that no name a user gives can escape the log directory."""

from __future__ import annotations

import re

from log.errors import InvalidTopicError

__all__ = ["MAX_TOPIC_NAME_LENGTH", "validate_topic_name"]

MAX_TOPIC_NAME_LENGTH = 249
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")


def validate_topic_name(name: object) -> str:
    """Return `name` if it is a legal topic name, else raise InvalidTopicError."""
    if not isinstance(name, str):
        raise InvalidTopicError(repr(name), "a topic name must be a string")
    if not name:
        raise InvalidTopicError(name, "it is empty")
    if name in (".", ".."):
        raise InvalidTopicError(name, "'.' and '..' are not allowed")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopicError(name, f"it is longer than {MAX_TOPIC_NAME_LENGTH} characters")
    if not _LEGAL.fullmatch(name):
        raise InvalidTopicError(name, "only ASCII letters, digits, '.', '_' and '-' are allowed")
    return name
