"""Logger levels for `/admin/loggers`, with Kafka's level names (log4j's) mapped onto
Python's logging: OFF, FATAL, ERROR, WARN, INFO, DEBUG, TRACE. Changes last until the
worker restarts, as in Kafka."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from connect.api import NotFoundError

__all__ = ["LoggerLevels"]

TRACE = 5
logging.addLevelName(TRACE, "TRACE")
_TO_PYTHON = {
    "OFF": logging.CRITICAL + 10,
    "FATAL": logging.CRITICAL,
    "ERROR": logging.ERROR,
    "WARN": logging.WARNING,
    "INFO": logging.INFO,
    "DEBUG": logging.DEBUG,
    "TRACE": TRACE,
}
_FROM_PYTHON = {v: k for k, v in _TO_PYTHON.items()}


def _kafka_level(level: int) -> str:
    return _FROM_PYTHON.get(level, logging.getLevelName(level))


class LoggerLevels:
    def __init__(self) -> None:
        self._modified: dict[str, int] = {}
        self._lock = threading.Lock()

    def all(self) -> dict[str, dict[str, Any]]:
        """Loggers set explicitly, and root."""
        out = {
            "root": {
                "level": _kafka_level(logging.getLogger().getEffectiveLevel()),
                "last_modified": self._modified.get("root"),
            }
        }
        manager = logging.Logger.manager
        for name, logger in sorted(manager.loggerDict.items()):
            if isinstance(logger, logging.Logger) and logger.level != logging.NOTSET:
                out[name] = {
                    "level": _kafka_level(logger.level),
                    "last_modified": self._modified.get(name),
                }
        return out

    def get(self, name: str) -> dict[str, Any]:
        levels = self.all()
        if name not in levels:
            raise NotFoundError(f"Logger {name} not found.")
        return levels[name]

    def set(self, namespace: str, level: str) -> list[str]:
        """Set `namespace` and every logger below it; return the names whose level
        changed. As in Kafka, a logger already at `level` is left alone: it is not
        listed and keeps its `last_modified` (setting a level twice answers [])."""
        python_level = _TO_PYTHON.get(str(level).upper())
        if python_level is None:
            raise NotFoundError(f"invalid log level '{level}'.")
        now = int(time.time() * 1000)
        affected = []
        with self._lock:
            if namespace == "root":
                names = ["root"]
            else:
                names = [
                    n
                    for n in logging.Logger.manager.loggerDict
                    if n == namespace or n.startswith(namespace + ".")
                ]
                if namespace not in names:
                    names.append(namespace)
            for name in sorted(names):
                logger = logging.getLogger() if name == "root" else logging.getLogger(name)
                if logger.level == python_level:
                    continue
                logger.setLevel(python_level)
                self._modified[name] = now
                affected.append(name)
        return affected
