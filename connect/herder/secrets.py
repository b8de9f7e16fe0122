"""PASSWORD-typed config values never leave the worker through the REST API.

Kafka Connect returns stored configs as they are, passwords included; we mask every
key a plugin declares as PASSWORD (`[hidden]`, as validate shows it) in connector
info, configs and task configs. Config-provider placeholders (`${file:…}`) are not
secrets and stay visible. So that a script can GET a config, change one key and PUT
it back, a PASSWORD key that comes back as `[hidden]` keeps its stored value."""

from __future__ import annotations

from collections.abc import Mapping

from connect.api import ConfigType, Password
from connect.plugins import PluginKind, Plugins

__all__ = ["mask_secrets", "password_keys", "restore_secrets"]


def _placeholder(value: str) -> bool:
    return "${" in value


def password_keys(plugins: Plugins, config: Mapping[str, str]) -> set[str]:
    """Keys of `config` that its connector, transforms or predicates type as PASSWORD."""
    keys: set[str] = set()
    try:
        connector = plugins.resolve_connector(config)()
        keys |= {
            k.name for k in connector.config().keys().values() if k.type is ConfigType.PASSWORD
        }
    except Exception:  # an unknown class has no declared secrets; validation reports it
        pass
    for kind, list_key in (
        (PluginKind.TRANSFORM, "transforms"),
        (PluginKind.PREDICATE, "predicates"),
    ):
        for alias in (a.strip() for a in str(config.get(list_key, "")).split(",")):
            if not alias:
                continue
            prefix = f"{list_key}.{alias}."
            try:
                plugin = plugins.resolve(kind, config.get(prefix + "type", ""))()
            except Exception:
                continue
            keys |= {
                prefix + k.name
                for k in plugin.config().keys().values()
                if k.type is ConfigType.PASSWORD
            }
    return keys


def mask_secrets(config: Mapping[str, str], keys: set[str]) -> dict[str, str]:
    return {
        k: Password.HIDDEN if k in keys and v is not None and not _placeholder(v) else v
        for k, v in config.items()
    }


def restore_secrets(
    incoming: Mapping[str, str], stored: Mapping[str, str], keys: set[str]
) -> dict[str, str]:
    return {
        k: stored[k] if k in keys and v == Password.HIDDEN and k in stored else v
        for k, v in incoming.items()
    }
