"""The schema registry: Confluent Schema Registry's API and semantics over the log.

- `connect.registry.avro`: Avro schemas (parsing, canonical text, compatibility);
- `connect.registry.core`: subjects, versions, ids, config and mode, kept in `_schemas`;
- `connect.registry.rest`: the Confluent-compatible REST API and its server.
"""
