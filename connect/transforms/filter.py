"""Filter: drop every record it is applied to.

On its own it drops everything; it is meant to run under a predicate
(`transforms.x.predicate=isTombstone`), which decides which records go.
"""

from __future__ import annotations

from connect.api import ConnectRecord, Transformation
from connect.transforms._util import Configured

__all__ = ["Filter"]


class Filter(Configured, Transformation[ConnectRecord]):
    """Drops the record (returns None). No configuration."""

    def apply(self, record: ConnectRecord) -> None:
        return None
