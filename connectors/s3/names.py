"""Object keys, as Confluent's S3 sink lays them out, and back.

    <topics.dir>/<topic>/<encoded partition>/<topic>+<kafka partition>+<start offset>.<ext>

e.g. `topics/orders/partition=0/orders+0+0000000042.json`. The start offset (zero
padded to `filename.offset.zero.pad.width`) is that of the object's first record, so
a key is a pure function of the records it holds: a replay after a crash writes the
same keys, overwriting instead of duplicating. `/` and `+` are `directory.delim` and
`file.delim`.
"""

from __future__ import annotations

from dataclasses import dataclass

from connectors.s3.config import LayoutSettings

__all__ = ["ObjectName", "object_key", "parse_key", "topic_prefix"]


def object_key(
    layout: LayoutSettings, topic: str, encoded: str, partition: int, start: int, ext: str
) -> str:
    d, f = layout.directory_delim, layout.file_delim
    name = f"{topic}{f}{partition}{f}{start:0{layout.zero_pad}d}{ext}"
    prefix = f"{layout.topics_dir}{d}" if layout.topics_dir else ""
    return f"{prefix}{topic}{d}{encoded}{d}{name}"


def topic_prefix(layout: LayoutSettings, topic: str | None = None) -> str:
    """The prefix under which the objects of `topic` (or of every topic) lie."""
    d = layout.directory_delim
    prefix = f"{layout.topics_dir}{d}" if layout.topics_dir else ""
    return prefix if topic is None else f"{prefix}{topic}{d}"


@dataclass(frozen=True, slots=True, order=True)
class ObjectName:
    """What a key says: ordered by (topic, partition, start offset, key)."""

    topic: str
    partition: int
    start: int
    key: str
    encoded: str


def parse_key(layout: LayoutSettings, key: str, ext: str) -> ObjectName | None:
    """The parts of a key S3Sink wrote with this layout, or None for any other key."""
    prefix = topic_prefix(layout)
    if not key.startswith(prefix) or not key.endswith(ext):
        return None
    rest = key[len(prefix):]
    d, f = layout.directory_delim, layout.file_delim
    topic, sep, rest = rest.partition(d)
    directory, sep2, name = rest.rpartition(d)
    if not sep or not sep2 or not directory:
        return None
    stem = name[: len(name) - len(ext)] if ext else name
    parts = stem.rsplit(f, 2)
    if len(parts) != 3 or parts[0] != topic:
        return None
    try:
        partition, start = int(parts[1]), int(parts[2])
    except ValueError:
        return None
    return ObjectName(topic, partition, start, key, directory)
