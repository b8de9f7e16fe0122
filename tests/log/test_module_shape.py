"""The log package stays one job per module: a size kept by a test, not by hope.

`log/partition.py` grew to 770 lines holding loading, locking, reading, retention and
swapping; it is now a facade over `partition_load`, `partition_read` and
`partition_retention`. These limits (the issue's: about 600 lines a module, 80 a
function) say when a module has grown a second job again and wants splitting along
the steps of its protocol.
"""

from __future__ import annotations

import ast
from pathlib import Path

import log

LOG_DIR = Path(log.__file__).parent
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def _modules() -> list[Path]:
    return sorted(LOG_DIR.rglob("*.py"))


def test_no_log_module_is_over_600_lines() -> None:
    assert _modules(), f"no modules found under {LOG_DIR}"
    too_long = {
        str(path.relative_to(LOG_DIR)): lines
        for path in _modules()
        if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert too_long == {}, f"split these along their protocol's steps: {too_long}"


def test_no_log_function_is_over_80_lines() -> None:
    too_long = {}
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    too_long[f"{path.relative_to(LOG_DIR)}:{node.name}"] = lines
    assert too_long == {}, f"make these named steps a reader can follow: {too_long}"
