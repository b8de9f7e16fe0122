"""Avro schemas for the schema registry: parsing, canonical identity, compatibility.

- ``AvroSchema.parse`` validates a schema as Confluent does for a new registration (Avro
  Java 1.11.4 rules) and gives its canonical text, fingerprint and fastavro form;
- ``check_compatibility(reader=, writer=)`` is Avro Java's reader/writer check;
- ``check_level(level, new=, existing=)`` applies a subject's compatibility level.

Module map: ``parse`` (text -> nodes, validation), ``canonical`` (identity text, normalize),
``schema`` (AvroSchema), ``compatibility`` (the check), ``levels`` (the seven levels).
"""

from connect.registry.avro.compatibility import (
    Incompatibility,
    check_compatibility,
    find_incompatibilities,
)
from connect.registry.avro.errors import InvalidSchemaError
from connect.registry.avro.levels import LEVELS, check_level
from connect.registry.avro.schema import AvroSchema

__all__ = [
    "LEVELS",
    "AvroSchema",
    "Incompatibility",
    "InvalidSchemaError",
    "check_compatibility",
    "check_level",
    "find_incompatibilities",
]
