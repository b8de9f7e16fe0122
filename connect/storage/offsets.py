"""Source offsets, per connector and source partition (Kafka's `connect-offsets`).

Record format, as Kafka Connect writes it: key JSON `["<connector>", {partition}]`,
value JSON `{offset}`, null = the partition's offset was removed. Keys are written
canonically (sorted, compact) so compaction and lookups agree on equal partitions.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

from connect.storage.table import Table

__all__ = ["OffsetStore", "partition_key"]


def partition_key(connector: str, partition: Mapping[str, Any]) -> bytes:
    return json.dumps([connector, partition], sort_keys=True, separators=(",", ":")).encode()


class OffsetStore:
    def __init__(self, table: Table) -> None:
        self._table = table
        self._lock = threading.Lock()
        self._offsets: dict[bytes, tuple[str, dict[str, Any], dict[str, Any]]] = {}

    def start(self) -> None:
        self._table.start(self._apply)

    def _apply(self, key: bytes, value: bytes | None) -> None:
        try:
            connector, partition = json.loads(key)
        except (ValueError, TypeError):
            return  # not ours: ignore, as Kafka does for malformed keys
        canonical = partition_key(connector, partition)
        with self._lock:
            if value is None:
                self._offsets.pop(canonical, None)
            else:
                self._offsets[canonical] = (connector, partition, json.loads(value))

    def refresh(self) -> None:
        """Apply what other workers wrote since the last look (a task about to start
        on this worker resumes from its previous owner's last commit)."""
        self._table.refresh()

    def get(self, connector: str, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        entry = self._offsets.get(partition_key(connector, partition))
        return None if entry is None else dict(entry[2])

    def get_all(self, connector: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        self._table.refresh()
        with self._lock:
            return [(p, dict(o)) for c, p, o in self._offsets.values() if c == connector]

    def put(
        self,
        connector: str,
        offsets: Mapping[bytes, tuple[Mapping[str, Any], Mapping[str, Any] | None]],
    ) -> None:
        """Write offsets given as {partition_key: (partition, offset or None)}."""
        items = [
            (
                key,
                None
                if offset is None
                else json.dumps(offset, sort_keys=True, separators=(",", ":")).encode(),
            )
            for key, (_partition, offset) in offsets.items()
        ]
        self._table.write(items)

    def delete_connector(self, connector: str) -> None:
        doomed = [(key, None) for key, (c, _p, _o) in list(self._offsets.items()) if c == connector]
        self._table.write(doomed)

    def stop(self) -> None:
        self._table.stop()
