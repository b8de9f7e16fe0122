"""Binlog positions: an offset's `file` / `pos` / `gtids`, and GTID positions kept by
their key (MariaDB's domain, MySQL's source uuid) as the stream commits transactions.
Split from `connectors.mysql.binlog`, which reads the stream."""

from __future__ import annotations

from typing import Any

__all__ = ["add_gtid", "format_gtids", "offset_at", "parse_gtids"]


def offset_at(file: str, pos: int, gtids: str | None) -> dict[str, Any]:
    offset: dict[str, Any] = {"file": file, "pos": pos}
    if gtids:
        offset["gtids"] = gtids
    return offset


def parse_gtids(text: str | None) -> dict[str, str]:
    """A GTID position by its key: MariaDB's `0-1-42,1-2-7` by domain, MySQL's
    `uuid:1-42,uuid2:1-7` by source uuid."""
    out: dict[str, str] = {}
    for part in (text or "").replace("\n", "").split(","):
        part = part.strip()
        if part:
            out[part.split(":", 1)[0] if ":" in part else part.split("-", 1)[0]] = part
    return out


def add_gtid(gtids: dict[str, str], gtid: str, *, mariadb: bool) -> None:
    """A committed transaction's GTID into the position: MariaDB keeps the last GTID
    per domain; MySQL's set is kept per source as `uuid:1-<n>` (the transactions one
    server commits are numbered without gaps)."""
    if mariadb:
        gtids[gtid.split("-", 1)[0]] = gtid
    else:
        uuid, _, number = gtid.partition(":")
        gtids[uuid] = f"{uuid}:1-{number}"


def format_gtids(gtids: dict[str, str]) -> str | None:
    return ",".join(gtids[k] for k in sorted(gtids)) or None
