"""One object being written: bytes stream in, the object appears only when complete.

Protocol (a crash at any step leaves no partial object visible):
1. `write(data)` / `extend(pieces)` append to a buffer; each whole `s3.part.size`
   bytes of it is sent as the next part of a multipart upload (created on the first
   part), in the background (Store.submit), so memory stays at about one part per open
   object plus the parts in flight. Parts are cut at fixed multiples of the part size,
   so a replay splits an object the same way (and S3 gives it the same ETag).
2. `complete()`: an object that never reached a part is sent whole with one
   PutObject; otherwise the rest goes as the last part and CompleteMultipartUpload
   makes the object visible, atomically, under its final key — after every part has
   been acknowledged. Both happen in the background: `complete()` returns a future
   that fails as the upload failed.
3. `abort()` drops the buffer and aborts the multipart upload (best effort: an upload
   that is never completed stays invisible).

A failed call (after the store's retries) raises; the writer then aborts and starts
the object over from the log, so an ObjectUpload is never retried half way.

Copies: a part is the buffer itself — the bytearray is cut to the part's length in
place and handed to boto3 (which takes a bytearray body) and a new buffer starts
with the bytes past the part, at most one `write`/`extend` call's worth. Slicing a
part out of the buffer instead copied every byte twice more (the part, then the
shifted rest on the buffer's next growth).
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Iterable
from concurrent.futures import Future

from connectors.s3.store import Store

__all__ = ["ObjectUpload"]


class ObjectUpload:
    """See the module docstring."""

    __slots__ = ("_buffer", "_part_size", "_parts", "_store", "_upload_id", "key", "size")

    def __init__(self, store: Store, key: str, part_size: int) -> None:
        self._store = store
        self.key = key
        self._part_size = part_size
        self._buffer = bytearray()
        # CreateMultipartUpload runs in the background too, ahead of the first part
        # (the pool runs calls in order, so it starts before any part waits on it):
        # a round trip the task thread would otherwise wait for once per object.
        self._upload_id: Future[str] | None = None
        self._parts: list[Future[str]] = []
        self.size = 0

    def write(self, data: bytes | bytearray | memoryview) -> None:
        # Step 1
        self._buffer += data
        self.size += len(data)
        if len(self._buffer) >= self._part_size:
            self._send_parts()

    def extend(self, pieces: Iterable[bytes | bytearray | memoryview]) -> None:
        """Step 1 for many small pieces (the lines of a batch): appended by a C-level
        loop, each piece freed as soon as it is in."""
        buffer = self._buffer
        before = len(buffer)
        deque(map(buffer.extend, pieces), 0)
        self.size += len(buffer) - before
        if len(buffer) >= self._part_size:
            self._send_parts()

    def _send_parts(self) -> None:
        """Send every whole part in the buffer; keep the rest (see the module
        docstring on copies)."""
        size = self._part_size
        buffer = self._buffer
        whole = len(buffer) - len(buffer) % size
        self._buffer = buffer[whole:]
        del buffer[whole:]  # shrinks in place: no reallocation, no copy
        if whole == size:
            self._send(buffer)
            return
        with memoryview(buffer) as view:  # one write of several parts: rare
            for start in range(0, whole, size):
                self._send(bytearray(view[start : start + size]))

    def _send(self, body: bytes | bytearray) -> None:
        store, key = self._store, self.key
        if self._upload_id is None:
            self._upload_id = store.submit(lambda: store.create_multipart(key))
        failed = next((p for p in self._parts if p.done() and p.exception()), None)
        if failed is not None:
            failed.result()  # raise a background part's failure now, not at the end
        upload_id, number = self._upload_id, len(self._parts) + 1
        self._parts.append(
            store.submit(lambda: store.upload_part(key, upload_id.result(), number, body))
        )

    @property
    def buffered(self) -> int:
        """Bytes held in memory (less than a part)."""
        return len(self._buffer)

    def complete(self) -> Future[None]:
        """Step 2, in the background (Store.finish); the future fails as the upload
        did."""
        store, key = self._store, self.key
        body, self._buffer = self._buffer, bytearray()
        if self._upload_id is None:
            return store.finish(lambda: store.put(key, body))
        if body:
            self._send(body)
        parts, upload_id = list(self._parts), self._upload_id
        return store.finish(
            lambda: store.complete_multipart(key, upload_id.result(), [p.result() for p in parts])
        )

    def abort(self) -> None:
        # Step 3
        self._buffer = bytearray()
        for part in self._parts:
            if not part.cancel():
                with contextlib.suppress(Exception):
                    part.result()
        self._parts = []
        if self._upload_id is not None:
            created, self._upload_id = self._upload_id, None
            try:
                upload_id = created.result()
            except Exception:  # never created: nothing to abort
                return
            self._store.abort_multipart(self.key, upload_id)
