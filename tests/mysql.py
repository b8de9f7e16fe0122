"""A private MySQL-protocol server (MariaDB) for the tests marked `mysql` (a pytest plugin).

`mysql_server` (session) starts one server per test session and stops it at the end;
`mysql_url` (per test) creates a fresh database in it and yields its SQLAlchemy URL
(PyMySQL driver: pure Python, so no client library is needed). The server binaries come
from Debian's MariaDB packages (`make test` installs them through `scripts/ensure-mysql`);
when they are missing or the server does not start, the fixture fails with the reason —
a mysql test never passes by being skipped.

How it starts (tests run as root here, and MariaDB refuses to run as root unless told
to, which we do not want: a test server has no business owning root's files):
1. A temporary directory under the system temp dir (not pytest's, which is private to
   root), owned by the `mysql` user; mariadb-install-db and mariadbd run as that user
   through `runuser` when we are root, directly otherwise.
2. `mariadb-install-db --no-defaults` (no system config can leak in) with root using
   ordinary password authentication, reachable only through the socket in the
   temporary directory. Grants are real (no `--skip-grant-tables`): once up, root makes
   the superuser `tributary` with a password, for 127.0.0.1 only, and tests connect as
   that user over TCP, so they can check credentials and privileges with users of
   their own.
3. The server listens on 127.0.0.1 only, on a free port (retried if another process
   takes it first), its socket, pid file and error log in the temporary directory.
   utf8mb4 with Debian's default collation, the session time zone UTC, and durability
   traded for speed (small redo log, no doublewrite, no flush at commit, no
   performance schema): the server is thrown away at the end. The binlog is on
   (row-based, full images and metadata: `_BINLOG`) for the CDC source's tests.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.prestart import Prestarted, register

__all__ = ["MysqlServer", "mysql_server", "mysql_url"]

SUPERUSER = "tributary"
PASSWORD = "tributary-secret"
_OS_USER = "mysql"
_START_TIMEOUT_S = 60.0
_SETTINGS = [
    "--skip-name-resolve",
    "--character-set-server=utf8mb4",
    "--collation-server=utf8mb4_general_ci",
    "--default-time-zone=+00:00",
    "--max-connections=200",
    "--performance-schema=OFF",
    "--innodb-buffer-pool-size=64M",
    "--innodb-log-file-size=16M",
    "--innodb-flush-log-at-trx-commit=0",
    "--innodb-doublewrite=0",
    # A statement stuck behind another session's lock fails in bounded time (the
    # default waits a year).
    "--lock-wait-timeout=30",
    "--innodb-lock-wait-timeout=30",
]
# The server's binlog, as MySqlCdcSource (and Debezium's MySQL/MariaDB connectors) need
# it: row-based, whole row images, and the table map events' full metadata (column
# names, signedness, ENUM/SET values, primary key), so each row event carries the
# shape of its table at that point of the log. GTIDs are always on in MariaDB
# (domain-server-sequence); server-id 1 names this server in them. Only for the
# server itself, not mariadb-install-db's bootstrap.
_BINLOG = [
    "--server-id=1",
    "--log-bin=mysql-bin",
    "--binlog-format=ROW",
    "--binlog-row-image=FULL",
    "--binlog-row-metadata=FULL",
    "--binlog-checksum=CRC32",
]


def _program(name: str) -> str:
    """The path of a MariaDB program (mariadbd lives in /usr/sbin, off some PATHs)."""
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/local/sbin")
    if found is None:
        raise RuntimeError(
            f"MariaDB is not installed (no {name}): run scripts/ensure-mysql (make test "
            "does) to install it from Debian's packages"
        )
    return found


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class MysqlServer:
    """One MariaDB server in a temporary directory; `start()`, `url()`, `stop()`."""

    def __init__(self) -> None:
        self.mariadbd = _program("mariadbd")
        self.install_db = _program("mariadb-install-db")
        self.root = Path(tempfile.mkdtemp(prefix="tributary-mysql-"))
        self.data = self.root / "data"
        self.socket = self.root / "mysqld.sock"
        self.logfile = self.root / "server.log"
        self.port = 0
        self.started_in_s = 0.0
        self.process: subprocess.Popen[bytes] | None = None
        self._as_root = os.geteuid() == 0
        self._counter = itertools.count()

    # ------------------------------------------------------------------ process

    def _as_user(self, cmd: list[str]) -> list[str]:
        return ["runuser", "-u", _OS_USER, "--", *cmd] if self._as_root else cmd

    def _prepare(self) -> None:
        if self._as_root:
            try:
                user = pwd.getpwnam(_OS_USER)
            except KeyError:
                raise RuntimeError(
                    f"tests run as root, and MariaDB is not to run as root: the "
                    f"'{_OS_USER}' user (scripts/ensure-mysql creates it) is needed"
                ) from None
            os.chown(self.root, user.pw_uid, user.pw_gid)
        os.chmod(self.root, 0o700)
        cmd = [
            self.install_db,
            "--no-defaults",
            f"--datadir={self.data}",
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
            *_SETTINGS,
        ]
        proc = subprocess.run(
            self._as_user(cmd), capture_output=True, text=True, timeout=120, check=False
        )
        if proc.returncode != 0:
            raise RuntimeError(
                f"mariadb-install-db failed ({proc.returncode}): "
                f"{(proc.stderr.strip() or proc.stdout)[-2000:]}"
            )

    def _launch(self) -> subprocess.Popen[bytes]:
        (self.root / "mysqld.pid").unlink(missing_ok=True)  # `_end` signals what it names
        cmd = [
            self.mariadbd,
            "--no-defaults",
            f"--datadir={self.data}",
            f"--socket={self.socket}",
            f"--pid-file={self.root / 'mysqld.pid'}",
            f"--log-error={self.logfile}",
            f"--tmpdir={self.root}",
            "--bind-address=127.0.0.1",
            f"--port={self.port}",
            *_SETTINGS,
            *_BINLOG,
        ]
        return subprocess.Popen(
            self._as_user(cmd), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )

    def _root_connect(self) -> Any:
        """root over the socket: the only way in for root (see the module docstring)."""
        import pymysql

        return pymysql.connect(unix_socket=str(self.socket), user="root", autocommit=True)

    def _wait_ready(self, process: subprocess.Popen[bytes]) -> bool:
        """Whether the server answers before it exits or the start timeout passes."""
        import pymysql

        deadline = time.monotonic() + _START_TIMEOUT_S
        while time.monotonic() < deadline:
            if process.poll() is not None:
                return False
            if self.socket.exists():
                try:
                    self._root_connect().close()
                    return True
                except pymysql.err.OperationalError:
                    pass
            time.sleep(0.05)
        return False

    def _log_tail(self) -> str:
        return self.logfile.read_text(errors="replace")[-2000:] if self.logfile.exists() else ""

    def start(self) -> None:
        began = time.monotonic()
        self._prepare()
        for _ in range(5):
            self.port = _free_port()
            process = self._launch()
            if self._wait_ready(process):
                self.process = process
                break
            self._end(process)
            if "Address already in use" not in self._log_tail():  # not a lost port race
                break
        if self.process is None:
            raise RuntimeError(f"MariaDB did not start:\n{self._log_tail()}")
        self.execute(
            f"CREATE USER '{SUPERUSER}'@'127.0.0.1' IDENTIFIED BY '{PASSWORD}'",
            f"GRANT ALL PRIVILEGES ON *.* TO '{SUPERUSER}'@'127.0.0.1' WITH GRANT OPTION",
        )
        self.started_in_s = time.monotonic() - began

    def _end(self, process: subprocess.Popen[bytes]) -> None:
        """SIGTERM to mariadbd itself (it shuts down cleanly on it), then SIGKILL if it
        hangs. Not to `runuser` in front of it, which would pass the signal on but then
        wait two seconds and kill the server whether or not it had finished."""
        if process.poll() is None:
            pid_file = self.root / "mysqld.pid"
            try:
                os.kill(int(pid_file.read_text().strip()), signal.SIGTERM)
            except (OSError, ValueError):  # no pid file (yet): through runuser, then
                process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                self._end(process)
        shutil.rmtree(self.root, ignore_errors=True)

    # ---------------------------------------------------------------- databases

    def url(self, database: str = "", *, user: str = SUPERUSER, password: str = PASSWORD) -> str:
        """A SQLAlchemy URL (PyMySQL driver, utf8mb4) for `database`."""
        auth = f"{user}:{password}" if password else user
        return f"mysql+pymysql://{auth}@127.0.0.1:{self.port}/{database}?charset=utf8mb4"

    def execute(self, *statements: str) -> None:
        """Run statements as root, each committed on its own."""
        conn = self._root_connect()
        try:
            with conn.cursor() as cur:
                for sql in statements:
                    cur.execute(sql)
        finally:
            conn.close()

    def create_database(self) -> str:
        name = f"test_{os.getpid()}_{next(self._counter)}"
        self.execute(f"CREATE DATABASE `{name}`")
        return name

    def drop_database(self, name: str) -> None:
        """Drop `name`, ending its sessions first: a connection a test left open (in a
        transaction, holding metadata locks) would otherwise block the DROP."""
        conn = self._root_connect()
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT id FROM information_schema.processlist WHERE db = %s", (name,))
                for (session,) in cur.fetchall():
                    with contextlib.suppress(Exception):  # it may have ended meanwhile
                        cur.execute(f"KILL {int(session)}")
                cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
        finally:
            conn.close()


def _start_server(_tmp_path_factory: pytest.TempPathFactory | None = None) -> MysqlServer:
    server = MysqlServer()
    try:
        server.start()
    except BaseException:
        server.stop()
        raise
    return server


@pytest.fixture(scope="session")
def mysql_server(prestarted: Prestarted) -> Iterator[MysqlServer]:
    """A private MariaDB server for the whole session (fails, never skips), started
    ahead when the session starts (tests/prestart.py)."""
    server = prestarted.take("mysql_server", _start_server)
    try:
        yield server
    finally:
        server.stop()


register("mysql_server", _start_server, MysqlServer.stop)


@pytest.fixture
def mysql_url(mysql_server: MysqlServer) -> Iterator[str]:
    """A SQLAlchemy URL of a fresh database, dropped after the test."""
    name = mysql_server.create_database()
    try:
        yield mysql_server.url(name)
    finally:
        mysql_server.drop_database(name)
