"""Compatibility levels: a table of direction x scope over one reader/writer check.

    level                direction                      scope
    NONE                 -                              -
    BACKWARD             new reads old                  latest
    BACKWARD_TRANSITIVE  new reads old                  all
    FORWARD              old reads new                  latest
    FORWARD_TRANSITIVE   old reads new                  all
    FULL                 both                           latest
    FULL_TRANSITIVE      both                           all

As Confluent's ``SchemaValidatorBuilder`` does it: the versions are checked newest first and
the check stops at the first version that fails; each problem is reported in Confluent's
verbose form with the roles named "new" and "old", followed by the failing version's number
(when known) and text. For "both", the old-reads-new problems come first, then the
new-reads-old ones and the old schema.
"""

from __future__ import annotations

from collections.abc import Sequence

from connect.registry.avro.compatibility import find_incompatibilities
from connect.registry.avro.schema import AvroSchema

_NEW_READS_OLD = "new reads old"
_OLD_READS_NEW = "old reads new"
_BOTH = "both"

LEVELS: dict[str, tuple[str, str] | None] = {
    "NONE": None,
    "BACKWARD": (_NEW_READS_OLD, "latest"),
    "BACKWARD_TRANSITIVE": (_NEW_READS_OLD, "all"),
    "FORWARD": (_OLD_READS_NEW, "latest"),
    "FORWARD_TRANSITIVE": (_OLD_READS_NEW, "all"),
    "FULL": (_BOTH, "latest"),
    "FULL_TRANSITIVE": (_BOTH, "all"),
}


def check_level(level: str, *, new: AvroSchema, existing: Sequence[AvroSchema],
                versions: Sequence[int] | None = None) -> list[str]:
    """Problems that keep ``new`` from joining a subject whose live versions are
    ``existing`` (oldest to newest) under ``level``; empty means allowed.

    ``versions``, when given, are the version numbers of ``existing`` (same order), so the
    answer can name the version that failed. Raises ValueError for an unknown level; the
    name is matched case-insensitively, as Confluent accepts lowercase levels.
    """
    if not isinstance(level, str) or level.upper() not in LEVELS:
        raise ValueError(f"unknown compatibility level {level!r}; expected one of "
                         f"{', '.join(LEVELS)}")
    if versions is not None and len(versions) != len(existing):
        raise ValueError(f"{len(versions)} version numbers for {len(existing)} schemas")
    rule = LEVELS[level.upper()]
    if rule is None or not existing:
        return []
    direction, scope = rule
    newest_first = list(reversed(range(len(existing))))
    for index in newest_first[:1] if scope == "latest" else newest_first:
        version = versions[index] if versions is not None else None
        problems = _check_pair(direction, new, existing[index], version)
        if problems:
            return problems
    return []


def _check_pair(direction: str, new: AvroSchema, old: AvroSchema, version: int | None
                ) -> list[str]:
    problems: list[str] = []
    if direction in (_OLD_READS_NEW, _BOTH):
        found = [i.confluent(reader_role="old", writer_role="new")
                 for i in find_incompatibilities(reader=old, writer=new)]
        if found and direction == _OLD_READS_NEW:
            found += _about(old, version)
        problems += found
    if direction in (_NEW_READS_OLD, _BOTH):
        found = [i.confluent(reader_role="new", writer_role="old")
                 for i in find_incompatibilities(reader=new, writer=old)]
        if found:
            found += _about(old, version)
        problems += found
    return problems


def _about(old: AvroSchema, version: int | None) -> list[str]:
    about = [] if version is None else [f"{{oldSchemaVersion: {version}}}"]
    return [*about, f"{{oldSchema: '{old.text}'}}"]
