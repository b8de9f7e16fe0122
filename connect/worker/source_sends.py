"""A poll's appends gathered per (topic, partition): one append each, waited for once.

Why: a poll of a CDC source holds several SourceBatches and runs of records (a MySQL
transaction of creates, updates and deletes with their tombstones is a batch, a batch
and a run), and each was its own append, its delivery waited for before the next
began: on Kafka a round trip to the broker (and its `linger.ms`) per part, with the
task's thread idle meanwhile. Gathered, the parts of one partition go as one append,
and the poll waits for the broker once per partition.

What stays as it was (numbered as `flush` does it):
1. Order: the parts of one partition are appended in poll order; parts of different
   partitions have no order between them, as on Kafka.
2. Shape: parts with timestamps or headers and parts without are not joined in one
   append (the log's fast path takes neither: KafkaLog's `produce_batch`); a part of
   another shape appends what its partition gathered before it first.
3. Offsets: each part's landing (its acknowledgement, `connect.worker.source_acks`)
   gets its own slice of the offsets the append returned.
A failed append loses what was gathered after it: the poll's offsets were not
remembered (the task remembers them once `flush` returned), so a restart polls those
records again (at-least-once).

Called from the task's own thread only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["Landing", "PollAppends"]

#: Told where a part landed: (its offsets, its timestamps or None).
Landing = Callable[[Sequence[int], list[int] | None], None]
#: Told of each append made: (topic, partition, records).
Appended = Callable[[str, int, int], None]


class _Gathered:
    """One partition's parts of one shape, waiting for their append."""

    __slots__ = ("headers", "keys", "landings", "timestamps", "values")

    def __init__(self, timestamps: bool, headers: bool) -> None:
        self.values: list[bytes | None] = []
        self.keys: list[bytes | None] | None = None  # None: no key in any part so far
        self.timestamps: list[int] | None = [] if timestamps else None
        self.headers: list[Any] | None = [] if headers else None
        #: (first index, count, landing) of each part that wants to know its offsets
        self.landings: list[tuple[int, int, Landing]] = []

    def shape(self) -> tuple[bool, bool]:
        return self.timestamps is not None, self.headers is not None

    def add(
        self,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None,
        timestamps: Sequence[int] | None,
        headers: Sequence[Any] | None,
        landing: Landing | None,
    ) -> None:
        start = len(self.values)
        if keys is not None and self.keys is None:
            self.keys = [None] * start
        if self.keys is not None:
            self.keys += [None] * len(values) if keys is None else keys
        self.values += values
        if self.timestamps is not None:
            self.timestamps += timestamps  # type: ignore[arg-type]
        if self.headers is not None:
            self.headers += headers  # type: ignore[arg-type]
        if landing is not None:
            self.landings.append((start, len(values), landing))


class PollAppends:
    """The appends of one poll (see the module docstring): `add` each part, `flush`
    once the poll's parts are all converted, `clear` after a failure."""

    def __init__(self, append: Callable[..., range], appended: Appended) -> None:
        self._append = append
        self._appended = appended
        self._gathered: dict[tuple[str, int], _Gathered] = {}

    def add(
        self,
        topic: str,
        partition: int,
        values: Sequence[bytes | None],
        *,
        keys: Sequence[bytes | None] | None,
        timestamps: Sequence[int] | None = None,
        headers: Sequence[Any] | None = None,
        landing: Landing | None = None,
    ) -> None:
        """Gather a part; `landing` is told its offsets once it is appended."""
        if not values:
            return
        where = (topic, partition)
        shape = (timestamps is not None, headers is not None)
        gathered = self._gathered.get(where)
        if gathered is not None and gathered.shape() != shape:
            # Step 2: the partition's earlier parts go first, in order (step 1)
            self._flush_one(where, self._gathered.pop(where))
            gathered = None
        if gathered is None:
            gathered = self._gathered[where] = _Gathered(*shape)
        gathered.add(values, keys, timestamps, headers, landing)

    def flush(self) -> None:
        """Append what was gathered, one append per partition (Step 1)."""
        try:
            while self._gathered:
                where = next(iter(self._gathered))
                self._flush_one(where, self._gathered.pop(where))
        finally:
            self._gathered.clear()

    def clear(self) -> None:
        """Forget what was gathered (the poll failed before its flush)."""
        self._gathered.clear()

    def _flush_one(self, where: tuple[str, int], gathered: _Gathered) -> None:
        topic, partition = where
        offsets = self._append(
            topic,
            partition,
            gathered.values,
            keys=gathered.keys,
            timestamps=gathered.timestamps,
            headers=gathered.headers,
        )
        self._appended(topic, partition, len(gathered.values))
        stamps = gathered.timestamps
        for start, count, landing in gathered.landings:  # Step 3
            end = start + count
            landing(offsets[start:end], None if stamps is None else stamps[start:end])
