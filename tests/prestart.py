"""Session servers started ahead of their first test, on threads (a pytest plugin).

Why: the suite's session servers (the real Kafka broker, the Kafka Connect peer on a
broker of its own, the Spark standalone cluster, PostgreSQL, MariaDB, the S3 endpoint)
were each started when the first test asking for it ran, one after another, while
that test waited: the first test of tests/cli/test_jvm_scripts.py waited for three
JVMs in a row (15.8 s of setup in CI), the first Spark cluster test for two more. A
start-up is mostly one JVM's thread loading classes and then waiting for its ports:
on two cores it overlaps well with the tests that run before it and with another
start-up.

How it runs:
1. At the first test's setup (`prestarted`, an autouse session fixture) the tests
   selected for the session say which servers they use (their fixture closures); each
   server a plugin `register`ed and some test uses starts on a thread of its own, in
   the session's temporary directory as before. Servers start in waves by the first
   test that uses them, each wave once the one before it has started; a server that
   needs another (Kafka Connect its broker) waits for that one's thread first.
2. The server's own session fixture `take`s it when a test first asks: it waits for
   the thread and gets the server, or the start's failure raised again there, so a
   server that cannot start still fails exactly the tests that asked for it, with the
   same message. A server nothing started ahead (a plugin used outside this session's
   selection) starts in its fixture, as before.
3. A taken server is stopped by its fixture's teardown, as before; one never taken
   (the run ended early: -x, Ctrl-C) is stopped at the session's end, after the
   others, in the reverse order of the starts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

__all__ = ["Prestarted", "prestarted", "register"]

T = TypeVar("T")


@dataclass(frozen=True)
class _Plan:
    start: Callable[..., Any]  # (tmp_path_factory, *the servers it needs) -> server
    stop: Callable[[Any], None]
    needs: tuple[str, ...]


_PLANS: dict[str, _Plan] = {}


def register(
    fixture: str,
    start: Callable[..., Any],
    stop: Callable[[Any], None],
    *,
    needs: Sequence[str] = (),
) -> None:
    """Let session fixture `fixture`'s server start ahead: `start(tmp_path_factory,
    *servers of needs)` makes and starts it, `stop(server)` stops one no test took.
    Register a server after the ones it needs."""
    _PLANS[fixture] = _Plan(start, stop, tuple(needs))


class _Start(threading.Thread):
    """One server's start-up; `result()` waits for it and raises what it raised."""

    def __init__(self, fixture: str, start: Callable[[], Any]) -> None:
        super().__init__(name=f"prestart-{fixture}", daemon=True)
        self._start_server = start
        self.server: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.server = self._start_server()
        except BaseException as exc:  # pytest.fail raises a BaseException: keep it too
            self.error = exc

    def result(self) -> Any:
        self.join()
        if self.error is not None:
            raise self.error
        return self.server


class Prestarted:
    """The servers started ahead in this session (see the module docstring)."""

    def __init__(self, tmp_path_factory: pytest.TempPathFactory) -> None:
        self._factory = tmp_path_factory
        self._starts: dict[str, _Start] = {}
        self._taken: set[str] = set()

    def start(self, items: Sequence[pytest.Item]) -> None:
        # Step 1: the session's temporary directory is made here, before threads race to.
        self._factory.getbasetemp()
        first_use: dict[str, int] = {}
        for index, item in enumerate(items):
            for fixture in getattr(item, "fixturenames", ()):
                if fixture in _PLANS:
                    first_use.setdefault(fixture, index)
        # Servers start in waves by their first test, each wave after the one before
        # has started (its servers up or failed): the first users' servers do not share
        # the two cores with servers needed minutes later. Within a wave, registration
        # order: a server's needs have their threads before it.
        waves: dict[int, list[str]] = {}
        for fixture in _PLANS:
            if fixture in first_use:
                waves.setdefault(first_use[fixture], []).append(fixture)
        before: list[_Start] = []
        for index in sorted(waves):
            wave = []
            for fixture in waves[index]:
                plan = _PLANS[fixture]
                if not all(n in self._starts for n in plan.needs):
                    continue

                def run(plan: _Plan = plan, before: list[_Start] = before) -> Any:
                    for thread in before:
                        thread.join()
                    needed = (self._starts[n].result() for n in plan.needs)
                    return plan.start(self._factory, *needed)

                thread = _Start(fixture, run)
                self._starts[fixture] = thread
                wave.append(thread)
                thread.start()
            before = wave

    def take(self, fixture: str, start: Callable[[], T]) -> T:
        """The server started ahead for `fixture`, else `start()` now (Step 2)."""
        thread = self._starts.get(fixture)
        if thread is None:
            return start()
        self._taken.add(fixture)
        return thread.result()  # type: ignore[no-any-return]

    def stop_untaken(self) -> None:
        # Step 3
        for fixture in reversed(list(self._starts)):
            thread = self._starts[fixture]
            if fixture in self._taken:
                continue
            thread.join()
            if thread.error is None:
                _PLANS[fixture].stop(thread.server)


@pytest.fixture(scope="session", autouse=True)
def prestarted(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Prestarted]:
    servers = Prestarted(tmp_path_factory)
    servers.start(request.session.items)
    try:
        yield servers
    finally:
        servers.stop_untaken()
