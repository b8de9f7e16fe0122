"""Filter: drop every record it is applied to.

On its own it drops everything; it is meant to run under a predicate
(`transforms.x.predicate=isTombstone`), which decides which records go.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api import ConfigDef, ConnectRecord, Transformation

__all__ = ["Filter"]


class Filter(Transformation[ConnectRecord]):
    """Drops the record (returns None). No configuration."""

    def config(self) -> ConfigDef:
        return ConfigDef()

    def configure(self, configs: Mapping[str, Any]) -> None:
        pass

    def apply(self, record: ConnectRecord) -> None:
        return None
