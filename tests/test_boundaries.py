"""The architecture's import rules, kept by reading every module's source with `ast`
(docs: shared DESIGN.md, "Packages"), and the plugin API's fast Struct path they lean on:

1. `Struct._values` is read and written only by `Struct` itself (connect/api/data.py);
   everyone else goes through `Struct.trusted(schema, values)` and `struct.values()`.
2. A connector imports nothing of `connect` but the plugin API, and only through the
   package, `from connect.api import ...` (so what plugins use is what `connect.api`
   exports); no exceptions. The API itself imports nothing of the project, its lazily
   loaded modules included.
3. The runtime (`connect/`) imports from `log` only names `log.__all__` exports.
4. `import connect.api` and `import log` stay light: numpy, pyarrow and confluent-kafka
   load only with the first name that needs them.

A rule broken names the file and line, so the fix is one look away.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import log
from connect.api import INT32_SCHEMA, OPTIONAL_STRING_SCHEMA, Schema, SchemaError, Struct

ROOT = Path(__file__).resolve().parent.parent


def _modules(*packages: str) -> Iterator[tuple[str, ast.Module]]:
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            yield rel, ast.parse(path.read_text(encoding="utf-8"), filename=rel)


def _imports(tree: ast.Module) -> Iterator[tuple[int, str, list[str]]]:
    """(line, module, names) of every import, at any depth (function-level ones too)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module, [alias.name for alias in node.names]


def _is_attr_call(node: ast.Call) -> bool:
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in ("attrgetter", "getattr", "setattr", "hasattr", "delattr", "__setattr__")


def test_only_struct_touches_its_values_slot() -> None:
    bad = []
    for rel, tree in _modules("connect", "connectors", "log", "bench", "tests"):
        if rel == "connect/api/data.py":
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "_values"
                and not (isinstance(node.value, ast.Name) and node.value.id == "self")
            ):
                bad.append(f"{rel}:{node.lineno}: .._values")
            elif (
                isinstance(node, ast.Call)
                and _is_attr_call(node)
                and any(isinstance(a, ast.Constant) and a.value == "_values" for a in node.args)
            ):
                bad.append(f"{rel}:{node.lineno}: '_values' by name")
    assert bad == [], "use Struct.trusted(schema, values) / struct.values():\n" + "\n".join(bad)


def test_connectors_import_only_the_plugin_api_of_connect() -> None:
    """No exceptions: what a connector needs of the runtime's formats (JsonConverter's
    bytes read into Arrow, say) belongs in the API, as `connect.api.JsonArrowReader`."""
    bad = []
    for rel, tree in _modules("connectors"):
        for line, module, names in _imports(tree):
            if module == "connect.api":
                continue
            if module == "connect" and names == ["api"]:
                continue
            if module == "connect" or module.startswith("connect."):
                bad.append(f"{rel}:{line}: {module} {names or ''}".rstrip())
    assert bad == [], "connectors import from connect.api only:\n" + "\n".join(bad)


def test_the_plugin_api_imports_nothing_of_the_project() -> None:
    """Statically, every module of `connect/api`, the lazily loaded ones too (the Arrow
    mapping, the JSON reader), which an `import connect.api` in a fresh interpreter
    (tests/connect/test_api.py) never loads."""
    bad = []
    for rel, tree in _modules("connect/api"):
        for line, module, _ in _imports(tree):
            root = module.split(".")[0]
            inside = module == "connect.api" or module.startswith("connect.api.")
            if root in ("log", "connectors") or (root == "connect" and not inside):
                bad.append(f"{rel}:{line}: {module}")
    assert bad == [], "connect/api imports nothing of the project but itself:\n" + "\n".join(bad)


def test_runtime_imports_only_what_log_exports() -> None:
    exported = set(log.__all__)
    bad = []
    for rel, tree in _modules("connect"):
        for line, module, names in _imports(tree):
            if module.startswith("log."):
                bad.append(f"{rel}:{line}: {module}")
            elif module == "log":
                bad += [f"{rel}:{line}: log.{n}" for n in names if n not in exported]
    assert bad == [], "connect/ imports log's exported names only:\n" + "\n".join(bad)


@pytest.mark.parametrize(
    ("module", "heavy"),
    [("connect.api", ("numpy", "pyarrow")), ("log", ("confluent_kafka",))],
)
def test_lazy_exports_load_on_first_use(subprocess_env, module: str, heavy: tuple) -> None:
    code = (
        f"import sys, importlib\n"
        f"m = importlib.import_module({module!r})\n"
        f"print(sorted(h for h in {heavy!r} if h in sys.modules))\n"
        f"missing = [n for n in m.__all__ if not hasattr(m, n)]\n"
        f"print(missing)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env, check=True
    ).stdout.splitlines()
    assert out == ["[]", "[]"]  # nothing heavy on import; every exported name resolves


def test_api_exports_the_columnar_names_plugins_use() -> None:
    import connect.api
    from connect.api import arrow, batches, sink_batch

    assert connect.api.SourceBatch is batches.SourceBatch
    assert connect.api.SinkBatch is sink_batch.SinkBatch
    assert connect.api.ARROW_TIMESTAMP == arrow.TIMESTAMP
    for name in ("arrow_type", "schema_of", "batch_from_values", "to_connect", "file_batch"):
        assert getattr(connect.api, name) is getattr(arrow, name), name
    from connect.api import json_arrow_read

    assert connect.api.JsonArrowReader is json_arrow_read.JsonArrowReader
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = connect.api.nothing


def test_trusted_struct_skips_validation_and_keeps_the_list() -> None:
    schema = Schema.struct([("n", INT32_SCHEMA), ("s", OPTIONAL_STRING_SCHEMA)])
    values = [7, None]
    struct = Struct.trusted(schema, values)
    assert struct.values() is values  # no copy on the way in or out
    assert struct == Struct(schema, {"n": 7})
    assert struct.get("n") == 7 and struct.get("s") is None
    unchecked = Struct.trusted(schema, ["not an int", None])  # on purpose: not checked
    with pytest.raises(SchemaError):
        unchecked.validate()
