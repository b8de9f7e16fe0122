"""What the plugins of this worker are and which keys each takes, for the REST API's
`/connector-plugins` endpoints.

Why a module of its own: the answers depend on the plugin registry only
(connect.plugins), never on the herder's stores, so they are functions of it; the
herder (connect.herder.base) passes its registry in.
"""

from __future__ import annotations

from typing import Any

from connect.api import ConfigError, NotFoundError, SinkConnector, SourceConnector
from connect.herder.validation import config_key_info
from connect.plugins import PluginKind, Plugins

__all__ = ["connector_plugins", "plugin_config"]


def connector_plugins(
    plugins: Plugins, *, connectors_only: bool, version: str
) -> list[dict[str, str]]:
    """GET /connector-plugins: every connector plugin, and with `connectors_only` false
    every converter, header converter, transform and predicate too (`version`: the
    version of a plugin class that declares none)."""
    out = [
        {"class": p.class_name, "type": p.type, "version": p.version}
        for p in plugins.connector_plugins()
    ]
    if connectors_only:
        return out
    kinds = (
        (PluginKind.CONVERTER, "converter"),
        (PluginKind.HEADER_CONVERTER, "header_converter"),
        (PluginKind.TRANSFORM, "transformation"),
        (PluginKind.PREDICATE, "predicate"),
    )
    for kind, label in kinds:
        seen: set[type] = set()
        for alias in sorted(plugins.aliases(kind)):
            try:
                cls = plugins.resolve(kind, alias)
            except ConfigError:
                continue
            if cls in seen:
                continue
            seen.add(cls)
            out.append(
                {
                    "class": f"{cls.__module__}.{cls.__qualname__}",
                    "type": label,
                    "version": getattr(cls, "VERSION", version),
                }
            )
    return out


def plugin_config(plugins: Plugins, plugin: str) -> list[dict[str, Any]]:
    """GET /connector-plugins/{plugin}/config: the plugin's keys; a connector's with the
    keys every connector config has before its own."""
    for kind in PluginKind:
        try:
            cls = plugins.resolve(kind, plugin)
        except ConfigError:
            continue
        instance = cls()
        keys = instance.config().keys()
        if issubclass(cls, (SourceConnector, SinkConnector)):
            from connect.worker.connector_config import (
                SINK_CONNECTOR_CONFIG,
                SOURCE_CONNECTOR_CONFIG,
            )

            base = (
                SINK_CONNECTOR_CONFIG if issubclass(cls, SinkConnector) else SOURCE_CONNECTOR_CONFIG
            ).keys()
            keys = {**base, **keys}
        return [config_key_info(k) for k in keys.values()]
    raise NotFoundError(f"Unknown plugin {plugin}.")
