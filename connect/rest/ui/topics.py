"""`GET /ops/topics`: every topic of the worker's log with its partitions' earliest and
latest offsets, and its segments and bytes on disk (the console's Topics page).

Offsets come from the log (`earliest_offset` / `latest_offset` per partition), so the
record count of a partition is latest − earliest (compaction may leave fewer). Size
and segments come from `connect.metrics.view.log_usage`, the same directory listing
`/metrics` reads; on a log without a directory (Kafka) they are null.

A topic is `internal` when the runtime keeps its own state in it (the config,
offset and status topics this worker was configured with, the registry's `_schemas`,
consumer offsets): the console hides those unless asked.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.responses import JSONResponse

from connect.herder.api import BadRequestError
from connect.metrics.view import log_usage
from connect.rest.params import HerderDep
from log import LogError

__all__ = ["router"]

router = APIRouter(tags=["console"])

_STORAGE_KEYS = ("config.storage.topic", "offset.storage.topic", "status.storage.topic")


def _internal_names(herder: Any) -> set[str]:
    config = getattr(herder, "config", None) or {}
    return {str(config[k]) for k in _STORAGE_KEYS if config.get(k)}


def _partitions(log: Any, topic: str) -> list[dict[str, int]]:
    out = []
    try:
        count = log.partition_count(topic)
    except LogError:
        return out  # deleted while listing
    for p in range(count):
        try:
            earliest, latest = log.earliest_offset(topic, p), log.latest_offset(topic, p)
        except LogError:
            continue
        out.append({"partition": p, "earliest_offset": earliest, "latest_offset": latest})
    return out


@router.get("/ops/topics", summary="Topics: partitions, earliest/latest offsets, size on disk")
def topics(herder: HerderDep) -> JSONResponse:
    log = getattr(herder, "log", None)
    if log is None:
        raise BadRequestError("This worker's herder exposes no log")
    internal = _internal_names(herder)
    names = log.list_topics(include_internal=True)
    offsets = {name: _partitions(log, name) for name in names}
    # The listing after the offsets: a topic created meanwhile shows its files, never
    # records counted from offsets with no segment on disk yet.
    usage = {t.name: t for t in log_usage(log)}
    out = []
    for name in names:
        partitions = offsets[name]
        used = usage.get(name)
        out.append(
            {
                "name": name,
                "internal": name.startswith("_") or name in internal,
                "partitions": partitions,
                "records": sum(p["latest_offset"] - p["earliest_offset"] for p in partitions),
                "segments": used.segments if used is not None else None,
                "size_bytes": used.size_bytes if used is not None else None,
            }
        )
    return JSONResponse({"topics": out})
