"""Per-topic configuration: the keys Kafka users know, declared once with their
types, defaults and ranges.

`TopicConfig.parse()` fails fast with an error naming the key; values arrive as
Python values or strings (from the CLI's `--config k=v` and JSON configs).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace

from log.errors import InvalidConfigError

__all__ = ["COMPRESSION_TYPES", "INT_MAX", "TopicConfig"]

_NEVER = 2**63 - 1  # Kafka's Long.MAX_VALUE: "never"
# Kafka's Integer.MAX_VALUE, the largest value of its int-typed keys. It is a hard
# limit here too: an index entry holds a segment position in 32 bits, so a segment
# past 4 GiB could not be indexed (every append failed), and with segments capped
# at 2 GiB a segment's offsets also fit its entries' 32-bit relative offsets.
INT_MAX = 2**31 - 1

_log = logging.getLogger(__name__)
_warned: set[tuple[str, str]] = set()

COMPRESSION_TYPES = ("none", "gzip", "lz4", "zstd", "producer")


def _int(minimum: int, maximum: int = _NEVER) -> Callable[[str, object], int]:
    def parse(key: str, value: object) -> int:
        if isinstance(value, bool):
            raise InvalidConfigError(key, value, "expected an integer")
        if isinstance(value, str):
            try:
                value = int(value.strip())
            except ValueError:
                raise InvalidConfigError(key, value, "expected an integer") from None
        if not isinstance(value, int):
            raise InvalidConfigError(key, value, "expected an integer")
        if value < minimum:
            raise InvalidConfigError(key, value, f"must be at least {minimum}")
        if value > maximum:
            raise InvalidConfigError(key, value, f"must be at most {maximum}")
        return value

    return parse


def _choice(*allowed: str) -> Callable[[str, object], str]:
    def parse(key: str, value: object) -> str:
        text = str(value).strip().lower()
        if text not in allowed:
            raise InvalidConfigError(key, value, f"must be one of {', '.join(allowed)}")
        return text

    return parse


def _policy(key: str, value: object) -> str:
    parts = sorted({p.strip().lower() for p in str(value).split(",") if p.strip()})
    if not parts or any(p not in ("compact", "delete") for p in parts):
        raise InvalidConfigError(key, value, "must be delete, compact or compact,delete")
    return ",".join(parts)


def _retention(key: str, value: object) -> int:
    """-1 means unlimited, as in Kafka."""
    parsed = _int(-1)(key, value)
    return parsed


@dataclass(frozen=True, slots=True)
class TopicConfig:
    """Settings of one topic. Field names are the Kafka keys with '.' → '_'."""

    segment_bytes: int = 1024**3
    segment_ms: int = 7 * 24 * 3600 * 1000
    segment_index_bytes: int = 10 * 1024 * 1024
    index_interval_bytes: int = 4096
    retention_ms: int = 7 * 24 * 3600 * 1000
    retention_bytes: int = -1
    cleanup_policy: str = "delete"
    delete_retention_ms: int = 24 * 3600 * 1000
    min_compaction_lag_ms: int = 0
    min_cleanable_dirty_ratio: float = 0.5
    flush_messages: int = _NEVER
    flush_ms: int = _NEVER
    compression_type: str = "producer"
    max_message_bytes: int = 64 * 1024 * 1024

    @property
    def compacted(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def deletes(self) -> bool:
        return "delete" in self.cleanup_policy

    @classmethod
    def keys(cls) -> list[str]:
        return sorted(_KEYS)

    @classmethod
    def parse(
        cls, values: Mapping[str, object] | None = None, *, base: TopicConfig | None = None
    ) -> TopicConfig:
        """Build a config from Kafka-style keys over `base` (default: the defaults).
        Unknown keys and bad values raise InvalidConfigError naming the key."""
        changes: dict[str, object] = {}
        for key, value in (values or {}).items():
            attr = _KEYS.get(key)
            if attr is None:
                raise InvalidConfigError(
                    key,
                    value,
                    f"unknown topic configuration key; known keys: {', '.join(sorted(_KEYS))}",
                )
            changes[attr] = _PARSERS[attr](key, value)
        return replace(base or cls(), **changes)

    @classmethod
    def parse_stored(cls, values: Mapping[str, object] | None, *, topic: str) -> TopicConfig:
        """A topic's saved overrides, as `parse`, except for an integer above its
        key's limit: older versions accepted one (a `segment.bytes` past 4 GiB then
        made the partition refuse every write once a segment grew that large), so
        it opens as the limit, with one warning per topic and key, instead of
        making the topic's data unreachable. New values never get this leniency."""
        clamped: dict[str, object] = {}
        for key, value in (values or {}).items():
            attr = _KEYS.get(key)
            limit = _INT_LIMITS.get(attr or "")
            if limit is not None and _above(key, value, limit):
                clamped[key] = limit
                if (topic, key) not in _warned:
                    _warned.add((topic, key))
                    _log.warning(
                        "topic %s: %s=%s is above its limit %d; using %d",
                        topic,
                        key,
                        value,
                        limit,
                        limit,
                    )
            else:
                clamped[key] = value
        return cls.parse(clamped)

    def to_dict(self) -> dict[str, object]:
        """Kafka-style keys → values, for topic metadata and `describe`."""
        return {key: getattr(self, attr) for key, attr in sorted(_KEYS.items())}


def _above(key: str, value: object, limit: int) -> bool:
    """Whether `value` is an integer above `limit` (anything else is for `parse`)."""
    try:
        return _int(-_NEVER)(key, value) > limit
    except InvalidConfigError:
        return False


def _ratio(key: str, value: object) -> float:
    try:
        parsed = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InvalidConfigError(key, value, "expected a number") from None
    if not 0.0 <= parsed <= 1.0:
        raise InvalidConfigError(key, value, "must be between 0 and 1")
    return parsed


_KEYS: dict[str, str] = {
    f.name.replace("_", "."): f.name for f in fields(TopicConfig) if not f.name.startswith("_")
}
_PARSERS: dict[str, Callable[[str, object], object]] = {
    "segment_bytes": _int(64, INT_MAX),
    "segment_ms": _int(1),
    "segment_index_bytes": _int(4096, INT_MAX),
    "index_interval_bytes": _int(0, INT_MAX),
    "retention_ms": _retention,
    "retention_bytes": _retention,
    "cleanup_policy": _policy,
    "delete_retention_ms": _int(0),
    "min_compaction_lag_ms": _int(0),
    "min_cleanable_dirty_ratio": _ratio,
    "flush_messages": _int(1),
    "flush_ms": _int(0),
    "compression_type": _choice(*COMPRESSION_TYPES),
    "max_message_bytes": _int(1, INT_MAX),
}
# The keys Kafka types as int (see INT_MAX).
_INT_LIMITS: dict[str, int] = {
    attr: INT_MAX
    for attr in (
        "segment_bytes",
        "segment_index_bytes",
        "index_interval_bytes",
        "max_message_bytes",
    )
}
assert set(_PARSERS) == set(_KEYS.values()), "every key needs a parser"
