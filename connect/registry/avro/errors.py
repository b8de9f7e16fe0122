"""Errors of the Avro schema layer.

    ValueError
     └── InvalidSchemaError    the text is not a valid Avro schema (REST: 422, error 42201)

Compatibility problems are not exceptions: a check returns a list of reasons (empty means
compatible), because a registry reports all of them at once rather than the first.
"""

from __future__ import annotations


class InvalidSchemaError(ValueError):
    """The schema text cannot be accepted; ``reason`` says what is wrong and ``path`` where.

    ``path`` is a JSON-pointer-like location in the submitted schema ("" is the root), so a
    user can find the offending node; the message is built from both.
    """

    def __init__(self, reason: str, *, path: str = "") -> None:
        self.reason = reason
        self.path = path
        super().__init__(f"Invalid Avro schema at {path}: {reason}" if path else
                         f"Invalid Avro schema: {reason}")
