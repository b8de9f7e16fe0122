"""Freezing a worker process's long-lived objects out of the cyclic collector's full
collections (`freeze_long_lived`), at the moments a source task reaches."""

from __future__ import annotations

import gc

__all__ = ["FROZEN", "freeze_long_lived"]

#: The moments of `freeze_long_lived` this process has had (each comes once).
FROZEN: set[str] = set()


def freeze_long_lived(moment: str) -> None:
    """Keep the cyclic collector's full collections off the process's long-lived
    objects, once per `moment` ("start": the first source task's start; "warm": its
    first offset commit, when the lazy imports and caches of its first records are in).

    Why: tasks run as threads of the worker share its collector, whose oldest
    generation holds all that the process imported and built (modules, classes,
    schemas, pyarrow's and the clients' objects: over a hundred thousand in a worker
    running a MySQL CDC task). A full collection scans all of it with the GIL held,
    every thread stopped: the stalls of the MySQL CDC bench's commit->log latency at
    5,000 changes/s (docs/performance.md). Frozen objects are never scanned again, so
    a full collection only looks at what came after. One full collection first, so
    that no garbage is frozen with them; once per moment and process, so that a
    worker (or a test session) starting many tasks pays it twice at most. A task
    process freezes after its start as well (`connect.worker.process_task`)."""
    if moment in FROZEN:
        return
    FROZEN.add(moment)
    gc.collect()
    gc.freeze()
