"""The embedded log's transaction coordinator: transactional.id → producer id, epoch,
state and partitions, durable and shared by every process on the log directory.

Kafka's model (so that FileLog and KafkaLog behave alike): `init_producer` gives a
transactional.id its producer id and a new epoch, which fences every older producer
of the id; a transaction's partitions are added before its first batch reaches
them, so the coordinator always knows where markers must go; the end of a
transaction is two-phase:

  1. PREPARE_COMMIT (or PREPARE_ABORT) is written durably, with the partitions the
     transaction wrote and each one's log end (`before`: this transaction's
     batches lie below it, a later one's above), its fdatasync side by side with
     the fsyncs of the producer's data in every partition of the transaction
     (which also cover the previous transaction's markers, in the same files): one
     wait on the disk for all. From here on the outcome is decided, whatever
     crashes, with one rule for recovery: a PREPARE_COMMIT some of whose
     partitions end below their bound lost data of the transaction to a machine
     crash (its fsync had not ended), so it is aborted instead. That is safe
     because nothing of the transaction was visible yet: step 2 starts only once
     every fsync of step 1 has ended. The previous transaction's markers may be
     lost with it: the record carries them (`prior`), and recovery redoes them
     first.
  2. A COMMIT (ABORT) control batch is written to every partition of the
     transaction (`Partition.write_marker`: a partition already marked, or whose
     open transaction began past the bound, is left alone, so the step can be
     redone), NOT fsynced on the producer's path (recovery's, fsynced, side by side):
     the record says so (`unsynced`, and `prior`: the outcome, producer and bounds
     to redo them with) and the id's next durable change fsyncs them first
     (`_save`), normally for free, since the next transaction's data fsync covers
     the same files (then beside that change: step 1). Recovery's markers are
     fsynced at once.
  3. COMPLETE_COMMIT (COMPLETE_ABORT) is written, not synced: the transaction is
     over and the id may begin another. Why no fsync: if a machine crash loses it,
     the journal ends in PREPARE and recovery redoes step 2, which changes nothing;
     and any later durable change of the id is appended to the same journal, after
     the markers are fsynced (or beside their fsync, carrying them as `prior`), and
     its fdatasync makes the COMPLETE durable too.

Why the markers may wait: readers see a marker as soon as it is written (as they
see any batch before its fsync), and the decision is durable in PREPARE since step
1; what must never be on disk is a COMPLETE whose markers are not, unless a record
at or after it lists them as `prior` for recovery to redo (the records after it
carry `prior` until the next durable change: writeback may save a COMPLETE before
the markers it follows).

Recovery (`recover`, run when a FileLog opens and by maintenance passes): markers
a record lists as `prior` are redone (idempotent: a partition marked already is left
alone), also where the COMPLETE after them reached the disk before them (writeback
orders no two files); a transaction in PREPARE_* is finished from step 2 (a
PREPARE_COMMIT short of a bound aborted, step 1); an ONGOING one whose
`transaction.timeout.ms` has passed since it began is aborted, with a new epoch
first, so that its producer, if it still lives (a zombie), is fenced and its later
writes are refused. A transaction still within its timeout is left alone: its
producer may be alive in another process.

A partition may be added before the transaction writes there, never after: the
producer adds, with a transaction's first partition, those its previous transaction
wrote (a source task writes the same data and offsets partitions each time). A
partition added but never written gets no marker on commit (PREPARE names the
partitions written); an abort by recovery marks every partition added, which only
tells the unwritten ones of the new epoch. PREPARE also declares its partitions
`ahead`: the next transaction's ONGOING record, when it adds only those, is written
without an fdatasync. A machine crash may then keep that transaction's batches and
lose the record; a FileLog opening (and a new epoch of the id) looks for the
producer's open transaction in the partitions declared ahead and aborts it
(`_abort_lost`). A live producer's ONGOING record is always in the journal (in the
page cache, which every process reads) before its batches are written, so a live
one's is never taken for lost. A steady transaction thus waits on the disk once:
its data (with the previous markers) and PREPARE side by side.

State files, in `<log.dir>/.transactions/`:

    .lock                      flock: one coordinator step at a time, across processes
    producer-ids               the next producer id to hand out (decimal, write_atomic)
    <sha256(id)[:32]>.txnlog   the id's journal (log.txn_journal): records of
                               {"transactional_id", "producer_id", "epoch", "state",
                                "partitions": [[topic, n], ...], "timeout_ms",
                                "start_ms", "update_ms", "ahead", "before",
                                "unsynced", "prior"}, the last valid one current (a
                               record without the last four, from before them,
                               reads as empty)
    <sha256(id)[:32]>.json     the same state from before the journal (read while the
                               id has no journal; removed once it has one)

Lock order: the coordinator lock, then partition locks (markers); nothing that
holds a partition lock takes the coordinator's.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from log import txn_journal
from log.batch import ProducerSection
from log.errors import InvalidTxnStateError, ProducerFencedError, UnknownTopicOrPartitionError
from log.fsutil import FileLock, at_once, read_text, write_atomic
from log.txn_journal import JOURNAL_SUFFIX

if TYPE_CHECKING:
    from log.filelog import FileLog

__all__ = [
    "COMPLETE_ABORT",
    "COMPLETE_COMMIT",
    "EMPTY",
    "ONGOING",
    "PREPARE_ABORT",
    "PREPARE_COMMIT",
    "TXN_DIR",
    "TransactionCoordinator",
    "TxnMetadata",
]

TXN_DIR = ".transactions"
EMPTY = "Empty"
ONGOING = "Ongoing"
PREPARE_COMMIT = "PrepareCommit"
PREPARE_ABORT = "PrepareAbort"
COMPLETE_COMMIT = "CompleteCommit"
COMPLETE_ABORT = "CompleteAbort"
_MAX_EPOCH = 32766  # int16, as Kafka's: past it the id gets a new producer id
_LOCK_TIMEOUT_S = 30.0
_LEGACY_SUFFIX = ".json"


@dataclass
class TxnMetadata:
    """One transactional.id's state, as stored in its file."""

    transactional_id: str
    producer_id: int
    epoch: int
    state: str = EMPTY
    partitions: list[list] = field(default_factory=list)  # [[topic, partition], ...]
    timeout_ms: int = 60_000
    start_ms: int = -1
    update_ms: int = -1
    #: Partitions the next transaction may add without a durable write (the last
    #: PREPARE's, durable with it): recovery looks there for a transaction whose
    #: unsynced ONGOING record a machine crash lost.
    ahead: list[list] = field(default_factory=list)
    #: PREPARE's [[topic, partition, log end]]: this transaction's batches lie below
    #: the bound, a later transaction's (after this one's marker) at or above it.
    before: list[list] = field(default_factory=list)
    #: Partitions whose markers may not be fsynced yet (made durable before any
    #: durable change of the id: the COMPLETE record must never outlive them).
    unsynced: list[list] = field(default_factory=list)
    #: How to redo those markers: {"commit", "producer_id", "epoch", "before"} of the
    #: transaction that wrote them (module docstring, step 1 and recovery).
    prior: dict = field(default_factory=dict)

    @property
    def producer(self) -> ProducerSection:
        return ProducerSection(self.producer_id, self.epoch, -1)


class TransactionCoordinator:
    """One per FileLog; the state is in files, so every process's coordinator is the
    same coordinator (see the module docstring)."""

    def __init__(self, log: FileLog) -> None:
        self._log = log
        self.directory = log.directory / TXN_DIR
        self._thread_lock = threading.RLock()
        self._flock: FileLock | None = None
        #: transactional.id -> (valid end, size) of its journal, as read under the lock
        self._ends: dict[str, tuple[int, int]] = {}
        #: transactional.id -> its journal's path (a hash each time was a visible
        #: share of a transaction's Python work: three coordinator steps each)
        self._paths: dict[str, Path] = {}

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with self._thread_lock:
            if self._flock is None:
                self.directory.mkdir(exist_ok=True)
                self._flock = FileLock(self.directory / ".lock")
            self._flock.acquire(_LOCK_TIMEOUT_S)
            try:
                yield
            finally:
                # What was read of the journals holds only while the lock is held.
                self._ends.clear()
                self._flock.release()

    def _path(self, transactional_id: str) -> Path:
        path = self._paths.get(transactional_id)
        if path is None:
            digest = hashlib.sha256(transactional_id.encode()).hexdigest()[:32]
            path = self._paths[transactional_id] = self.directory / f"{digest}{JOURNAL_SUFFIX}"
        return path

    def _read(self, path: Path) -> TxnMetadata | None:
        """The journal's state (its end remembered for the next append under this
        lock), else the state file from before journals."""
        body, valid_end, size = txn_journal.load(path)
        if body is not None:
            meta = TxnMetadata(**json.loads(body))
            self._ends[meta.transactional_id] = (valid_end, size)
            return meta
        text = read_text(path.with_suffix(_LEGACY_SUFFIX))
        return None if text is None else TxnMetadata(**json.loads(text))

    def _load(self, transactional_id: str) -> TxnMetadata | None:
        return self._read(self._path(transactional_id))

    def _save(
        self, meta: TxnMetadata, *, durable: bool = True, beside: Iterable[tuple] = ()
    ) -> None:
        """Append the state to the id's journal; `durable`: fdatasynced before this
        returns (see the module docstring for the changes that need not be), side by
        side with the fsyncs of the partitions `beside` (step 1), after those of the
        markers not yet fsynced and not beside: the fdatasync makes the unsynced
        COMPLETE before it durable too, and recovery must find those markers on
        disk or in this record (`prior`, kept until the fsyncs beside it ended)."""
        flush = self._log.flush
        partitions = sorted({(t, p) for t, p in beside})
        if durable and meta.unsynced:
            done = set(partitions)
            at_once([partial(flush, t, p) for t, p in meta.unsynced if (t, p) not in done])
            if not partitions:
                meta.unsynced, meta.prior = [], {}
        meta.update_ms = self._log.clock()
        path = self._path(meta.transactional_id)
        ends = self._ends.get(meta.transactional_id)
        if ends is None:
            _, *found = txn_journal.load(path)
            ends = (found[0], found[1])
        # vars, not dataclasses.asdict: its deep copy of the partition lists was a
        # quarter of a transaction's Python work, and json copies nothing anyway.
        body = json.dumps(vars(meta)).encode()
        calls = [partial(flush, t, p) for t, p in partitions]
        try:
            end = txn_journal.append_record(
                path, body, valid_end=ends[0], size=ends[1], durable=durable, beside=calls
            )
        except BaseException:
            self._ends.pop(meta.transactional_id, None)  # what is in the file: unknown
            raise
        self._ends[meta.transactional_id] = (end, end)
        if partitions:
            meta.unsynced, meta.prior = [], {}  # fsynced beside the record
        if ends[1] == 0:  # a new journal: a state file from before it is stale now
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path.with_suffix(_LEGACY_SUFFIX))

    def _next_producer_id(self) -> int:
        text = read_text(self.directory / "producer-ids")
        pid = int(text) if text else 1000
        write_atomic(self.directory / "producer-ids", str(pid + 1).encode())
        return pid

    # ---------------------------------------------------------------- producers

    def init_producer(self, transactional_id: str, timeout_ms: int) -> TxnMetadata:
        """A new epoch for the id (fencing every older producer of it), after
        finishing what the previous producer left: a decided transaction is
        completed, an ongoing one aborted."""
        with self._locked():
            meta = self._load(transactional_id)
            if meta is None:
                meta = TxnMetadata(transactional_id, self._next_producer_id(), -1)
            else:
                self._finish(meta, abort_ongoing=True)
                self._abort_lost(meta)
            self._bump_epoch(meta)
            meta.state, meta.partitions, meta.start_ms = EMPTY, [], -1
            meta.ahead, meta.before = [], []
            meta.timeout_ms = timeout_ms
            self._save(meta)
            return meta

    def _bump_epoch(self, meta: TxnMetadata) -> None:
        if meta.epoch >= _MAX_EPOCH:
            meta.producer_id, meta.epoch = self._next_producer_id(), 0
        else:
            meta.epoch += 1

    def _current(self, transactional_id: str, producer_id: int, epoch: int) -> TxnMetadata:
        """The id's state, when `producer_id`/`epoch` is still its producer."""
        meta = self._load(transactional_id)
        if meta is None:
            raise InvalidTxnStateError(transactional_id, "Uninitialized", "use the id")
        if meta.producer_id != producer_id or meta.epoch != epoch:
            raise ProducerFencedError(producer_id, epoch, meta.epoch)
        return meta

    def add_partitions(
        self, transactional_id: str, producer_id: int, epoch: int, partitions: Iterable[tuple]
    ) -> None:
        """Record partitions the transaction will write to, before it writes there;
        the first addition starts the transaction (and its timeout)."""
        with self._locked():
            meta = self._current(transactional_id, producer_id, epoch)
            if meta.state not in (EMPTY, ONGOING, COMPLETE_COMMIT, COMPLETE_ABORT):
                raise InvalidTxnStateError(transactional_id, meta.state, "add partitions")
            if meta.state != ONGOING:
                meta.state, meta.partitions, meta.start_ms = ONGOING, [], self._log.clock()
                meta.before = []
            known = {tuple(p) for p in meta.partitions}
            new = [(t, p) for t, p in partitions if (t, p) not in known]
            meta.partitions += [[t, p] for t, p in new]
            # Partitions declared ahead by the last PREPARE (durable) need no
            # fdatasync here: a crash that loses this record is found by `recover`.
            ahead = {tuple(p) for p in meta.ahead}
            self._save(meta, durable=any(tp not in ahead for tp in new))

    def end_transaction(
        self,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        *,
        commit: bool,
        written: Iterable[tuple] | None = None,
        sync: Iterable[tuple] = (),
    ) -> None:
        """Steps 1 (the PREPARE record) to 3 of the module docstring; the partitions
        `sync` (the producer's data, with the previous transaction's markers) are
        fsynced side by side with PREPARE. `written`: the partitions the
        transaction wrote, of those added (None: all added); the others get no
        marker. A transaction that added nothing just ends."""
        with self._locked():
            meta = self._current(transactional_id, producer_id, epoch)
            if meta.state != ONGOING:
                if meta.state in (EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT):
                    return  # nothing was added: nothing to mark
                raise InvalidTxnStateError(transactional_id, meta.state, "end the transaction")
            if written is not None:
                wrote = {tuple(p) for p in written}
                meta.partitions = [p for p in meta.partitions if tuple(p) in wrote]
            # Step 1
            meta.state = PREPARE_COMMIT if commit else PREPARE_ABORT
            meta.before = self._bounds(meta.partitions)
            meta.ahead = [list(p) for p in meta.partitions]
            try:
                self._save(meta, beside=sync)
            except BaseException:
                if commit:  # data not known durable: decide the other way, if the disk lets us
                    with contextlib.suppress(Exception):
                        meta.state = PREPARE_ABORT
                        self._save(meta)
                        self._finish(meta, abort_ongoing=False)
                raise
            self._finish(meta, abort_ongoing=False, sync_markers=False)

    def _bounds(self, partitions: list[list]) -> list[list]:
        """Each partition's log end now, past this transaction's batches and before
        its marker (so before any later transaction's batch)."""
        out = []
        for topic, partition in partitions:
            try:
                out.append([topic, partition, self._log.partition(topic, partition).log_end_offset])
            except UnknownTopicOrPartitionError:
                continue
        return out

    def _finish(self, meta: TxnMetadata, *, abort_ongoing: bool, sync_markers: bool = True) -> bool:
        """Steps 2 and 3 for a decided transaction; with `abort_ongoing`, an ongoing
        one is aborted under a new epoch first (fencing its producer). Whether
        anything was done. `sync_markers`: fsynced here, else by the id's next
        durable change (`_save`). Under the lock."""
        self._redo_prior(meta)
        if meta.state == ONGOING:
            if not abort_ongoing:
                return False
            self._bump_epoch(meta)
            meta.state, meta.ahead, meta.before = PREPARE_ABORT, [], []
            self._save(meta)
        if meta.state not in (PREPARE_COMMIT, PREPARE_ABORT):
            return False
        if meta.state == PREPARE_COMMIT and self._short(meta):
            meta.state = PREPARE_ABORT  # step 1's rule: durable before any marker
            self._save(meta)
        commit = meta.state == PREPARE_COMMIT
        bounds = {(t, p): end for t, p, end in meta.before}
        # Step 2: the markers (each partition's own lock), side by side when they are
        # fsynced here; unsynced, a thread each would cost only its hand-offs.
        markers = []
        for topic, partition in meta.partitions:
            try:
                part = self._log.partition(topic, partition)
            except UnknownTopicOrPartitionError:
                continue  # deleted since: nothing left to mark
            before = bounds.get((topic, partition))
            mark = partial(part.write_marker, meta.producer, commit=commit, before=before)
            markers.append(partial(mark, sync=sync_markers))
        if sync_markers:
            at_once(markers)
        else:
            for marker in markers:
                marker()
        # Step 3: not synced (module docstring)
        meta.state = COMPLETE_COMMIT if commit else COMPLETE_ABORT
        if not sync_markers:
            meta.unsynced = [list(p) for p in meta.partitions]
            meta.prior = {
                "commit": commit,
                "producer_id": meta.producer_id,
                "epoch": meta.epoch,
                "before": meta.before,
            }
        meta.partitions, meta.before = [], []
        self._save(meta, durable=False)
        return True

    def _short(self, meta: TxnMetadata) -> bool:
        """Whether a partition of the PREPARE ends below its bound: a machine crash
        took batches of the transaction (step 1's fsync had not ended)."""
        for topic, partition, end in meta.before:
            try:
                # latest_offset: the files' end now, not what this process saw last
                if self._log.partition(topic, partition).latest_offset() < end:
                    return True
            except UnknownTopicOrPartitionError:
                continue
        return False

    def _redo_prior(self, meta: TxnMetadata) -> None:
        """Write again, fsynced, the markers `prior` lists (a machine crash may have
        lost them while a record that relies on them reached the disk); a partition
        marked already is left alone. Under the lock."""
        prior = meta.prior
        if not prior:
            return
        producer = ProducerSection(prior["producer_id"], prior["epoch"], -1)
        markers = []
        for topic, partition, before in prior["before"]:
            try:
                part = self._log.partition(topic, partition)
            except UnknownTopicOrPartitionError:
                continue
            markers.append(
                partial(part.write_marker, producer, commit=prior["commit"], before=before)
            )
        at_once(markers)
        meta.prior = {}

    def _abort_lost(self, meta: TxnMetadata) -> bool:
        """Abort a transaction whose ONGOING record a machine crash lost (it was not
        synced: `add_partitions`) while batches of it reached the disk: the
        producer's open transaction in a partition declared ahead, once what the
        journal holds is finished. A live producer's ONGOING record is always in
        the journal before its batches are written, so this finds none of a live
        one's. Whether one was aborted. Under the lock."""
        self._redo_prior(meta)  # their transaction's batches are not this one's
        if meta.state not in (COMPLETE_COMMIT, COMPLETE_ABORT, EMPTY) or not meta.ahead:
            return False
        lost = []
        for topic, partition in meta.ahead:
            try:
                part = self._log.partition(topic, partition)
            except UnknownTopicOrPartitionError:
                continue
            if part.open_transaction_start(meta.producer_id) is not None:
                lost.append([topic, partition])
        if not lost:
            return False
        meta.state, meta.partitions = ONGOING, lost
        return self._finish(meta, abort_ongoing=True)

    # ----------------------------------------------------------------- recovery

    def _all(self) -> list[TxnMetadata]:
        try:
            names = sorted(os.listdir(self.directory))
        except FileNotFoundError:
            return []
        journals = {n[: -len(JOURNAL_SUFFIX)] for n in names if n.endswith(JOURNAL_SUFFIX)}
        legacy = {n[: -len(_LEGACY_SUFFIX)] for n in names if n.endswith(_LEGACY_SUFFIX)}
        out = []
        for stem in sorted(journals | legacy):
            meta = self._read(self.directory / f"{stem}{JOURNAL_SUFFIX}")
            if meta is not None:
                out.append(meta)
        return out

    def recover(self, *, after_crash: bool = False) -> int:
        """Finish every decided transaction and abort every ongoing one past its
        timeout (module docstring); `after_crash` (a FileLog opening): also those a
        machine crash left without their ONGOING record (`_abort_lost`). How many
        were finished or aborted."""
        if not self.directory.is_dir():
            return 0
        done = 0
        with self._locked():
            now = self._log.clock()
            for meta in self._all():
                if after_crash:
                    self._redo_prior(meta)
                expired = meta.state == ONGOING and now - meta.start_ms >= meta.timeout_ms
                if meta.state in (PREPARE_COMMIT, PREPARE_ABORT) or expired:
                    done += self._finish(meta, abort_ongoing=True)
                if after_crash:
                    done += self._abort_lost(meta)
        return done

    def describe(self, transactional_id: str) -> TxnMetadata | None:
        """The id's stored state (for tools and tests)."""
        with self._locked():
            return self._load(transactional_id)

    def close(self) -> None:
        with self._thread_lock:
            if self._flock is not None:
                self._flock.close()
                self._flock = None
