"""Metrics of a running worker: the counters each task keeps (`TaskMetrics`), one view
of what runs read at request time (`connect.metrics.view`), and Kafka Connect's
metrics in Prometheus form (`ConnectCollector`, served at `/metrics`).

The Prometheus side is imported on first use (PEP 562): a task process needs only
`TaskMetrics`."""

from __future__ import annotations

import importlib
from typing import Any

from connect.metrics.task import TaskMetrics

__all__ = ["CONTENT_TYPE", "ConnectCollector", "TaskMetrics", "render"]

_LAZY = {
    "CONTENT_TYPE": "connect.metrics.prometheus",
    "ConnectCollector": "connect.metrics.prometheus",
    "render": "connect.metrics.prometheus",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'connect.metrics' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
