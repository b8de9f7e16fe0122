"""Config providers: `${provider:path:key}` placeholders in connector configs, resolved
only when a connector or task starts. Stored and REST-visible configs keep the
placeholders, so a secret never reaches the config topic or an API response.

Worker config, as in Kafka:

    config.providers=file,env,directory
    config.providers.file.class=org.apache.kafka.common.config.provider.FileConfigProvider
    config.providers.file.param.allowed.paths=/etc/secrets

Providers: FileConfigProvider (`${file:/path/creds.properties:password}`, a Java-style
properties file), DirectoryConfigProvider (`${directory:/run/secrets:db_password}`, the
content of a file in a directory), EnvVarConfigProvider (`${env:VAR}` or
`${env::VAR}`; param `allowlist.pattern`). `allowed.paths` limits what file-based
providers may read.
"""

from __future__ import annotations

import os
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path

from connect import properties
from connect.api import ConfigError

__all__ = [
    "ConfigProvider",
    "ConfigProviders",
    "DirectoryConfigProvider",
    "EnvVarConfigProvider",
    "FileConfigProvider",
]

_PLACEHOLDER = re.compile(r"\$\{([^}:]+):(?:([^}]*):)?([^}:]*)\}")


class ConfigProvider(ABC):
    def configure(self, params: Mapping[str, str]) -> None:
        allowed = params.get("allowed.paths", "")
        self.allowed = [Path(p.strip()).resolve() for p in allowed.split(",") if p.strip()]

    def _check_path(self, path: str) -> Path:
        resolved = Path(path).resolve()
        if self.allowed and not any(resolved.is_relative_to(a) for a in self.allowed):
            raise ConfigError("config.providers", path, "path is not in allowed.paths")
        return resolved

    @abstractmethod
    def get(self, path: str, key: str) -> str | None: ...


def _read_properties(path: Path) -> dict[str, str]:
    """A Java properties file, by `Properties.load`'s rules as Kafka's provider reads
    it (connect.properties): a secret may hold escapes or run over two lines."""
    try:
        return properties.parse(properties.decode(path.read_bytes()))
    except properties.PropertiesError as exc:
        raise ConfigError("config.providers", str(path), str(exc)) from None


class FileConfigProvider(ConfigProvider):
    def get(self, path: str, key: str) -> str | None:
        try:
            return _read_properties(self._check_path(path)).get(key)
        except OSError as exc:
            raise ConfigError("config.providers", path, f"cannot read: {exc.strerror}") from None


class DirectoryConfigProvider(ConfigProvider):
    def get(self, path: str, key: str) -> str | None:
        directory = self._check_path(path)
        target = (directory / key).resolve()
        if target.parent != directory:
            raise ConfigError("config.providers", key, "must name a file inside the directory")
        try:
            return target.read_text()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise ConfigError("config.providers", key, f"cannot read: {exc.strerror}") from None


class EnvVarConfigProvider(ConfigProvider):
    def configure(self, params: Mapping[str, str]) -> None:
        super().configure(params)
        self.allowlist = re.compile(params.get("allowlist.pattern", ".*"))

    def get(self, path: str, key: str) -> str | None:
        if not self.allowlist.fullmatch(key):
            return None
        return os.environ.get(key)


_CLASSES: dict[str, type[ConfigProvider]] = {
    "org.apache.kafka.common.config.provider.FileConfigProvider": FileConfigProvider,
    "org.apache.kafka.common.config.provider.DirectoryConfigProvider": DirectoryConfigProvider,
    "org.apache.kafka.common.config.provider.EnvVarConfigProvider": EnvVarConfigProvider,
    "FileConfigProvider": FileConfigProvider,
    "DirectoryConfigProvider": DirectoryConfigProvider,
    "EnvVarConfigProvider": EnvVarConfigProvider,
}


class ConfigProviders:
    """The providers a worker config declares, and the placeholder resolver."""

    def __init__(self, providers: Mapping[str, ConfigProvider] | None = None) -> None:
        self.providers = dict(providers or {})

    @staticmethod
    def from_worker_config(config: Mapping[str, str]) -> ConfigProviders:
        raw = config.get("config.providers") or []
        items = raw if isinstance(raw, list) else str(raw).split(",")
        names = [str(n).strip() for n in items if str(n).strip()]
        providers: dict[str, ConfigProvider] = {}
        for name in names:
            key = f"config.providers.{name}.class"
            class_name = config.get(key)
            if not class_name:
                raise ConfigError(key, None, f"config provider {name} needs a class")
            cls = _CLASSES.get(class_name)
            if cls is None:
                raise ConfigError(key, class_name, "unknown config provider class")
            prefix = f"config.providers.{name}.param."
            provider = cls()
            provider.configure(
                {k[len(prefix) :]: v for k, v in config.items() if k.startswith(prefix)}
            )
            providers[name] = provider
        return ConfigProviders(providers)

    def resolve(self, props: Mapping[str, str]) -> dict[str, str]:
        """A copy with every known `${provider:path:key}` replaced; unknown providers
        and missing keys are left as they are (as Kafka does)."""
        if not self.providers:
            return dict(props)
        return {k: self._resolve_value(v) if isinstance(v, str) else v for k, v in props.items()}

    def _resolve_value(self, value: str) -> str:
        def substitute(match: re.Match[str]) -> str:
            provider = self.providers.get(match.group(1))
            if provider is None:
                return match.group(0)
            resolved = provider.get(match.group(2) or "", match.group(3))
            return match.group(0) if resolved is None else resolved

        return _PLACEHOLDER.sub(substitute, value)
