"""What every `connect` command shares, run as real subprocesses: `--version`, help
that documents every option with its default (and never prints a secret), usage
mistakes in one line with exit 2, `--url` before or after `offsets`' action and
without a scheme, and Ctrl-C as exit 130 without a traceback."""

from __future__ import annotations

import argparse
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest

from connect.cli.main import build_parser
from tests.connect.rest.live import LiveServers

pytestmark = pytest.mark.integration

_SCRIPT = Path(sys.executable).with_name("connect")
CONNECT = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "connect.cli.main"]


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CONNECT, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[LiveServers]:
    live = LiveServers(tmp_path)
    yield live
    live.close()


def _parsers(
    parser: argparse.ArgumentParser,
) -> Iterator[argparse.ArgumentParser]:
    """`parser` and every parser below it (each command and subcommand once)."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in {id(p): p for p in action.choices.values()}.values():
                yield from _parsers(child)


def test_version_is_the_package_version(subprocess_env: dict[str, str]) -> None:
    proc = run(subprocess_env, "--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"connect (tributary) {metadata.version('tributary')}\n"


def test_every_option_has_help_that_shows_its_default() -> None:
    parsers = list(_parsers(build_parser()))
    assert {p.prog for p in parsers} >= {"connect log dump", "connect offsets set"}
    undocumented = []
    for parser in parsers:
        formatter = parser._get_formatter()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction | argparse._HelpAction):
                continue
            where = f"{parser.prog} {'/'.join(action.option_strings) or action.dest}"
            if not action.help:
                undocumented.append(f"{where}: no help")
            elif action.option_strings and action.nargs != 0:  # not positionals, flags
                shown = formatter._expand_help(action)
                if shown.count("default") != 1 or "default: " not in shown:
                    undocumented.append(f"{where}: not one default in {shown!r}")
    assert undocumented == []


def test_help_reads_well_and_never_shows_a_secret(subprocess_env: dict[str, str]) -> None:
    env = {**subprocess_env, "CONNECT_REST_PASSWORD": "s3cret-pa55"}
    top = run(env, "--help")
    assert top.returncode == 0
    # Each command on one line with its help (argparse wrapped the long names).
    for command in ("log", "standalone", "distributed", "status", "offsets", "registry"):
        assert any(
            line.split()[:1] == [command] and len(line.split()) > 1
            for line in top.stdout.splitlines()
        ), (command, top.stdout)
    for args in (["status"], ["offsets"], ["offsets", "get"], ["ps"], ["log", "dump"]):
        proc = run(env, *args, "--help")
        assert proc.returncode == 0, proc.stderr
        assert "s3cret-pa55" not in proc.stdout
        assert "(default: " in proc.stdout


@pytest.mark.parametrize(
    ("args", "where"),
    [
        (["log", "consume"], "connect log consume"),  # a missing argument
        (["log", "topics", "--nope"], "connect"),  # an unknown option
        (["offsets", "frob"], "connect offsets"),  # an unknown action
        (["status", "--url", "ftp://example.com"], "connect status"),  # not http(s)
        (["status", "--timeout", "soon"], "connect status"),
    ],
)
def test_usage_mistakes_are_one_line_and_exit_2(
    subprocess_env: dict[str, str], args: list[str], where: str
) -> None:
    proc = run(subprocess_env, *args)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"{where}: error: ")
    assert lines[0].endswith("--help)")


def test_url_goes_before_or_after_the_action_and_needs_no_scheme(
    servers: LiveServers, subprocess_env: dict[str, str]
) -> None:
    address = servers().url.removeprefix("http://")  # host:port
    assert run(subprocess_env, "status", "--url", address).stdout == "no connectors\n"
    # A connector that does not exist: the worker was reached and answered 404.
    for args in (
        ["offsets", "--url", address, "get", "nope"],
        ["offsets", "get", "nope", "--url", address],
        ["offsets", "--url", "127.0.0.1:1", "get", "nope", "--url", address],  # after wins
    ):
        proc = run(subprocess_env, *args)
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr.startswith(f"error: http://{address} answered 404"), proc.stderr
    env = {**subprocess_env, "CONNECT_REST_URL": address}
    assert run(env, "status").stdout == "no connectors\n"


def test_ctrl_c_while_waiting_for_a_worker_exits_130(subprocess_env: dict[str, str]) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(30)
        address = f"127.0.0.1:{server.getsockname()[1]}"
        proc = subprocess.Popen(
            [*CONNECT, "status", "--url", address, "--timeout", "60"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=subprocess_env,
        )
        try:
            connection, _ = server.accept()
            with connection:
                connection.settimeout(30)
                assert connection.recv(1 << 16).startswith(b"GET /connectors")
                proc.send_signal(signal.SIGINT)  # while it waits for the answer
                out, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == 130
    assert (out, err) == ("", "interrupted\n")
