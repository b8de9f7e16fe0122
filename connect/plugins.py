"""Plugin discovery: from a name in a config to a class.

A name may be:
- a dotted Python path, `package.module.ClassName` (or `package.module:ClassName`);
- a short alias, `FileStreamSource`;
- the Kafka Connect (or Confluent) class name of the equivalent plugin,
  `org.apache.kafka.connect.file.FileStreamSourceConnector`, so configs move over as
  they are.

Aliases come from the packages that ship plugins (each has an `ALIASES` dict) and from
third-party distributions through the entry-point groups `tributary.connectors`,
`tributary.converters`, `tributary.transforms` and `tributary.predicates` (entry-point
name → object reference). The runtime never imports a connector by name in code.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from connect.api import (
    ConfigError,
    Connector,
    Converter,
    HeaderConverter,
    NotFoundError,
    Predicate,
    SinkConnector,
    SourceConnector,
    Task,
    Transformation,
)

__all__ = ["PluginInfo", "PluginKind", "Plugins"]


class PluginKind(StrEnum):
    CONNECTOR = "connector"
    CONVERTER = "converter"
    HEADER_CONVERTER = "header_converter"
    TRANSFORM = "transform"
    PREDICATE = "predicate"


_BASES: dict[PluginKind, tuple[type, ...]] = {
    PluginKind.CONNECTOR: (Connector,),
    PluginKind.CONVERTER: (Converter, HeaderConverter),
    PluginKind.HEADER_CONVERTER: (HeaderConverter, Converter),
    PluginKind.TRANSFORM: (Transformation,),
    PluginKind.PREDICATE: (Predicate,),
}
_GROUPS: dict[PluginKind, str] = {
    PluginKind.CONNECTOR: "tributary.connectors",
    PluginKind.CONVERTER: "tributary.converters",
    PluginKind.HEADER_CONVERTER: "tributary.converters",
    PluginKind.TRANSFORM: "tributary.transforms",
    PluginKind.PREDICATE: "tributary.predicates",
}
# Packages of our own that ship plugins of each kind, each with an ALIASES dict.
_BUILTIN: dict[PluginKind, tuple[str, ...]] = {
    PluginKind.CONNECTOR: ("connectors",),
    PluginKind.CONVERTER: ("connect.converters",),
    PluginKind.HEADER_CONVERTER: ("connect.converters",),
    PluginKind.TRANSFORM: ("connect.transforms",),
    PluginKind.PREDICATE: ("connect.transforms",),
}


@dataclass(frozen=True, slots=True)
class PluginInfo:
    """A connector plugin as `/connector-plugins` lists it."""

    class_name: str
    type: str
    version: str
    cls: type


class Plugins:
    """Resolves plugin names; aliases are loaded once, lazily, per kind."""

    def __init__(self) -> None:
        self._aliases: dict[PluginKind, dict[str, object]] = {}
        self._lock = threading.Lock()

    def _load_aliases(self, kind: PluginKind) -> dict[str, object]:
        with self._lock:
            cached = self._aliases.get(kind)
            if cached is not None:
                return cached
            aliases: dict[str, object] = {}
            for package in _BUILTIN[kind]:
                try:
                    module = importlib.import_module(package)
                except ImportError:
                    continue
                aliases.update(getattr(module, "ALIASES", {}))
            for entry in importlib.metadata.entry_points(group=_GROUPS[kind]):
                aliases.setdefault(entry.name, entry)
            self._aliases[kind] = aliases
            return aliases

    def resolve(self, kind: PluginKind | str, name: str, *, key: str = "class") -> type:
        """The class for `name`; ConfigError (naming `key`) when it cannot be found
        or is not a plugin of this kind."""
        kind = PluginKind(kind)
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(key, name, f"a {kind} class name is required")
        name = name.strip()
        target = self._load_aliases(kind).get(name)
        if target is None:
            target = self._import(name, key)
        elif isinstance(target, str):  # "module:Class", imported only when used
            target = self._import(target, key)
        elif isinstance(target, importlib.metadata.EntryPoint):
            try:
                target = target.load()
            except Exception as exc:
                raise ConfigError(key, name, f"could not load plugin: {exc}") from exc
        if not inspect.isclass(target) or not issubclass(target, _BASES[kind]):
            raise ConfigError(key, name, f"{name} is not a {kind.replace('_', ' ')} class")
        return target

    def _import(self, name: str, key: str) -> object:
        module_name, sep, attr = name.partition(":")
        if not sep:
            module_name, _, attr = name.rpartition(".")
        if not module_name or not attr:
            raise ConfigError(key, name, "Class " + name + " could not be found.")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            if _is_missing(exc, module_name):
                raise ConfigError(key, name, f"Class {name} could not be found.") from None
            # The module is there but its own import failed (a dependency it needs is
            # not installed, a bug): say so, or the user hunts for a typo that is not.
            raise ConfigError(
                key, name, f"Class {name} could not be loaded: {type(exc).__name__}: {exc}"
            ) from exc
        target: object = module
        for part in attr.split("."):
            target = getattr(target, part, None)
            if target is None:
                raise ConfigError(key, name, f"Class {name} could not be found.")
        return target

    def resolve_task(self, name: str) -> type[Task]:
        """A task class by dotted path (task configs carry `task.class`)."""
        target = self._import(name, "task.class")
        if not inspect.isclass(target) or not issubclass(target, Task):
            raise ConfigError("task.class", name, f"{name} is not a Task class")
        return target

    def aliases(self, kind: PluginKind | str) -> dict[str, object]:
        """Every alias of a kind (for listing plugins)."""
        return dict(self._load_aliases(PluginKind(kind)))

    def connector_plugins(self) -> list[PluginInfo]:
        """Every connector class known by alias or entry point, once each."""
        seen: dict[type, PluginInfo] = {}
        for name, target in self._load_aliases(PluginKind.CONNECTOR).items():
            try:
                cls = self.resolve(PluginKind.CONNECTOR, name)
            except ConfigError:
                continue
            if cls in seen or inspect.isabstract(cls):
                continue
            ptype = (
                "source"
                if issubclass(cls, SourceConnector)
                else "sink"
                if issubclass(cls, SinkConnector)
                else "unknown"
            )
            version = getattr(cls, "VERSION", "0.1.0")
            seen[cls] = PluginInfo(f"{cls.__module__}.{cls.__qualname__}", ptype, version, cls)
            del target
        return sorted(seen.values(), key=lambda p: p.class_name)

    def resolve_connector(self, config: Mapping[str, str]) -> type[Connector]:
        name = config.get("connector.class")
        if name is None:
            raise ConfigError(
                "connector.class",
                None,
                'Missing required configuration "connector.class" which has no default value.',
            )
        try:
            return self.resolve(PluginKind.CONNECTOR, name, key="connector.class")
        except ConfigError as exc:
            reason = exc.reason or ""
            failed = "could not be loaded" in reason or "could not load plugin" in reason
            why = f" ({reason})" if failed else ""
            raise NotFoundError(
                "Failed to find any class that implements Connector and which name matches "
                f"{name}{why}"
            ) from exc


def _is_missing(exc: ImportError, module_name: str) -> bool:
    """Whether `exc` says `module_name` itself (or a package above it) does not exist,
    as opposed to the module existing and failing in its own imports."""
    missing = getattr(exc, "name", None)
    if not isinstance(exc, ModuleNotFoundError) or not missing:
        return False
    return module_name == missing or module_name.startswith(missing + ".")
