"""Compatibility configs and modes, global and per subject: reading the effective
value, and writing changes through the `_schemas` store.

A subject's own setting overrides the global one, which overrides the default
(BACKWARD, READWRITE). Confluent answers a missing subject-level setting with 40408
(config) or 40409 (mode) unless `defaultToGlobal=true`; deleting one that is not there
is 40401. In READONLY mode config updates are refused (42205) as writes are; mode
updates are not, or READONLY could never be left."""

from __future__ import annotations

from connect.registry.core.errors import (
    OperationNotPermittedError,
    SubjectConfigNotFoundError,
    SubjectModeNotFoundError,
    SubjectNotFoundError,
)
from connect.registry.core.levels import DEFAULT_LEVEL, parse_level, parse_mode
from connect.registry.core.records import config_key, encode_config, encode_mode, mode_key
from connect.registry.core.state import RegistryState, SubjectConfig
from connect.registry.core.store import SchemaStore

__all__ = ["Settings"]

READWRITE = "READWRITE"


class Settings:
    """Configs and modes over `store` (see the module docstring)."""

    def __init__(
        self, state: RegistryState, store: SchemaStore, *, default_level: str = DEFAULT_LEVEL
    ) -> None:
        self.state = state
        self.store = store
        self.default_level = parse_level(default_level)

    # ------------------------------------------------------------- effective

    def level(self, subject: str | None) -> str:
        config = self.state.configs.get(subject) if subject is not None else None
        if config is not None:
            return config.level
        if self.state.global_config is not None:
            return self.state.global_config.level
        return self.default_level

    def normalize(self, subject: str | None) -> bool:
        for config in (
            self.state.configs.get(subject) if subject is not None else None,
            self.state.global_config,
        ):
            if config is not None and config.normalize is not None:
                return config.normalize
        return False

    def mode(self, subject: str | None) -> str:
        if subject is not None and subject in self.state.modes:
            return self.state.modes[subject]
        return self.state.global_mode or READWRITE

    def require_writable(self, subject: str | None) -> None:
        """42205 when the subject's effective mode is READONLY."""
        if self.mode(subject) == "READONLY":
            what = f"Subject {subject}" if subject else "The registry"
            raise OperationNotPermittedError(f"{what} is in read-only mode")

    # ---------------------------------------------------------------- config

    def get_config(self, subject: str | None, *, default_to_global: bool = False) -> SubjectConfig:
        if subject is None:
            return self.state.global_config or SubjectConfig(self.default_level)
        config = self.state.configs.get(subject)
        if config is not None:
            return config
        if default_to_global:
            return SubjectConfig(self.level(subject), self.normalize(subject) or None)
        raise SubjectConfigNotFoundError(subject)

    def set_config(
        self, subject: str | None, level: object, *, normalize: bool | None = None
    ) -> SubjectConfig:
        config = SubjectConfig(parse_level(level), normalize)
        with self.store.writing():
            self.require_writable(subject)
            self.store.append([(config_key(subject), encode_config(config.level, normalize))])
        return config

    def delete_config(self, subject: str | None) -> SubjectConfig:
        """Remove a config; the answer is the one removed (global: the one replaced)."""
        with self.store.writing():
            self.require_writable(subject)
            if subject is None:
                previous = self.get_config(None)
            else:
                found = self.state.configs.get(subject)
                if found is None:
                    raise SubjectNotFoundError(subject)
                previous = found
            self.store.append([(config_key(subject), None)])
        return previous

    # ------------------------------------------------------------------ mode

    def get_mode(self, subject: str | None, *, default_to_global: bool = False) -> str:
        if subject is None or subject in self.state.modes or default_to_global:
            return self.mode(subject)
        raise SubjectModeNotFoundError(subject)

    def set_mode(self, subject: str | None, mode: object, *, force: bool = False) -> str:
        """Switching to IMPORT needs a scope without live subjects, unless `force`."""
        value = parse_mode(mode)
        with self.store.writing():
            if value == "IMPORT" and not force:
                scope = [subject] if subject is not None else list(self.state.subjects)
                if any(self.state.live_versions(s) for s in scope):
                    raise OperationNotPermittedError(
                        "Cannot import since found existing subjects"
                        if subject is None
                        else f"Cannot import since subject {subject!r} has live versions"
                    )
            self.store.append([(mode_key(subject), encode_mode(value))])
        return value

    def delete_mode(self, subject: str | None) -> str:
        with self.store.writing():
            previous = self.mode(subject)
            if subject is not None and subject not in self.state.modes:
                raise SubjectNotFoundError(subject)
            self.store.append([(mode_key(subject), None)])
        return previous
