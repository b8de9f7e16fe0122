"""The consumed offsets a table holds, in its snapshots' summaries.

Every commit of the sink puts `tributary.offsets.<connector>` in the summary of the
snapshot(s) it makes: JSON `{"<topic>": {"<partition>": next offset}}` for the
partitions whose records the commit completes. Keyed by connector, so several
connectors (and several tasks of one, each with its own partitions) share a table;
a partition's position is the one of the NEWEST snapshot that names it, found by
walking the ancestry of the head of the branch the connector commits to newest first
(`iceberg.tables.default-commit-branch`, `iceberg.table.<t>.commit-branch`; main's
current snapshot by default, and while the branch does not exist yet: the first
commit makes it from there). An upsert's two snapshots (the
rewrite and the append) carry the same property, so either tells the same.

Why the summary and not the consumer group: the snapshot and its offsets are one
catalog commit, so after a crash at any moment the table says exactly which records
it holds; the group's offsets are only ever behind it (`pre_commit` hands the runtime
these very offsets), and the sink skips what the table already has.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from connect.api import TopicPartition

if TYPE_CHECKING:
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

__all__ = ["PROPERTY_PREFIX", "branch_head", "committed_offsets", "offsets_property"]

PROPERTY_PREFIX = "tributary.offsets."


def branch_head(table: Table, branch: str | None) -> Snapshot | None:
    """The snapshot the connector's next commit to `branch` builds on: the branch's
    head, or main's current snapshot while the branch does not exist (or for None)."""
    if branch is not None:
        head = table.metadata.snapshot_by_name(branch)
        if head is not None:
            return head
    return table.current_snapshot()


def offsets_property(connector: str, offsets: Mapping[TopicPartition, int]) -> dict[str, str]:
    """The summary property of a commit completing `offsets` (next offsets)."""
    by_topic: dict[str, dict[str, int]] = {}
    for tp, offset in offsets.items():
        by_topic.setdefault(tp.topic, {})[str(tp.partition)] = int(offset)
    return {PROPERTY_PREFIX + connector: json.dumps(by_topic, sort_keys=True)}


def committed_offsets(
    table: Table, connector: str, partitions: Iterable[TopicPartition] | None = None,
    *, branch: str | None = None,
) -> dict[TopicPartition, int]:
    """The next offset `branch` of the table wants (main's by default), per partition
    it has records of (of `partitions` only, when given: the walk stops once all are
    found)."""
    from pyiceberg.table.snapshots import ancestors_of

    key = PROPERTY_PREFIX + connector
    wanted = set(partitions) if partitions is not None else None
    found: dict[TopicPartition, int] = {}
    current = branch_head(table, branch)
    if current is None:
        return found
    for snapshot in ancestors_of(current, table.metadata):
        summary = snapshot.summary
        text = summary.additional_properties.get(key) if summary is not None else None
        if text is None:
            continue
        for topic, parts in json.loads(text).items():
            for partition, offset in parts.items():
                tp = TopicPartition(topic, int(partition))
                if tp not in found and (wanted is None or tp in wanted):
                    found[tp] = int(offset)
        if wanted is not None and wanted <= found.keys():
            break
    return found
