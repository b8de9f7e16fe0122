"""What a herder does while the log cannot be reached: its reads answer the last known
state, and the states its worker reports wait for no delivery timeout.

Kafka Connect's REST reads (a connector's status, the list of connectors, a task's
state) answer from the worker's in-memory view of its internal topics, which a
background consumer keeps current; a broker outage leaves that view as it was, and the
reads go on answering. A herder here refreshes its stores from the log on each read
instead (connect.storage: a read sees every write before it), so during an outage each
read failed, after the log's request timeout, with a 500. `LastKnown` keeps the reads
answering, in these steps (mirrored as `# Step N` below):

1. While the log answers, a read refreshes the store from the log first, as before.
   One refresh at a time: a reader that waited for another's refresh, which found the
   log away, does not ask the log again (each ask holds its caller the log's request
   timeout, ~10 s on Kafka).
2. A refresh that fails with `LogUnavailableError` marks the log away (one warning)
   and the read answers from what the store held: the last known state.
3. While the log is away, reads do not ask it: one probe at a time, at most every
   `PROBE_EVERY_S`, refreshes the stores on a thread of its own; when one goes
   through, the log is back (one line) and reads refresh again from step 1.

Only reads come here. A write asks the log itself and fails with LogUnavailableError,
which the REST API answers with 503 (connect.rest.errors): a change must never be
acknowledged on the strength of a view that may be stale. The one write handled here
is the worker's report of a state (`put_status`), which Kafka Connect makes
asynchronously and which never fails a task.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from connect.storage import ClusterConfig, ConfigStore, State, Status, StatusStore
from log import LogUnavailableError

__all__ = ["PROBE_EVERY_S", "LastKnown"]

_log = logging.getLogger("connect.herder")
_T = TypeVar("_T")

#: How often, at most, a herder that found the log away asks it again (step 3). Why
#: not at every read: each ask of a log that is away waits the log's request timeout,
#: and a console polling every second would keep a probe running all the time.
PROBE_EVERY_S = 5.0


class LastKnown:
    """The stores' state for reads: read to the log's end while the log answers, the
    last known one while it does not (see the module docstring)."""

    def __init__(
        self,
        configs: ConfigStore,
        status: StatusStore,
        *,
        probe_every_s: float = PROBE_EVERY_S,
    ) -> None:
        self._configs = configs
        self._status = status
        self._probe_every_s = probe_every_s
        self._refreshing = threading.Lock()  # step 1: one refresh at a time
        self._flags = threading.Lock()  # away_since, probing, next probe
        self._away_since: float | None = None
        self._probing = False
        self._next_probe = 0.0

    @property
    def away(self) -> bool:
        """Whether the log was found away and has not answered since."""
        return self._away_since is not None

    def configs(self) -> ClusterConfig:
        """The configs and target states: current, or the last known."""
        current = self._attempt(self._configs.snapshot)
        return current if current is not None else self._configs.snapshot(refresh=False)

    def refresh_status(self) -> bool:
        """Bring the status store up to the log's end if the log answers; whether it
        did (False: the store holds the last known states). The ticket is taken before
        waiting for another reader's refresh, so that readers queued behind one share
        the next (connect.storage.status)."""
        ticket = self._status.ticket()

        def refresh() -> bool:
            self._status.refresh(ticket)
            return True

        return self._attempt(refresh) is not None

    def put_status(self, status: Status) -> None:
        """Write a state the worker reported. While the log is away, a stop's UNASSIGNED
        is not tried: the write would hold the stopping task for the log's delivery
        timeout (two minutes on Kafka), and whoever starts the task next writes its
        own state. A write that fails for want of the log is one warning, not a trace,
        and the task goes on."""
        what = status.connector if status.task is None else f"{status.connector}-{status.task}"
        if status.state is State.UNASSIGNED and self.away:
            _log.warning("%s is UNASSIGNED; not recorded: the log cannot be reached", what)
            return
        try:
            self._status.put(status)
        except LogUnavailableError as exc:
            self.went_away(exc)
            _log.warning(
                "%s is %s; not recorded: the log cannot be reached (%s)",
                what,
                status.state.value,
                exc,
            )

    def went_away(self, exc: BaseException) -> None:
        """Step 2: the log did not answer a read (this object's, or the herder's own)."""
        with self._flags:
            if self._away_since is not None:
                return
            self._away_since = time.monotonic()
            self._next_probe = self._away_since + self._probe_every_s
        _log.warning(
            "the log cannot be reached (%s): REST reads answer from the last known "
            "state, and changes are refused with 503, until it is back",
            exc,
        )

    def _attempt(self, read: Callable[[], _T]) -> _T | None:
        """`read()` from the log (step 1), or None when the log is away (steps 2, 3)."""
        if self._away_since is None:
            with self._refreshing:
                if self._away_since is None:  # not found away while this reader waited
                    # Step 1
                    try:
                        return read()
                    except LogUnavailableError as exc:
                        # Step 2
                        self.went_away(exc)
        # Step 3
        self._probe()
        return None

    def _probe(self) -> None:
        with self._flags:
            if self._probing or time.monotonic() < self._next_probe:
                return
            self._probing = True
        threading.Thread(target=self._run_probe, name="herder-log-probe", daemon=True).start()

    def _run_probe(self) -> None:
        back = False
        try:
            self._configs.snapshot()
            self._status.refresh()
            back = True
        except LogUnavailableError:
            pass
        except Exception as exc:  # a log closed meanwhile (a stop): no probe can tell
            _log.debug("probe of the log failed: %s", exc)
        with self._flags:
            self._probing = False
            self._next_probe = time.monotonic() + self._probe_every_s
            since, self._away_since = self._away_since, (None if back else self._away_since)
        if back and since is not None:
            _log.info(
                "the log is back after %.1f s: REST reads are current again",
                time.monotonic() - since,
            )
