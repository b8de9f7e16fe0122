"""The `_schemas` topic: the reader that replays it into a `RegistryState`, and the
write path that appends to it.

The reader is the only thing that changes the state. A write:
1. takes the writer lock: a thread lock, and on a `FileLog` an `flock` on
   `<log.dir>/.schemas-writer.lock`, so instances in other processes over the same log
   take turns (they would otherwise race, which replay settles but costs a retry);
2. catches the reader up with the log end, so the caller decides on the latest state;
3. appends its records as one batch and fsyncs them (durable before anyone is told);
4. has the reader read up to and past its own records, applying everything in order,
   including records other instances appended first;
5. releases the lock. The caller then looks at `state.rejected` for its offsets.

The topic has one partition (its order is the registry's history) and
`cleanup.policy=compact`.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

from connect.registry.core.errors import StoreError
from connect.registry.core.state import RegistryState
from log import FileLock, Log, LogError, TopicExistsError

__all__ = ["SCHEMAS_TOPIC", "SchemaStore"]

SCHEMAS_TOPIC = "_schemas"
_PARTITION = 0
_READ_BYTES = 8 << 20
_LOCK_TIMEOUT_S = 30.0


class SchemaStore:
    """Replays `topic` into `state` and appends to it (see the module docstring)."""

    def __init__(self, log: Log, state: RegistryState, *, topic: str = SCHEMAS_TOPIC) -> None:
        self.log = log
        self.state = state
        self.topic = topic
        self.position = 0
        self._read_lock = threading.RLock()
        self._write_lock = threading.Lock()
        directory = getattr(log, "directory", None)
        self._file_lock = (
            FileLock(Path(directory) / ".schemas-writer.lock") if directory is not None else None
        )

    def start(self) -> None:
        """Create the topic if needed and replay it."""
        try:
            with contextlib.suppress(TopicExistsError):
                self.log.create_topic(self.topic, 1, config={"cleanup.policy": "compact"})
            self.position = self.log.earliest_offset(self.topic, _PARTITION)
        except LogError as exc:
            raise StoreError(f"cannot open topic {self.topic}: {exc}") from exc
        self.catch_up()

    def catch_up(self, upto: int | None = None) -> None:
        """Apply every record up to the log end (at least up to offset `upto` - 1)."""
        with self._read_lock:
            try:
                end = self.log.latest_offset(self.topic, _PARTITION)
                if upto is not None:
                    end = max(end, upto)
                position = max(self.position, self.log.earliest_offset(self.topic, _PARTITION))
                apply = self.state.apply
                while position < end:
                    records = self.log.read(self.topic, _PARTITION, position, max_bytes=_READ_BYTES)
                    if not records:
                        break
                    for rec in records:
                        if rec.key is not None:
                            apply(rec.offset, rec.key, rec.value)
                    position = records[-1].offset + 1
            except LogError as exc:
                raise StoreError(f"cannot read topic {self.topic}: {exc}") from exc
            self.position = position
        if upto is not None and position < upto:
            raise StoreError(f"topic {self.topic} ends at {position}, before offset {upto}")

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """Hold the state still (caught up with the log) while a query looks at it."""
        with self._read_lock:
            self.catch_up()
            yield

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Steps 1 and 2: hold the writer lock with the state caught up."""
        with self._write_lock:
            if self._file_lock is not None:
                try:
                    self._file_lock.acquire(_LOCK_TIMEOUT_S)
                except LogError as exc:
                    raise StoreError(str(exc)) from exc
            try:
                self.catch_up()
                yield
            finally:
                if self._file_lock is not None:
                    self._file_lock.release()

    def append(self, items: Sequence[tuple[bytes, bytes | None]]) -> range:
        """Steps 3 and 4 (call inside `writing()`): the offsets the records got."""
        try:
            offsets = self.log.append(
                self.topic, _PARTITION, [v for _, v in items], keys=[k for k, _ in items]
            )
            self.log.flush(self.topic, _PARTITION)
        except LogError as exc:
            raise StoreError(f"cannot append to topic {self.topic}: {exc}") from exc
        self.catch_up(offsets.stop)
        return offsets

    def close(self) -> None:
        if self._file_lock is not None:
            self._file_lock.close()
            self._file_lock = None
