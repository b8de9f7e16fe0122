"""A private PostgreSQL server for the tests marked `postgres` (a pytest plugin).

`postgres_server` (session) starts one server per test session and stops it at the
end; `postgres_url` (per test) creates a fresh database in it and yields its SQLAlchemy
URL. The server binaries come from Debian's packages (`make test` installs them through
`scripts/ensure-postgres`); when they are missing or the server does not start, the
fixture fails with the reason — a postgres test never passes by being skipped.

How it starts (tests run as root here, and PostgreSQL refuses to run as root):
1. A temporary directory under the system temp dir (not pytest's, which is private to
   root), owned by the `postgres` user; initdb and pg_ctl run as that user through
   `runuser` when we are root, directly otherwise.
2. `initdb --no-sync` with a superuser `tributary`; pg_hba trusts that user on
   127.0.0.1 and asks every other role for its password (scram), so tests can check
   credentials and privileges with roles of their own.
3. The server listens on 127.0.0.1 only, on a free port (retried if another process
   takes it first), its socket in the data directory. `wal_level=logical` with room
   for replication slots and WAL senders for CDC; `synchronous_commit` stays on (the
   logical decoding functions only see flushed WAL); `fsync=off` for speed.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.prestart import Prestarted, register

__all__ = ["PostgresServer", "postgres_server", "postgres_url"]

SUPERUSER = "tributary"
_OS_USER = "postgres"
_SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
    "wal_level": "logical",
    "max_replication_slots": "20",
    "max_wal_senders": "20",
    "synchronous_commit": "on",
    "fsync": "off",
    "full_page_writes": "off",
    "max_connections": "200",
    "log_min_messages": "warning",
    "timezone": "'UTC'",
}


def _bindir() -> Path:
    """The newest PostgreSQL's server binaries under /usr/lib/postgresql."""
    found = [
        Path(d)
        for d in glob.glob("/usr/lib/postgresql/*/bin")
        if os.access(os.path.join(d, "initdb"), os.X_OK)
        and os.access(os.path.join(d, "pg_ctl"), os.X_OK)
    ]
    if not found:
        raise RuntimeError(
            "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb and pg_ctl): "
            "run scripts/ensure-postgres (make test does) to install it from Debian's packages"
        )

    def version(path: Path) -> tuple[int, ...]:
        name = path.parent.name
        return tuple(int(p) for p in name.split(".") if p.isdigit())

    return max(found, key=version)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PostgresServer:
    """One PostgreSQL server in a temporary directory; `start()`, `url()`, `stop()`."""

    def __init__(self, *, bindir: Path | None = None) -> None:
        self.bindir = bindir or _bindir()
        self.root = Path(tempfile.mkdtemp(prefix="tributary-pg-"))
        self.data = self.root / "data"
        self.logfile = self.root / "server.log"
        self.port = 0
        self.started_in_s = 0.0
        self._as_root = os.geteuid() == 0
        self._counter = itertools.count()

    # ------------------------------------------------------------------ process

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.bindir / args[0]), *args[1:]]
        if self._as_root:
            cmd = ["runuser", "-u", _OS_USER, "--", *cmd]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        if proc.returncode != 0:
            raise RuntimeError(
                f"{args[0]} failed ({proc.returncode}): {proc.stderr.strip() or proc.stdout}"
            )
        return proc

    def _prepare(self) -> None:
        if self._as_root:
            try:
                user = pwd.getpwnam(_OS_USER)
            except KeyError:
                raise RuntimeError(
                    f"tests run as root, and PostgreSQL refuses root: the '{_OS_USER}' "
                    "user (made by Debian's postgresql package) is needed to run it"
                ) from None
            os.chown(self.root, user.pw_uid, user.pw_gid)
        os.chmod(self.root, 0o700)
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            SUPERUSER,
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-locale",
            "--no-sync",
        )
        settings = dict(_SETTINGS, unix_socket_directories=f"'{self.data}'")
        with open(self.data / "postgresql.conf", "a", encoding="utf-8") as conf:
            conf.write("\n# tests/pg.py\n")
            conf.writelines(f"{k} = {v}\n" for k, v in settings.items())
        (self.data / "pg_hba.conf").write_text(
            f"local all all trust\n"
            f"host all {SUPERUSER} 127.0.0.1/32 trust\n"
            f"host replication {SUPERUSER} 127.0.0.1/32 trust\n"
            "host all all 127.0.0.1/32 scram-sha-256\n"
            "host replication all 127.0.0.1/32 scram-sha-256\n",
            encoding="utf-8",
        )

    def start(self) -> None:
        began = time.monotonic()
        self._prepare()
        error: Exception | None = None
        for _ in range(5):
            self.port = _free_port()
            try:
                self._run(
                    "pg_ctl",
                    "start",
                    "-D",
                    str(self.data),
                    "-l",
                    str(self.logfile),
                    "-w",
                    "-t",
                    "60",
                    "-o",
                    f"-p {self.port}",
                )
                break
            except RuntimeError as exc:  # most likely the port was taken meanwhile
                error = exc
        else:
            log = self.logfile.read_text(errors="replace")[-2000:] if self.logfile.exists() else ""
            raise RuntimeError(f"PostgreSQL did not start: {error}\n{log}")
        self.started_in_s = time.monotonic() - began

    def stop(self) -> None:
        if self.data.exists() and (self.data / "postmaster.pid").exists():
            with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
                self._run("pg_ctl", "stop", "-D", str(self.data), "-m", "fast", "-w", "-t", "60")
        shutil.rmtree(self.root, ignore_errors=True)

    # ---------------------------------------------------------------- databases

    def url(self, database: str = "postgres", *, user: str = SUPERUSER, password: str = "") -> str:
        """A SQLAlchemy URL (psycopg2 driver) for `database`."""
        auth = f"{user}:{password}" if password else user
        return f"postgresql+psycopg2://{auth}@127.0.0.1:{self.port}/{database}"

    def execute(self, sql: str, *, database: str = "postgres") -> None:
        """Run one statement as the superuser, outside a transaction."""
        import psycopg2

        conn = psycopg2.connect(host="127.0.0.1", port=self.port, user=SUPERUSER, dbname=database)
        try:
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute(sql)
        finally:
            conn.close()

    def create_database(self) -> str:
        """A fresh, empty database (from template0: fast, and nothing inherited)."""
        name = f"test_{os.getpid()}_{next(self._counter)}"
        self.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
        return name

    def drop_database(self, name: str, timeout_s: float = 15.0) -> None:
        """Drop a test's database with the replication slots a test left on it. FORCE
        ends its sessions but not a slot, and a slot whose walsender is still exiting
        is "active for PID …": end that walsender, drop the slots, retry until both
        went (a race seen under load), within timeout_s."""
        import psycopg2

        in_db = f"FROM pg_replication_slots WHERE database = '{name}'"
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                self.execute(f"SELECT pg_terminate_backend(active_pid) {in_db} AND active")
                self.execute(f"SELECT pg_drop_replication_slot(slot_name) {in_db} AND NOT active")
                self.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                return
            except psycopg2.Error:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)


def _start_server(_tmp_path_factory: pytest.TempPathFactory | None = None) -> PostgresServer:
    server = PostgresServer()
    try:
        server.start()
    except BaseException:
        server.stop()
        raise
    return server


@pytest.fixture(scope="session")
def postgres_server(prestarted: Prestarted) -> Iterator[PostgresServer]:
    """A private PostgreSQL server for the whole session (fails, never skips), started
    ahead when the session starts (tests/prestart.py)."""
    server = prestarted.take("postgres_server", _start_server)
    try:
        yield server
    finally:
        server.stop()


register("postgres_server", _start_server, PostgresServer.stop)


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A SQLAlchemy URL of a fresh database, dropped after the test."""
    name = postgres_server.create_database()
    try:
        yield postgres_server.url(name)
    finally:
        postgres_server.drop_database(name)
