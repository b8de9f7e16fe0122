"""How a worker process asks for memory: two allocator settings, made once when
`connect standalone` or `connect distributed` starts, before the worker has a second
thread or an Arrow buffer. Task processes are spawned (connect.worker.process_task),
so they inherit both through the environment.

1. Arrow's buffers come from the C library's malloc (`ARROW_DEFAULT_MEMORY_POOL=system`),
   not from pyarrow's default pool (mimalloc). Why: the runtime's Arrow buffers live for
   one batch (a snapshot chunk parsed into columns, a sink batch built and written), and
   mimalloc keeps what they freed for its own reuse, so a snapshot's task process peaked
   well above the same run on malloc, at the same speed; malloc hands large buffers back
   to the system as they are freed (docs/performance.md, 2026-11-26, has the figures).
2. glibc's malloc keeps at most 2 arenas (`MALLOC_ARENA_MAX=2`; in this process through
   mallopt, since glibc reads the variable only when a process starts). Why: glibc gives
   threads that allocate at once arenas of their own, up to eight per core, and a block
   freed goes back to its own arena; a worker's threads (its tasks on KafkaLog, the
   REST server, librdkafka's, a snapshot's reader) each held freed memory that another
   could not reuse. Two arenas is the usual setting for a threaded service; the
   worker's threads mostly wait on I/O, so the lock they share costs nothing measurable.

A setting already in the environment wins: an operator's own choice of either is kept.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import platform

__all__ = ["ARENA_MAX", "ARROW_POOL", "tune_process_memory"]

ARROW_POOL = "system"
ARENA_MAX = 2
_M_ARENA_MAX = -8  # glibc's malloc.h


def tune_process_memory() -> None:
    """Set both (see the module docstring) where the environment does not already."""
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", ARROW_POOL)
    if "MALLOC_ARENA_MAX" in os.environ:
        return  # glibc read it when this process started
    os.environ["MALLOC_ARENA_MAX"] = str(ARENA_MAX)  # for the task processes
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        libc = ctypes.util.find_library("c")
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(libc).mallopt(_M_ARENA_MAX, ARENA_MAX)
