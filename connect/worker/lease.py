"""A worker's lease on its work: until when it may still write for its tasks.

Why: in a distributed cluster a worker that is cut off, paused by the OS (SIGSTOP, a
long GC, a frozen VM) or too slow is evicted by the others after `session.timeout.ms`
and its work moves. When it wakes up it must not write one more record, offset or
status before it learns that: it has not read back a heartbeat of its own for that
long, so its lease has lapsed. Tasks check the lease before every write; the check is
a comparison with a CLOCK_MONOTONIC deadline, which keeps counting while a process is
stopped and is the same clock in every process of the machine, so a task in a child
process checks the deadline its parent sent without asking anyone.

The standalone herder gives its worker no lease (nothing else could run its work).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

__all__ = ["Lease"]


class Lease:
    """A monotonic deadline, extended by the herder each time a heartbeat is read back."""

    def __init__(self, deadline: float = -math.inf, generation: int | None = None) -> None:
        self._deadline = deadline
        #: The generation the worker runs: the epoch its tasks' offset commits carry
        #: (connect.storage.offsets), so readers refuse an older worker's late commit.
        self.generation = generation
        self._listeners: list[Callable[[float], None]] = []
        self._lock = threading.Lock()

    @property
    def deadline(self) -> float:
        return self._deadline

    def valid(self) -> bool:
        """Whether writes are allowed now."""
        return time.monotonic() < self._deadline

    def extend(self, deadline: float) -> None:
        """Allow writes until `deadline` (time.monotonic() seconds); never shortens."""
        with self._lock:
            if deadline <= self._deadline:
                return
            self._deadline = deadline
            listeners = list(self._listeners)
        for listener in listeners:
            listener(deadline)

    def revoke(self) -> None:
        """Allow no more writes (the worker was evicted or is leaving the group)."""
        self.set(-math.inf)

    def set(self, deadline: float) -> None:
        """Set the deadline as it is (a task process takes its parent's word)."""
        with self._lock:
            self._deadline = deadline
            listeners = list(self._listeners)
        for listener in listeners:
            listener(deadline)

    def set_generation(self, generation: int) -> None:
        with self._lock:
            self.generation = generation
            listeners = list(self._listeners)
        for listener in listeners:
            listener(self._deadline)

    def add_listener(self, listener: Callable[[float], None]) -> None:
        """Called with the deadline on each change of it or of the generation (to tell
        task processes)."""
        with self._lock:
            self._listeners.append(listener)

    def wait_valid(self, stopping: threading.Event) -> bool:
        """Wait while the lease has lapsed; True once writes are allowed, False when
        `stopping` was set first (the caller then writes nothing)."""
        while not self.valid():
            if stopping.wait(0.05):
                return self.valid()
        return True
