"""Fixtures: a live REST server (real herder, real log, real HTTP) and its client."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.connect.rest.live import Live, LiveServers


@pytest.fixture
def start_rest(tmp_path: Path) -> Iterator[LiveServers]:
    servers = LiveServers(tmp_path)
    yield servers
    servers.close()


@pytest.fixture
def rest(start_rest: LiveServers) -> Live:
    return start_rest()


@pytest.fixture
def client(rest: Live) -> httpx.Client:
    return rest.client


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """Logger levels are process-wide: put back what a test changed."""
    manager = logging.Logger.manager
    before = {
        name: logger.level
        for name, logger in manager.loggerDict.items()
        if isinstance(logger, logging.Logger)
    }
    root = logging.getLogger().level
    yield
    logging.getLogger().setLevel(root)
    for name, logger in list(manager.loggerDict.items()):
        if isinstance(logger, logging.Logger):
            logger.setLevel(before.get(name, logging.NOTSET))
