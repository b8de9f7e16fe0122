"""DeltaSink: Kafka Connect–style topics into Delta Lake tables through delta-rs,
exactly once by the Delta protocol's transaction identifiers (see `table`)."""

__all__: list[str] = []
