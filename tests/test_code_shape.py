"""The code stays in pieces a reader can hold: a size kept by a test, not by hope.

No module of the project's code (connect/, connectors/, log/, bench/, and the Python
programs in scripts/) is over 600 lines, and no function over 80. Past those, a
module has usually grown a second job and wants splitting along the steps of its
protocol (`log/partition.py` grew to 770 lines holding loading, locking, reading,
retention and swapping; it is now a facade over `partition_load`, `partition_read` and
`partition_retention`), and a function wants its steps named.

The exceptions are listed below, each with its reason: a declarative table that reads
best whole, or a file someone is splitting now ("being split": the entry goes once the
split lands, and a test fails while a listed file no longer needs its entry, so the
list never hides a new one).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("connect", "connectors", "log", "bench")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80

#: Modules allowed past MAX_MODULE_LINES, and why.
MODULE_EXCEPTIONS: dict[str, str] = {
    "connectors/s3/config_defs.py": "declarative: the S3 connectors' 57 keys in Confluent's "
    "names and groups, a define each, and the alias tables beside them",
}

#: Functions ("path:name") allowed past MAX_FUNCTION_LINES, and why.
FUNCTION_EXCEPTIONS: dict[str, str] = {
}


def _is_python(path: Path) -> bool:
    """A `.py` file, or a program whose `#!` line names python (scripts/kafka)."""
    if path.suffix == ".py":
        return True
    with path.open("rb") as f:
        first = f.readline()
    return first.startswith(b"#!") and b"python" in first


def _sources() -> list[Path]:
    """Every Python file the limits apply to: the packages' modules, and the Python
    programs in scripts/."""
    files = [path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))]
    scripts = sorted((ROOT / "scripts").iterdir())
    return files + [path for path in scripts if path.is_file() and _is_python(path)]


def _long_modules() -> dict[str, int]:
    out = {}
    for path in _sources():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES:
            out[path.relative_to(ROOT).as_posix()] = lines
    return out


def _long_functions() -> dict[str, int]:
    out = {}
    for path in _sources():
        rel = path.relative_to(ROOT).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    out[f"{rel}:{node.name}"] = lines
    return out


def test_the_limits_see_every_package() -> None:
    """A walk that found nothing would pass every check below."""
    found = {path.relative_to(ROOT).parts[0] for path in _sources()}
    assert found == {*PACKAGES, "scripts"}
    assert any(path.name == "kafka" for path in _sources())  # a script without a suffix


def test_no_module_is_over_600_lines() -> None:
    too_long = {k: v for k, v in _long_modules().items() if k not in MODULE_EXCEPTIONS}
    assert too_long == {}, f"split these by concern, a module a job: {too_long}"


def test_no_function_is_over_80_lines() -> None:
    too_long = {k: v for k, v in _long_functions().items() if k not in FUNCTION_EXCEPTIONS}
    assert too_long == {}, f"make these named steps a reader can follow: {too_long}"


def test_every_exception_is_still_needed() -> None:
    """An entry whose file or function is back under the limit goes from the list."""
    assert set(MODULE_EXCEPTIONS) - set(_long_modules()) == set()
    assert set(FUNCTION_EXCEPTIONS) - set(_long_functions()) == set()
