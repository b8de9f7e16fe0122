"""What scripts/kafka and scripts/kafka-connect share: one JVM server per directory.

Both scripts start a JVM in a session of its own (it outlives the script), remember its
pid and port in files of their directory, wait until it answers, and stop it with
SIGTERM (its clean shutdown hook) and SIGKILL after a timeout. A failure is one line:
`Failure` carries it to the script's main, which prints it and exits 1.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import time
from pathlib import Path

HOST = "127.0.0.1"


class Failure(Exception):
    """A reason to stop with one line on stderr (and exit code 1)."""


def pid_in(directory: Path, pid_file: str, main_class: str) -> int | None:
    """The pid recorded in directory/pid_file when that process still runs main_class
    (a pid file may outlive its process and the pid be reused)."""
    try:
        pid = int((directory / pid_file).read_text().strip())
    except (OSError, ValueError):
        return None
    if not alive(pid):
        return None
    try:
        return pid if main_class.encode() in Path(f"/proc/{pid}/cmdline").read_bytes() else None
    except OSError:
        return pid  # no /proc here: trust the pid file


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (exited, not yet reaped by its parent) is not running.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def terminate(pid: int | None, timeout_s: float) -> None:
    """SIGTERM (the JVM's shutdown hook runs), then SIGKILL after timeout_s."""
    if pid is None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        while alive(pid):
            time.sleep(0.05)


def read_port(directory: Path, port_file: str) -> str:
    try:
        return (directory / port_file).read_text().strip()
    except OSError:
        return "?"


def port_free(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex((HOST, port)) != 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def read_tail(path: Path, limit: int = 200_000) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - limit))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def first_error(text: str) -> str:
    """The first line that says what went wrong, without its stack trace."""
    for line in text.splitlines():
        if re.search(r"\b(ERROR|FATAL)\b|Exception|Error:", line):
            return line.strip()[:300]
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip()[:300] if lines else "no output"


def remove_made(directory: Path, created_mark: str, made: tuple[str, ...]) -> None:
    """Remove what a start made in directory: all of it when the start created the
    directory (created_mark is in it), else just the names in `made`."""
    if not directory.exists():
        return
    if (directory / created_mark).exists():
        shutil.rmtree(directory, ignore_errors=True)
        return
    for name in made:
        path = directory / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
