"""File helpers with one job each: atomic small-state writes, advisory locks, a
change counter shared by processes, and fsyncs of several files at once.

Every small state file of the log (topic metadata, checkpoints) goes through
`write_atomic`: write a temp file, flush, fsync, `os.replace`, fsync the directory.
Nothing is written in place, so a crash leaves either the old or the new file.
The transaction coordinator's state is the exception: it changes several times a
transaction, so it is appended to a journal instead (log.txn_journal says why and
how a torn record is told apart).
"""

from __future__ import annotations

import errno
import fcntl
import mmap
import os
import struct
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from log.errors import LockTimeoutError

__all__ = [
    "FileLock",
    "SharedCounter",
    "at_once",
    "fsync_dir",
    "read_text",
    "write_atomic",
]

_COUNTER = struct.Struct("<Q")
_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _forget_pool() -> None:
    """In a forked child: the pool's threads stayed in the parent, so a task handed
    to the copied pool would never run; the child makes its own."""
    global _POOL, _POOL_LOCK
    _POOL, _POOL_LOCK = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_pool)


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Make a create, rename or unlink inside `path` durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace `path` with `data` so that a crash leaves the old or the new content."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def at_once(calls: Sequence[Callable[[], object]]) -> None:
    """Run `calls` (each ending in an fsync of its own file) side by side and return
    when all are done; the first failure is raised after every call has ended, so
    nothing after this step starts while one of them still runs.

    Why: fsyncs of several files issued together wait on the disk together (one
    journal commit can cover them), where one after the other each waits alone
    (figures in docs/performance.md). The threads wait in the kernel, without the
    GIL; a process-wide pool of a few threads, made at the first use."""
    if len(calls) <= 1:
        for call in calls:
            call()
        return
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="log-fsync")
        pool = _POOL
    futures: list[Future[object]] = [pool.submit(call) for call in calls[1:]]
    error: BaseException | None = None
    try:
        calls[0]()
    except BaseException as exc:  # raised below, once the others have ended
        error = exc
    for future in futures:
        exc = future.exception()
        if error is None and exc is not None:
            error = exc
    if error is not None:
        raise error


def read_text(path: str | os.PathLike[str]) -> str | None:
    """The file's text, or None when it does not exist."""
    try:
        return Path(path).read_text()
    except FileNotFoundError:
        return None


class FileLock:
    """An advisory, exclusive `flock` on one file, shared by the threads of a process
    only through the caller's own thread lock.

    flock is released by the kernel when the process dies, so a writer killed with
    SIGKILL never leaves a partition locked.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = str(path)
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)

    def acquire(self, timeout_s: float | None = None) -> None:
        """Block until locked; with `timeout_s`, give up with LockTimeoutError."""
        if timeout_s is None:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            return
        deadline = time.monotonic() + timeout_s
        delay = 0.0005
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EWOULDBLOCK):
                    raise
            if time.monotonic() >= deadline:
                raise LockTimeoutError(self.path, timeout_s)
            time.sleep(delay)
            delay = min(delay * 2, 0.02)

    def try_acquire(self, *, shared: bool = False) -> bool:
        """Lock without waiting; False when another holder's lock conflicts. A shared
        lock admits other shared holders and refuses an exclusive one (and the
        reverse), e.g. distributed workers sharing a log directory that a standalone
        worker must own alone."""
        mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
        try:
            fcntl.flock(self._fd, mode | fcntl.LOCK_NB)
            return True
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EWOULDBLOCK):
                return False
            raise

    def release(self) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class SharedCounter:
    """A 64-bit little-endian counter in an 8-byte file that every process maps into
    memory, so reading it costs no system call and can be done on every append.

    Why not a timestamp: a directory's mtime moves in ticks of the kernel's coarse
    clock (milliseconds, or seconds on some filesystems), so two changes within one
    tick look like one, and a process that looked in between misses the second.
    A count never repeats a value while the processes that saw it live.

    Only the holder of the matching write lock bumps it; anyone may read it. A read
    that races a bump may see a torn value: it differs from the one remembered, so
    the reader just looks again. The file is never fsynced: after a crash every
    process starts over and reads the directory anyway.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = str(path)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if os.fstat(fd).st_size < _COUNTER.size:
                # Growing to the size another process already set changes nothing.
                os.ftruncate(fd, _COUNTER.size)
            self._map: mmap.mmap | None = mmap.mmap(fd, _COUNTER.size)
            self._inode = os.fstat(fd).st_ino
        finally:
            os.close(fd)

    def replaced(self) -> bool:
        """Whether the path now names another file than the one mapped (its
        directory was deleted and made again, say): then this counter is stale."""
        try:
            return os.stat(self.path).st_ino != self._inode
        except FileNotFoundError:
            return True

    def value(self) -> int:
        assert self._map is not None
        return _COUNTER.unpack_from(self._map)[0]

    def bump(self) -> int:
        """Add one and return the new value; under the caller's write lock."""
        assert self._map is not None
        value = (_COUNTER.unpack_from(self._map)[0] + 1) & 0xFFFF_FFFF_FFFF_FFFF
        _COUNTER.pack_into(self._map, 0, value)
        return value

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None
