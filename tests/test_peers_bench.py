"""bench/peers_bench.py's own parts, cheaply: its arguments and the memory figure it
reports (the bench itself starts a broker, PostgreSQL and two workers, so it stays out
of the suite).

Why the memory helper has a test: `worker_rss_mb` is compared with Kafka Connect's at
a ratio of 1:4, and a sampler that missed a task process, or forgot one after it
exited, would pass that target by under-counting."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bench.peers_bench import TreePeak, parse_args, vm_hwm_bytes
from tests.waiting import wait_until

MB = 2**20


def test_defaults_are_the_issues_sizes_and_the_options_scale_them_down():
    args = parse_args([])
    assert (args.lines, args.rows, args.changes) == (1_000_000, 1_000_000, 200_000)
    assert args.connect_heap == "1g"
    small = parse_args(["--lines", "100000", "--rows", "50000", "--changes", "20000"])
    assert (small.lines, small.rows, small.changes) == (100_000, 50_000, 20_000)


@pytest.mark.parametrize("argv", [["--rows", "10"], ["--changes", "0"], ["--lines", "0"]])
def test_sizes_the_bench_cannot_run_are_refused(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        parse_args(argv)
    assert exc.value.code == 2
    assert "--rows ≥ 1000" in capsys.readouterr().err


def test_the_tree_peak_counts_a_child_and_keeps_its_peak_after_it_exits():
    # The child writes every byte of 64 MiB (resident, not merely reserved), says so,
    # and waits for its stdin to close.
    child = subprocess.Popen(
        [sys.executable, "-c",
         "import sys; b = b'x' * (64 << 20); print('ready', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        with TreePeak(os.getpid()) as peak:
            wait_until(lambda: peak.peaks.get(child.pid, 0) >= 64 * MB, 30,
                       "the child's 64 MiB in the tree's peak")
            assert child.stdout.readline() == "ready\n"
            child.stdin.close()
            child.wait(30)
            assert vm_hwm_bytes(child.pid) == 0  # gone: the kernel's figure went with it
        assert peak.peaks[child.pid] >= 64 * MB
        assert peak.peaks[os.getpid()] > 0  # the root of the tree counts too
        assert peak.total == sum(peak.peaks.values())
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()
