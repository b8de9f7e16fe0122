"""The log's background work: retention, compaction, `flush.ms` and aborting
transactions past `transaction.timeout.ms`, in one daemon thread per FileLog, so
appends never wait for any of it.

Each pass visits every partition of every topic; a failure on one partition is
logged and does not stop the others.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from log.cleaner import clean_partition
from log.errors import LogError

if TYPE_CHECKING:
    from log.filelog import FileLog

__all__ = ["Maintenance"]

_log = logging.getLogger(__name__)


class Maintenance:
    def __init__(self, log: FileLog, *, interval_s: float) -> None:
        self._log = log
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="log-maintenance", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=30)
        self._thread = None

    def _run(self) -> None:
        # flush.ms is checked every second; retention and compaction every interval.
        ticks = 0
        every = max(1, round(self._interval_s))
        while not self._stop.wait(min(1.0, self._interval_s)):
            ticks += 1
            try:
                if ticks % every == 0:
                    self.run_once()
                else:
                    for part in self._log.open_partitions():
                        part.flush_if_due()
            except Exception:
                _log.exception("log maintenance pass failed")

    def run_once(self) -> dict[str, int]:
        stats = {"segments_deleted": 0, "records_compacted": 0, "partitions_cleaned": 0}
        try:
            stats["transactions_aborted"] = self._log.abort_expired_transactions()
        except (LogError, OSError):
            _log.exception("aborting expired transactions failed")
        for part in self._log.all_partitions():
            if self._stop.is_set() and self._thread is not None:
                break
            try:
                part.flush_if_due()
                stats["segments_deleted"] += part.apply_retention()
                result = clean_partition(part)
                if result.segments_before:
                    stats["partitions_cleaned"] += 1
                    stats["records_compacted"] += result.records_removed
            except (LogError, OSError):
                _log.exception("maintenance of %s failed", part)
        return stats
