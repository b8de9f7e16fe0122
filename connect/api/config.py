"""Configuration as data: each plugin declares its keys once, in a `ConfigDef`.

A key has a name, a type, a default (or none: required), a validator, an importance,
documentation, and a group for display. Two entry points use the same declaration:

- `parse(props)` converts the string (or JSON) values to typed values and fails fast
  with a `ConfigError` naming the first bad key;
- `validate(props)` returns one `ConfigValue` per key with its errors, for the REST
  `config/validate` endpoint (Kafka's ConfigInfos shape is built from these).

PASSWORD values are wrapped in `Password`, whose str/repr is `[hidden]`, so a secret
never leaks through logs or error messages by accident.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from connect.api.errors import ConfigError

__all__ = [
    "NO_DEFAULT",
    "ConfigDef",
    "ConfigKey",
    "ConfigType",
    "ConfigValue",
    "Importance",
    "Password",
    "Validator",
    "at_least",
    "between",
    "non_empty_string",
    "one_of",
    "valid_list",
]


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()


class ConfigType(StrEnum):
    BOOLEAN = "BOOLEAN"
    STRING = "STRING"
    INT = "INT"
    SHORT = "SHORT"
    LONG = "LONG"
    DOUBLE = "DOUBLE"
    LIST = "LIST"
    CLASS = "CLASS"
    PASSWORD = "PASSWORD"


class Importance(StrEnum):
    HIGH = "HIGH"
    MEDIUM = "MEDIUM"
    LOW = "LOW"


class Password:
    """A secret config value: prints as `[hidden]`; `.value` holds the secret."""

    HIDDEN = "[hidden]"
    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __str__(self) -> str:
        return self.HIDDEN

    __repr__ = __str__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Password) and other.value == self.value

    def __hash__(self) -> int:
        return hash(self.value)


#: A validator gets (name, parsed value) and raises ConfigError when it is wrong.
Validator = Callable[[str, Any], None]


def at_least(minimum: float) -> Validator:
    def check(name: str, value: Any) -> None:
        if value is not None and value < minimum:
            raise ConfigError(name, value, f"Value must be at least {minimum}")

    check.__doc__ = f"[{minimum},...]"
    return check


def between(minimum: float, maximum: float) -> Validator:
    def check(name: str, value: Any) -> None:
        if value is not None and not minimum <= value <= maximum:
            raise ConfigError(name, value, f"Value must be between {minimum} and {maximum}")

    check.__doc__ = f"[{minimum},...,{maximum}]"
    return check


def one_of(*allowed: str, case_sensitive: bool = False) -> Validator:
    folded = set(allowed) if case_sensitive else {a.lower() for a in allowed}

    def check(name: str, value: Any) -> None:
        if value is None:
            return
        text = value if case_sensitive else str(value).lower()
        if text not in folded:
            raise ConfigError(name, value, f"String must be one of: {', '.join(allowed)}")

    check.__doc__ = "[" + ", ".join(allowed) + "]"
    return check


def valid_list(*allowed: str) -> Validator:
    def check(name: str, value: Any) -> None:
        for item in value or []:
            if item not in allowed:
                raise ConfigError(
                    name, value, f"Invalid value {item}; must be one of {', '.join(allowed)}"
                )

    check.__doc__ = "[" + ", ".join(allowed) + "]"
    return check


def non_empty_string(name: str, value: Any) -> None:
    if value is not None and not str(value).strip():
        raise ConfigError(name, value, "String may not be empty")


non_empty_string.__doc__ = "non-empty string"


@dataclass(frozen=True, slots=True)
class ConfigKey:
    name: str
    type: ConfigType
    default: Any = NO_DEFAULT
    validator: Validator | None = None
    importance: Importance = Importance.MEDIUM
    documentation: str = ""
    group: str | None = None
    order_in_group: int = -1
    display_name: str | None = None
    dependents: tuple[str, ...] = ()
    internal: bool = False

    @property
    def required(self) -> bool:
        return self.default is NO_DEFAULT


@dataclass(slots=True)
class ConfigValue:
    """One key's validation result (Kafka's ConfigValue)."""

    name: str
    value: Any = None
    recommended_values: list[Any] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    visible: bool = True


def _parse_value(key: ConfigKey, value: Any) -> Any:
    """Convert a raw value (usually a string) to the key's type."""
    name, t = key.name, key.type
    if value is None:
        return None
    if isinstance(value, str) and t not in (ConfigType.STRING, ConfigType.PASSWORD):
        value = value.strip()
    try:
        if t is ConfigType.BOOLEAN:
            if isinstance(value, bool):
                return value
            text = str(value).lower()
            if text in ("true", "false"):
                return text == "true"
            raise ConfigError(name, value, "Expected value to be either true or false")
        if t in (ConfigType.INT, ConfigType.SHORT, ConfigType.LONG):
            if isinstance(value, (bool, float)):
                raise ValueError
            number = int(value)
            limit = {ConfigType.SHORT: 2**15, ConfigType.INT: 2**31, ConfigType.LONG: 2**63}[t]
            if not -limit <= number < limit:
                raise ConfigError(name, value, f"Value out of range for {t.lower()}")
            return number
        if t is ConfigType.DOUBLE:
            if isinstance(value, bool):
                raise ValueError
            return float(value)
        if t is ConfigType.LIST:
            if isinstance(value, str):
                return [item.strip() for item in value.split(",") if item.strip()]
            if isinstance(value, (list, tuple)):
                return [str(v).strip() for v in value]
            raise ValueError
        if t is ConfigType.PASSWORD:
            return value if isinstance(value, Password) else Password(str(value))
        if t in (ConfigType.STRING, ConfigType.CLASS):
            if not isinstance(value, str):
                if isinstance(value, type):
                    return f"{value.__module__}.{value.__qualname__}"
                raise ValueError
            return value
    except (TypeError, ValueError):
        shown = Password.HIDDEN if t is ConfigType.PASSWORD else value
        raise ConfigError(name, shown, f"Expected a value of type {t}") from None
    raise ConfigError(name, value, f"unknown type {t}")


class ConfigDef:
    """The declared keys of one plugin (see the module docstring)."""

    def __init__(self, keys: Iterable[ConfigKey] = ()) -> None:
        self._keys: dict[str, ConfigKey] = {}
        for key in keys:
            self._add(key)

    def _add(self, key: ConfigKey) -> None:
        if key.name in self._keys:
            raise ValueError(f"configuration {key.name} is defined twice")
        if key.default is not NO_DEFAULT and key.default is not None:
            parsed = _parse_value(key, key.default)
            if key.validator is not None:
                key.validator(key.name, parsed)
        self._keys[key.name] = key

    def define(
        self,
        name: str,
        type: ConfigType,
        default: Any = NO_DEFAULT,
        validator: Validator | None = None,
        importance: Importance = Importance.MEDIUM,
        documentation: str = "",
        *,
        group: str | None = None,
        order_in_group: int = -1,
        display_name: str | None = None,
        dependents: Sequence[str] = (),
        internal: bool = False,
    ) -> ConfigDef:
        """Declare a key; returns self so definitions chain."""
        self._add(
            ConfigKey(
                name,
                type,
                default,
                validator,
                importance,
                documentation,
                group,
                order_in_group,
                display_name,
                tuple(dependents),
                internal,
            )
        )
        return self

    def merged(self, other: ConfigDef) -> ConfigDef:
        """A new ConfigDef with the keys of both (`other` may not redefine a key)."""
        out = ConfigDef(self._keys.values())
        for key in other.keys().values():
            out._add(key)
        return out

    def keys(self) -> dict[str, ConfigKey]:
        return dict(self._keys)

    def names(self) -> list[str]:
        return list(self._keys)

    def __contains__(self, name: object) -> bool:
        return name in self._keys

    def parse(self, props: Mapping[str, Any]) -> dict[str, Any]:
        """Typed values for every declared key (defaults filled in). Raises
        ConfigError for the first missing, ill-typed or invalid key."""
        out: dict[str, Any] = {}
        for name, key in self._keys.items():
            if name in props:
                value = _parse_value(key, props[name])
            elif key.required:
                raise ConfigError(name, None, key.documentation or "no default value")
            else:
                value = _parse_value(key, key.default)
            if key.validator is not None:
                key.validator(name, value)
            out[name] = value
        return out

    def validate(self, props: Mapping[str, Any]) -> list[ConfigValue]:
        """One result per declared key; errors are collected, never raised."""
        results = []
        for name, key in self._keys.items():
            result = ConfigValue(name)
            raw = props.get(name, None if key.required else key.default)
            try:
                if name not in props and key.required:
                    raise ConfigError(
                        name,
                        None,
                        f'Missing required configuration "{name}" which has no default value.',
                    )
                value = _parse_value(key, raw)
                result.value = value
                if key.validator is not None:
                    key.validator(name, value)
            except ConfigError as exc:
                result.errors.append(
                    str(exc)
                    if exc.reason is None or exc.value is not None
                    else f'Missing required configuration "{name}" which has no default value.'
                )
                result.value = raw if key.type is not ConfigType.PASSWORD else Password.HIDDEN
            if isinstance(result.value, Password):
                result.value = Password.HIDDEN
            results.append(result)
        return results
