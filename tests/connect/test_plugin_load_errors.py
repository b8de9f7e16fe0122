"""A plugin whose module exists but fails to import says why, not "could not be found".

Found when a connector module failed in its own imports: the worker answered "Failed to
find any class that implements Connector and which name matches …", and the user looked
for a typo in `connector.class` that was not there.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from connect.api import ConfigError, NotFoundError
from connect.plugins import PluginKind, Plugins


@pytest.fixture
def plugin_dir(tmp_path: Path) -> Iterator[Path]:
    sys.path.insert(0, str(tmp_path))
    yield tmp_path
    sys.path.remove(str(tmp_path))
    for name in [m for m in sys.modules if m.startswith("tributary_test_plugin")]:
        del sys.modules[name]


def test_a_module_whose_dependency_is_missing_names_the_dependency(plugin_dir: Path) -> None:
    (plugin_dir / "tributary_test_plugin_dep.py").write_text(
        "import tributary_no_such_dependency  # noqa\n"
    )
    with pytest.raises(NotFoundError) as caught:
        Plugins().resolve_connector(
            {"connector.class": "tributary_test_plugin_dep.SomeSourceConnector"}
        )
    message = str(caught.value)
    assert "matches tributary_test_plugin_dep.SomeSourceConnector" in message
    assert "could not be loaded" in message
    assert "tributary_no_such_dependency" in message


def test_a_module_that_raises_on_import_says_so(plugin_dir: Path) -> None:
    module = plugin_dir / "tributary_test_plugin_bug.py"
    module.write_text("raise ImportError('half-installed')\n")
    with pytest.raises(ConfigError) as caught:
        Plugins().resolve(PluginKind.TRANSFORM, "tributary_test_plugin_bug.Thing")
    assert "could not be loaded: ImportError: half-installed" in str(caught.value)


def test_a_name_that_is_not_there_is_still_not_found() -> None:
    for name in ("tributary_no_such_module.Connector", "connectors.no_such_module.Connector"):
        with pytest.raises(NotFoundError) as caught:
            Plugins().resolve_connector({"connector.class": name})
        assert str(caught.value) == (
            "Failed to find any class that implements Connector and which name matches " + name
        )
