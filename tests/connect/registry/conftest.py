"""Fixtures: registries over real FileLogs in tmp_path, and live REST servers on port 0.

Until `connect.registry.avro` exists, a stand-in takes its place (tests only)."""

from __future__ import annotations

import importlib
import sys

try:
    _avro = importlib.import_module("connect.registry.avro")
    _avro.AvroSchema, _avro.check_level  # noqa: B018
except (ImportError, AttributeError):
    from tests.connect.registry import _avro_standin

    sys.modules["connect.registry.avro"] = _avro_standin
