"""A worker's claim on its embedded log directory, held for the life of the process.

Why: a standalone worker keeps everything it knows (configs, offsets, statuses) in
its log directory and runs every connector stored there. Two of them on one
directory each start every connector: every record is read, written and delivered
twice, and the status topic names whichever wrote last. Distributed workers share a
directory by design (the group topic decides who runs what), but a standalone worker
beside them would run their connectors a second time. So a standalone worker claims
its directory exclusively and a distributed worker claims it shared: distributed
workers admit each other, and nothing else runs beside a standalone worker.

The claim is an OS file lock (flock) on `<log.dir>/.worker.lock`, not a pid file:
the kernel drops it when the process dies, so a worker killed with SIGKILL never
blocks the next start. The lock's descriptor is not inherited by task processes
(Python opens files non-inheritable and tasks are spawned with exec), so a task
process left behind by a crash does not hold it either. Beside the lock each holder
leaves `<log.dir>/.workers/<pid>.json` (pid, REST URL, mode, the names its config
gives the internal topics): to name the running worker to the one that is refused,
and for `connect log delete` to know which topics running workers keep their state
in; the lock alone decides who runs.

Claim (numbered as in `LogDirClaim.acquire`):
1. open (create) the lock file and try to lock it without waiting: exclusive for a
   standalone worker, shared for a distributed one;
2. refused: raise LogDirInUseError naming the directory and the holders whose info
   files belong to live processes;
3. granted: remove info files that are stale (every other one when exclusive: no
   other holder can be alive; those of dead pids when shared);
4. write our own info file (atomically), rewritten by `note_url` once the REST
   server knows its real port.
`release` removes the info file and unlocks; a crash leaves a stale info file that
step 3 of the next claim removes.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from connect.api import ConnectError
from log import FileLock, write_atomic

__all__ = ["INTERNAL_TOPIC_KEYS", "LogDirClaim", "LogDirInUseError", "running_workers"]

_LOCK_FILE = ".worker.lock"
_INFO_DIR = ".workers"

#: The worker config keys that name the runtime's internal topics, with what each
#: topic holds (what is lost when it is deleted).
INTERNAL_TOPIC_KEYS = {
    "config.storage.topic": "connector configs and target states",
    "offset.storage.topic": "source connectors' offsets",
    "status.storage.topic": "connector and task statuses",
    "group.storage.topic": "distributed workers' membership and assignments",
    "schema.registry.topic": "the schema registry's schemas",
}


class LogDirInUseError(ConnectError):
    """A log directory that another running worker holds in a conflicting mode.

    `holders` are the running workers' info ({"pid", "url", "mode"}); it may be empty
    when a holder has not written its info yet."""

    def __init__(self, directory: str, mode: str, holders: list[dict[str, Any]]) -> None:
        self.directory = directory
        self.mode = mode
        self.holders = holders
        if holders:
            who = ", ".join(
                f"{h.get('mode', 'a')} worker pid {h.get('pid')} at {h.get('url')}"
                for h in holders
            )
        else:
            who = "another worker"
        why = (
            "a standalone worker needs its log directory to itself"
            if mode == "standalone"
            else "a standalone worker owns its log directory"
        )
        super().__init__(
            f"log directory {directory} is in use by {who}; {why}: stop that worker "
            "or give this one another log.dir"
        )


def running_workers(directory: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The info of the workers running on log directory `directory` (by their info
    files, kept to live processes; see the module docstring)."""
    return [info for _, info in _infos(Path(directory)) if _alive(info.get("pid"))]


def _infos(directory: Path) -> list[tuple[Path, dict[str, Any]]]:
    out = []
    try:
        paths = sorted((directory / _INFO_DIR).glob("*.json"))
    except OSError:
        return []
    for path in paths:
        try:
            info = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # gone meanwhile, or a stray file: the lock decides anyway
        if isinstance(info, dict):
            out.append((path, info))
    return out


def _alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


class LogDirClaim:
    """The claim of one worker process on `directory` (see the module docstring)."""

    def __init__(self, directory: str | os.PathLike[str], *, mode: str) -> None:
        if mode not in ("standalone", "distributed"):
            raise ValueError(f"mode must be standalone or distributed, got {mode!r}")
        self.directory = Path(directory).resolve()
        self.mode = mode
        self._lock: FileLock | None = None
        self._info = self.directory / _INFO_DIR / f"{os.getpid()}.json"
        self._topics: dict[str, str] = {}

    def acquire(self, url: str, *, internal_topics: Mapping[str, str] | None = None) -> None:
        """Claim the directory for this process, or raise LogDirInUseError.
        `internal_topics` (topic name → the worker config key naming it) go into the
        info file."""
        self._topics = dict(internal_topics or {})
        self.directory.mkdir(parents=True, exist_ok=True)
        # Step 1
        lock = FileLock(self.directory / _LOCK_FILE)
        if not lock.try_acquire(shared=self.mode == "distributed"):
            lock.close()
            # Step 2
            raise LogDirInUseError(str(self.directory), self.mode, running_workers(self.directory))
        self._lock = lock
        # Step 3
        (self.directory / _INFO_DIR).mkdir(exist_ok=True)
        for path, info in _infos(self.directory):
            if self.mode == "standalone" or not _alive(info.get("pid")):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
        # Step 4
        self.note_url(url)

    def note_url(self, url: str) -> None:
        """Record (again) where this worker's REST API is, for a refused worker's message."""
        info = {
            "pid": os.getpid(),
            "url": url,
            "mode": self.mode,
            "internal_topics": self._topics,
        }
        write_atomic(self._info, json.dumps(info).encode())

    def release(self) -> None:
        if self._lock is None:
            return
        with contextlib.suppress(FileNotFoundError):
            self._info.unlink()
        self._lock.release()
        self._lock.close()
        self._lock = None
