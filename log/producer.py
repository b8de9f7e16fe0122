"""Producer: buffers records per partition and appends them to a Log in batches.

Partitioning follows Kafka's defaults so that keyed data lands in the same
partition on the embedded log and on Kafka: an explicit partition wins; a keyed
record goes to murmur2(key) % partitions; records without a key stick to one
partition until its batch is sent, then move on (the "sticky" partitioner).

Batching: a partition's buffer is appended as one batch once it holds `batch.size`
bytes (or `batch.max.records` records); a daemon thread appends buffers older
than `linger.ms`. `flush()` appends everything now. Sends are synchronous in the
sense that errors surface to the caller: from `send` when the batch fills there, or
from the next `send`/`flush` when the linger thread hit them.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Sequence

from log.api import Log
from log.errors import LogClosedError
from log.partitioner import KeyPartitioner
from log.records import Header

__all__ = ["DeliveryCallback", "Producer"]

#: Called once per appended batch with (topic, partition, offsets).
DeliveryCallback = Callable[[str, int, range], None]


class _Buffer:
    __slots__ = ("bytes", "created", "headers", "keys", "timestamps", "values")

    def __init__(self) -> None:
        self.values: list[bytes | None] = []
        self.keys: list[bytes | None] = []
        self.timestamps: list[int | None] = []
        self.headers: list[Sequence[Header]] = []
        self.bytes = 0
        self.created = time.monotonic()


class Producer:
    """Send records to topics of a Log (see the module docstring)."""

    def __init__(
        self,
        log: Log,
        *,
        linger_ms: float = 5.0,
        batch_size: int = 1 << 20,
        batch_max_records: int = 10_000,
        compression: str | None = None,
        on_delivery: DeliveryCallback | None = None,
        metadata_max_age_ms: int = 30_000,
    ) -> None:
        self._log = log
        self.linger_ms = linger_ms
        self.batch_size = batch_size
        self.batch_max_records = batch_max_records
        self.compression = compression
        self.on_delivery = on_delivery
        self._metadata_max_age_s = metadata_max_age_ms / 1000
        self._buffers: dict[tuple[str, int], _Buffer] = {}
        self._lock = threading.RLock()
        self._keys = KeyPartitioner()
        self._counts: dict[str, tuple[int, float]] = {}
        self._sticky: dict[str, int] = {}
        self._round_robin = itertools.count()
        self._error: BaseException | None = None
        self._closed = False
        self._wake = threading.Event()
        self._linger_thread = threading.Thread(
            target=self._linger, name="producer-linger", daemon=True
        )
        self._linger_thread.start()

    # ---------------------------------------------------------------- sending

    def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        *,
        partition: int | None = None,
        timestamp: int | None = None,
        headers: Sequence[Header] = (),
    ) -> None:
        """Queue one record; it is appended with its partition's batch."""
        if partition is None:
            partition = self._choose(topic, key)
        with self._lock:
            if self._error is not None:
                self._raise_error()
            if self._closed:
                raise LogClosedError("producer")
            buf = self._buffers.get((topic, partition))
            if buf is None:
                buf = self._buffers[(topic, partition)] = _Buffer()
            buf.values.append(value)
            buf.keys.append(key)
            buf.timestamps.append(timestamp)  # None: stamped once for the batch on append
            buf.headers.append(headers)
            buf.bytes += (len(value) if value is not None else 0) + (len(key) if key else 0)
            if buf.bytes >= self.batch_size or len(buf.values) >= self.batch_max_records:
                self._send_buffer(topic, partition)

    def _partition_count(self, topic: str) -> int:
        cached = self._counts.get(topic)
        now = time.monotonic()
        if cached is None or now - cached[1] > self._metadata_max_age_s:
            cached = (self._log.partition_count(topic), now)
            self._counts[topic] = cached
        return cached[0]

    def _choose(self, topic: str, key: bytes | None) -> int:
        count = self._partition_count(topic)
        if key is not None:
            return self._keys.partition(key, count)
        sticky = self._sticky.get(topic)
        if sticky is None or sticky >= count:
            sticky = self._sticky[topic] = next(self._round_robin) % count
        return sticky

    def _send_buffer(self, topic: str, partition: int) -> None:
        """Append one partition's buffer. Under self._lock."""
        buf = self._buffers.pop((topic, partition), None)
        if buf is None or not buf.values:
            return
        if self._sticky.get(topic) == partition:
            count = self._partition_count(topic)
            self._sticky[topic] = next(self._round_robin) % count
        headers = buf.headers if any(buf.headers) else None
        keys = buf.keys if any(k is not None for k in buf.keys) else None
        timestamps: list[int] | None = None
        if any(t is not None for t in buf.timestamps):
            now = time.time_ns() // 1_000_000
            timestamps = [now if t is None else t for t in buf.timestamps]
        offsets = self._log.append(
            topic,
            partition,
            buf.values,
            keys=keys,
            timestamps=timestamps,
            headers=headers,
            compression=self.compression,
        )
        if self.on_delivery is not None:
            self.on_delivery(topic, partition, offsets)

    def flush(self) -> None:
        """Append every buffered record now; raise a pending background error."""
        with self._lock:
            for topic, partition in list(self._buffers):
                self._send_buffer(topic, partition)
            if self._error is not None:
                self._raise_error()

    def _raise_error(self) -> None:
        error, self._error = self._error, None
        assert error is not None
        raise error

    def _linger(self) -> None:
        interval = max(self.linger_ms / 1000, 0.001)
        while not self._wake.wait(interval):
            with self._lock:
                if self._closed:
                    return
                now = time.monotonic()
                for (topic, partition), buf in list(self._buffers.items()):
                    if (now - buf.created) * 1000 >= self.linger_ms:
                        try:
                            self._send_buffer(topic, partition)
                        except Exception as exc:
                            self._error = exc

    def close(self) -> None:
        """Flush and stop the linger thread."""
        try:
            self.flush()
        finally:
            with self._lock:
                self._closed = True
            self._wake.set()
            self._linger_thread.join(timeout=10)

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
