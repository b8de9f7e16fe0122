"""`/ops/connectors` and `/ops/workers`: what the console's lists show, each in one
request.

Why not Kafka's `GET /connectors?expand=status&expand=info`: it asks the herder once per
connector (a status refresh and a config lookup each: its time grows with the
connectors, docs/performance.md), carries every config (which the list does not show)
and knows nothing of records or dead letters. These read `connect.metrics.view` in one
pass (bench/ops_bench.py's ops_connectors_ms), the same numbers `/metrics` and
`connect ps` show, and never carry a config, so no secret can leak through them.

- `GET /ops/connectors[?connector=NAME]`: every connector (or one) with its state,
  target, type, class and worker; its tasks with state, worker, trace and counters;
  records per second in and out; and `history`, the recent rates of all connectors
  summed (or of the one named) for the charts (see `connect.rest.ui.history`).
- `GET /ops/workers`: the workers of the cluster — the one answering, the group's
  members when the herder is distributed (with their REST URLs and the leader), and
  any other worker the status topic names — with their connectors and tasks counted
  by state.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from starlette.responses import JSONResponse

from connect.metrics.view import ConnectorView, TaskView, connectors_view
from connect.rest.params import HerderDep
from connect.rest.peers import peer_metrics
from connect.rest.ui.history import Rate, ThroughputHistory

__all__ = ["router"]

router = APIRouter(tags=["console"])

_NO_RATE = Rate(0, 0.0, 0.0)


def _history(request: Request) -> ThroughputHistory:
    history = getattr(request.app.state, "throughput", None)
    if history is None:
        history = request.app.state.throughput = ThroughputHistory()
    return history


def _task_json(task: TaskView, traces: dict[int, str | None]) -> dict[str, Any]:
    get = task.metrics.get
    return {
        "id": task.task,
        "state": task.state,
        "worker_id": task.worker_id,
        "trace": traces.get(task.task),
        "records_in": task.records_in,
        "records_out": task.records_out,
        "record_failures": int(get("record_failures", 0)),
        "records_skipped": int(get("records_skipped", 0)),
        "dlq_records": int(get("dlq_records", 0)),
    }


def _traces(herder: Any, name: str) -> tuple[str | None, dict[int, str | None]]:
    """The connector's own trace and its tasks' (only FAILED ones carry one)."""
    status = getattr(herder, "status", None)
    if status is None:
        return None, {}
    # Masked as every exit masks a trace (connect.herder.secrets): a failure may quote
    # the connector's URL with its password.
    masked = getattr(herder, "masked_trace", lambda _name, trace: trace)
    own = status.connector(name)
    tasks = {s.task or 0: masked(name, s.trace) for s in status.tasks(name) if s.trace}
    return (masked(name, own.trace) if own is not None else None), tasks


def _connector_json(herder: Any, view: ConnectorView, rate: Rate) -> dict[str, Any]:
    trace, task_traces = _traces(herder, view.name)
    tasks = [_task_json(t, task_traces) for t in view.tasks]
    return {
        "name": view.name,
        "type": view.type,
        "class": view.connector_class,
        "state": view.state,
        "target": view.target,
        "worker_id": view.worker_id,
        "trace": trace,
        "tasks": tasks,
        "records_in": sum(t["records_in"] for t in tasks),
        "records_out": sum(t["records_out"] for t in tasks),
        "in_per_s": round(rate.records_in, 2),
        "out_per_s": round(rate.records_out, 2),
        "record_failures": sum(t["record_failures"] for t in tasks),
        "dlq_records": sum(t["dlq_records"] for t in tasks),
    }


@router.get(
    "/ops/connectors",
    summary="Every connector with state, tasks, traces, counters and records/s (the console)",
)
def connectors(
    herder: HerderDep,
    request: Request,
    connector: Annotated[str | None, Query(description="one connector")] = None,
) -> JSONResponse:
    peers = peer_metrics(herder, request.headers.get("authorization"))
    views = connectors_view(herder, peers=peers)
    history = _history(request)
    history.record({v.name: (_sum_in(v), _sum_out(v)) for v in views})
    rates = history.current()
    if connector is not None:
        herder.connector_info(connector)  # NotFoundError → 404
        views = [v for v in views if v.name == connector]
    return JSONResponse(
        {
            "at": int(time.time() * 1000),
            "worker_id": herder.worker_id(),
            "connectors": [_connector_json(herder, v, rates.get(v.name, _NO_RATE)) for v in views],
            "history": {
                "window_s": history.window_s,
                "samples": [r.to_json() for r in history.series(connector)],
            },
        }
    )


def _sum_in(view: ConnectorView) -> int:
    return sum(t.records_in for t in view.tasks)


def _sum_out(view: ConnectorView) -> int:
    return sum(t.records_out for t in view.tasks)


def _members(herder: Any) -> tuple[dict[str, dict[str, Any]], str | None, int | None]:
    """The group's live members (id → member), its leader and generation, when the
    herder is a distributed one (its `cluster()`); nothing for a standalone herder."""
    cluster = getattr(herder, "cluster", None)
    if not callable(cluster):
        return {}, None, None
    view = cluster()
    return {w["id"]: w for w in view.get("workers", [])}, view.get("leader"), view.get("generation")


@router.get("/ops/workers", summary="The cluster's workers, their connectors and tasks by state")
def workers(herder: HerderDep, request: Request) -> JSONResponse:
    me = herder.worker_id()
    members, leader, generation = _members(herder)
    connectors_by: dict[str, Counter[str]] = {me: Counter()}
    tasks_by: dict[str, Counter[str]] = {me: Counter()}
    for view in connectors_view(herder):
        if view.worker_id:
            connectors_by.setdefault(view.worker_id, Counter())[view.state] += 1
        for task in view.tasks:
            if task.worker_id:
                tasks_by.setdefault(task.worker_id, Counter())[task.state] += 1
    info = herder.server_info()
    health = herder.health()
    out = []
    known = set(connectors_by) | set(tasks_by) | set(members)
    for worker in sorted(known, key=lambda w: (w != me, w)):
        this = worker == me
        member = members.get(worker, {})
        url = member.get("url") or (str(request.base_url).rstrip("/") if this else None)
        out.append(
            {
                "id": worker,
                "this": this,
                "url": url,
                "version": info.get("version") if this else None,
                "status": health.get("status") if this else None,
                # A standalone worker is the whole cluster; in a group, a worker that
                # only the status topic names has left it (its statuses are stale).
                "member": this or worker in members,
                "leader": worker == leader,
                "connectors": dict(connectors_by.get(worker, {})),
                "tasks": dict(tasks_by.get(worker, {})),
            }
        )
    return JSONResponse(
        {
            "workers": out,
            "mode": "distributed" if members else "standalone",
            "generation": generation,
            "kafka_cluster_id": info.get("kafka_cluster_id"),
        }
    )
