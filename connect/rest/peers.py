"""Counters of tasks that run on other workers of a cluster, asked of those workers.

A task's counters live in the process that runs it (connect.metrics.task), not in the
log: written there every few seconds they would grow the status topic by megabytes
an hour, and every worker's start-up replay with it. So a view of every task
(`connect ps`, the console) asks each worker that runs some of them for its own:
1. the worker ids come from the tasks' statuses, their URLs from the group's members
   (the distributed herder's `cluster()`; a standalone worker has no peers);
2. every such worker is asked at once, `GET <its URL>/ops/tasks?local=true`, with the
   caller's credentials (the workers of a cluster share their users, as Kafka
   Connect's do when one forwards a request to another), each bounded by
   `PEER_TIMEOUT_S`;
3. a worker that does not answer in time, or answers with an error, leaves its tasks'
   counters empty (shown as 0): the view never fails for want of a peer.
"""

from __future__ import annotations

import json
import logging
import urllib.request
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from connect.metrics.view import PeerMetrics

__all__ = ["PEER_TIMEOUT_S", "peer_metrics"]

_log = logging.getLogger("connect.rest")

#: How long one peer may take to answer (a live worker answers in milliseconds).
PEER_TIMEOUT_S = 2.0

# Why no proxies: peers are reached at the URLs they advertise to each other; an
# http_proxy meant for the internet must not sit between two workers.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))

Counters = dict[tuple[str, int], Mapping[str, Any]]


def peer_metrics(herder: Any, authorization: str | None) -> PeerMetrics | None:
    """What `connect.metrics.view.connectors_view(peers=…)` calls, or None for a herder
    with no cluster (see the module docstring)."""
    cluster = getattr(herder, "cluster", None)
    if not callable(cluster):
        return None

    def fetch(worker_ids: set[str]) -> dict[str, Counters]:
        # Step 1
        urls = {w["id"]: w["url"] for w in cluster().get("workers", []) if w.get("url")}
        wanted = sorted((w, urls[w]) for w in worker_ids if w in urls)
        if not wanted:
            return {}
        # Step 2
        with ThreadPoolExecutor(max_workers=min(8, len(wanted))) as pool:
            answers = list(pool.map(lambda item: _local_tasks(item[1], authorization), wanted))
        # Step 3
        return {w: found for (w, _), found in zip(wanted, answers, strict=True) if found}

    return fetch


def _local_tasks(url: str, authorization: str | None) -> Counters | None:
    request = urllib.request.Request(
        url.rstrip("/") + "/ops/tasks?local=true", headers={"Accept": "application/json"}
    )
    if authorization:
        request.add_header("Authorization", authorization)
    try:
        with _OPENER.open(request, timeout=PEER_TIMEOUT_S) as response:
            tasks = json.loads(response.read())["tasks"]
        return {(str(t["connector"]), int(t["task"])): t.get("metrics") or {} for t in tasks}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        _log.info("no task counters from %s: %s", url, exc)
        return None
