"""The REST server: uvicorn serving the app from a background thread.

`start()`:
1. bind the listening socket in the caller's thread, so a taken port fails here with
   a ListenError naming the address, and port 0 has its real port at once (or take
   the socket a worker bound before anything else, `start(sock)`);
2. run uvicorn's event loop in a daemon thread (no signal handlers: the worker process
   owns SIGTERM/SIGINT);
3. return once uvicorn has started serving on the socket.
`stop()` asks uvicorn to exit: it stops accepting, lets requests in flight finish (up to
a grace period) and joins the thread.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import uvicorn

from connect.herder.api import Herder
from connect.rest.app import create_app
from connect.rest.auth import BasicAuth
from connect.rest.listeners import DEFAULT_LISTENER, bind_listener, listener_from_config
from connect.rest.params import TopicTracking

__all__ = ["DEFAULT_LISTENER", "RestServer", "listener_from_config"]

_log = logging.getLogger("connect.rest")
_START_TIMEOUT_S = 30.0
_GRACE_S = 5


class _ThreadServer(uvicorn.Server):
    """uvicorn without signal handling, reporting start-up through an Event."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        self.ready.set()


class RestServer:
    """Serves Kafka Connect's REST API for `herder` (see the module docstring)."""

    def __init__(
        self,
        herder: Herder,
        *,
        host: str = "127.0.0.1",
        port: int = 8083,
        auth: BasicAuth | None = None,
        topic_tracking: TopicTracking | None = None,
        registry: Any = None,
    ) -> None:
        self.herder = herder
        self.host = host
        self.port = port
        self.app = create_app(
            herder, auth=auth, topic_tracking=topic_tracking, registry=registry
        )
        self.access_log = True
        self._server: _ThreadServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}"

    def start(self, sock: socket.socket | None = None) -> None:
        """Serve on `sock` (bound and listening), or on a socket bound to host:port."""
        if self._thread is not None:
            raise RuntimeError("the REST server is already started")
        # Step 1
        if sock is None:
            sock = bind_listener(self.host, self.port)
        self.port = sock.getsockname()[1]
        # Step 2
        config = uvicorn.Config(
            self.app,
            log_config=None,
            lifespan="off",
            timeout_graceful_shutdown=_GRACE_S,
            server_header=False,
            access_log=self.access_log,
        )
        server = _ThreadServer(config)
        thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name="connect-rest", daemon=True
        )
        thread.start()
        self._server, self._thread = server, thread
        # Step 3
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not server.ready.wait(0.05) and thread.is_alive():
            if time.monotonic() > deadline:
                break
        if not server.ready.is_set() or not thread.is_alive():
            self.stop()
            sock.close()
            raise RuntimeError(f"the REST server did not start on {self.url}")

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        server.should_exit = True
        thread.join(_GRACE_S + 5)
        if thread.is_alive():
            server.force_exit = True
            thread.join(5)
        self._server = self._thread = None
