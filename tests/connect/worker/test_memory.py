"""A worker process's allocator settings (connect.worker.memory), each checked in a
fresh interpreter: pyarrow's default pool, glibc's arena count (read back from glibc's
own malloc_stats), and an operator's own settings left alone."""

from __future__ import annotations

import json
import subprocess
import sys

_PROBE = """
import ctypes, ctypes.util, json, os, sys, threading
if sys.argv[1] == "tune":
    from connect.worker.memory import tune_process_memory
    tune_process_memory()
import pyarrow as pa

def allocate():
    blocks = [bytearray(50_000) for _ in range(20)]  # below malloc's mmap threshold

threads = [threading.Thread(target=allocate) for _ in range(12)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps({"pool": pa.default_memory_pool().backend_name,
                  "arena_max": os.environ.get("MALLOC_ARENA_MAX")}), flush=True)
ctypes.CDLL(ctypes.util.find_library("c")).malloc_stats()  # to stderr, one block an arena
"""


def probe(env: dict[str, str], mode: str) -> tuple[dict[str, str | None], int]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, mode],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=120,
    )
    arenas = sum(line.startswith("Arena ") for line in done.stderr.splitlines())
    return json.loads(done.stdout), arenas


def _clean(env: dict[str, str]) -> dict[str, str]:
    return {
        k: v for k, v in env.items() if k not in ("ARROW_DEFAULT_MEMORY_POOL", "MALLOC_ARENA_MAX")
    }


def test_a_worker_process_uses_malloc_for_arrow_and_two_arenas(
    subprocess_env: dict[str, str],
) -> None:
    env = _clean(subprocess_env)
    untuned, untuned_arenas = probe(env, "plain")
    tuned, tuned_arenas = probe(env, "tune")
    assert untuned["pool"] != "system" and untuned_arenas > 2  # the check can fail
    assert tuned == {"pool": "system", "arena_max": "2"}  # task processes inherit both
    assert 1 <= tuned_arenas <= 2


def test_an_operators_own_settings_win(subprocess_env: dict[str, str]) -> None:
    env = {**_clean(subprocess_env), "ARROW_DEFAULT_MEMORY_POOL": "mimalloc"}
    env["MALLOC_ARENA_MAX"] = "4"
    got, arenas = probe(env, "tune")
    assert got == {"pool": "mimalloc", "arena_max": "4"}
    assert 2 < arenas <= 4
