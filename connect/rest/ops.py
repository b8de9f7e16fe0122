"""Beyond Kafka's REST surface: what an operator watches and the CLI reads.

- `GET /metrics`: Prometheus' text format (connect.metrics.prometheus).
- `GET /ops/tasks`: every task with its state, worker, type and records in/out
  (`connect ps`), those of other workers of a cluster asked of them
  (connect.rest.peers); `?local=true`: only the tasks this worker runs.
- `GET /ops/lag[?connector=NAME]`: per sink connector and partition, the log end
  offset, the committed offset and the lag (`connect lag`).
- `GET /ops/connectors/{name}/offsets-for-time?timestamp_ms=N`: the offsets entries
  that move a sink connector to the first record at or after N in each partition (the
  log's time index), ready to PATCH to `/connectors/{name}/offsets` — replay from a
  point in time, which Kafka's offsets API cannot do (`connect offsets reset
  --to-datetime`).
- `GET /ops/connectors/{name}/offsets-at-end?end=earliest|latest`: the same entries
  for each partition's log start or log end (`connect offsets set|reset --to-earliest
  / --to-latest`): the explicit way to either end, now that PATCH refuses an offset
  outside a partition's range.

All of them sit behind the same basic auth as every endpoint (the middleware wraps
the whole app). They are plain `def`s: FastAPI runs them in its threadpool, so
reading the log does not block the event loop.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from starlette.responses import JSONResponse, Response

from connect.api import NotFoundError
from connect.herder.api import BadRequestError
from connect.metrics.view import (
    connectors_view,
    partition_at_end,
    partition_for_time,
    sink_lag,
)
from connect.rest.params import HerderDep
from connect.rest.peers import peer_metrics

__all__ = ["router"]

router = APIRouter(tags=["operations"])


def _log(herder: Any) -> Any:
    log = getattr(herder, "log", None)
    if log is None:
        raise BadRequestError("This worker's herder exposes no log")
    return log


@router.get("/metrics", summary="Prometheus metrics of this worker, its tasks and its log")
def metrics(herder: HerderDep) -> Response:
    from connect.metrics.prometheus import CONTENT_TYPE, render

    return Response(render(herder), media_type=CONTENT_TYPE)


@router.get("/ops/tasks", summary="Every task: state, worker, type, records in and out")
def tasks(
    herder: HerderDep,
    request: Request,
    local: Annotated[
        bool, Query(description="only the tasks this worker runs (what peers ask)")
    ] = False,
) -> JSONResponse:
    if local:
        me = herder.worker_id()
        views = connectors_view(herder)
        out = [t.to_json() for c in views for t in c.tasks if t.worker_id == me and t.metrics]
    else:
        peers = peer_metrics(herder, request.headers.get("authorization"))
        out = [t.to_json() for c in connectors_view(herder, peers=peers) for t in c.tasks]
    return JSONResponse({"tasks": out})


@router.get("/ops/lag", summary="Per sink connector and partition: log end, committed, lag")
def lag(
    herder: HerderDep,
    connector: Annotated[str | None, Query(description="one sink connector")] = None,
) -> JSONResponse:
    log = _log(herder)
    if connector is not None:
        herder.connector_info(connector)  # NotFoundError → 404
    out = []
    for c in connectors_view(herder):
        if c.type == "sink" and connector in (None, c.name):
            out += [item.to_json() for item in sink_lag(log, c.name, c.config)]
    if connector is not None and not out and herder.connector_info(connector).type != "sink":
        raise BadRequestError(f"Connector {connector} is not a sink connector")
    return JSONResponse({"lag": out})


@router.get(
    "/ops/connectors/{name}/offsets-for-time",
    summary="Offsets of a sink connector's partitions at a time (to PATCH to its offsets)",
)
def offsets_for_time(
    herder: HerderDep,
    name: str,
    timestamp_ms: Annotated[int, Query(description="milliseconds since the epoch, UTC")],
) -> JSONResponse:
    log = _log(herder)
    config = _sink_config(herder, name, "a time can be looked up for")
    return JSONResponse({"offsets": partition_for_time(log, name, config, timestamp_ms)})


@router.get(
    "/ops/connectors/{name}/offsets-at-end",
    summary="Offsets of a sink connector's partitions at their log start or end (to PATCH)",
)
def offsets_at_end(
    herder: HerderDep,
    name: str,
    end: Annotated[
        Literal["earliest", "latest"],
        Query(description="earliest: each partition's log start; latest: its log end"),
    ],
) -> JSONResponse:
    log = _log(herder)
    config = _sink_config(herder, name, "have a start and an end")
    return JSONResponse({"offsets": partition_at_end(log, name, config, end=end)})


def _sink_config(herder: Any, name: str, what: str) -> dict[str, str]:
    """The config of sink connector `name`; a source connector is a 400 (its offsets
    belong to its source system)."""
    info = herder.connector_info(name)
    if info.type != "sink":
        raise BadRequestError(
            f"Connector {name} is a {info.type} connector; only a sink connector's offsets "
            f"are log positions that {what}"
        )
    config = herder.connector_config(name)
    if config is None:
        raise NotFoundError(f"Connector {name} not found")
    return config
