"""Errors of the plugin API: the categories a caller acts on.

    ConnectError                 anything a connector or the runtime refuses or fails at
    ├── RetriableError           transient: the runtime retries (poll/put again after a backoff)
    ├── DataError                a record that cannot be converted, validated or transformed
    │   └── SchemaError          a value that does not fit its schema, or a bad schema
    ├── ConfigError              a config value that is missing or invalid (names the key)
    ├── NotFoundError            a connector, task or plugin that does not exist
    ├── AlreadyExistsError       a connector that exists already
    └── IllegalWorkerStateError  an action that the current state does not allow

Retry policy keys off the type, never the message.
"""

from __future__ import annotations

__all__ = [
    "AlreadyExistsError",
    "ConfigError",
    "ConnectError",
    "DataError",
    "IllegalWorkerStateError",
    "NotFoundError",
    "RetriableError",
    "SchemaError",
]


class ConnectError(Exception):
    """Root of the Connect error hierarchy."""


class RetriableError(ConnectError):
    """A transient failure: the same call may succeed later (the runtime retries)."""


class DataError(ConnectError):
    """A record or value that cannot be handled (conversion, validation, transform)."""


class SchemaError(DataError):
    """A value that does not match its schema, or an invalid schema."""


class ConfigError(ConnectError):
    """An invalid configuration value; `name` is the key, `value` what was given."""

    def __init__(self, name: str, value: object = None, reason: str | None = None) -> None:
        self.name = name
        self.value = value
        self.reason = reason
        if reason is None:
            message = name
        elif value is None:
            message = f'Missing required configuration "{name}": {reason}'
        else:
            message = f"Invalid value {value} for configuration {name}: {reason}"
        super().__init__(message)


class NotFoundError(ConnectError):
    """A connector, task, plugin or offset that does not exist."""


class AlreadyExistsError(ConnectError):
    """A connector that already exists."""


class IllegalWorkerStateError(ConnectError):
    """A request the current state does not allow (e.g. offsets of a running connector)."""
