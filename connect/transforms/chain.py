"""A connector's chain of transforms, built from its config the way Kafka reads it:

    transforms=route,mask
    transforms.route.type=RegexRouter                  (alias, dotted path or Kafka class)
    transforms.route.regex=(.*)-raw                    (settings, prefix stripped)
    transforms.route.predicate=isOrders                (optional)
    transforms.route.negate=true                       (optional, default false)
    predicates=isOrders
    predicates.isOrders.type=TopicNameMatches
    predicates.isOrders.pattern=orders.*

Building the chain parses every transform's and predicate's ConfigDef, so a bad value
is refused before the connector starts, with a ConfigError naming the full key
(`transforms.route.regex`). Applying it runs the transforms in order; a transform
with a predicate runs only when the predicate's result differs from `negate`; a
transform that returns None drops the record and ends the chain.

The runtime applies the chain through its error handler one transform at a time
(`stages`, run by `RetryWithTolerance.transform`), as Kafka's TransformationChain
does: a failure is retried, logged and dead-lettered as the failure of that transform,
named by its class as the config gave it (`org.apache.kafka.connect.transforms.Cast$Value`),
and only it runs again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from connect.api import (
    ConfigDef,
    ConfigError,
    ConfigType,
    ConnectRecord,
    Importance,
    Predicate,
    Transformation,
)

__all__ = ["Resolver", "StageFunction", "TransformChain", "transform_config_defs"]

#: `Plugins().resolve`: (kind, class name, key=config key) → class, or ConfigError.
Resolver = Callable[..., type]
#: One transform with its predicate: the record after it, or None when it dropped it.
StageFunction = Callable[[ConnectRecord], ConnectRecord | None]

TRANSFORMS = "transforms"
PREDICATES = "predicates"
_TYPE, _PREDICATE, _NEGATE = "type", "predicate", "negate"
_CHAIN_KEYS = frozenset({_TYPE, _PREDICATE, _NEGATE})


def _aliases(props: Mapping[str, Any], key: str) -> list[str]:
    """The aliases listed under `key`; a repeated alias is a ConfigError."""
    raw = props.get(key, "")
    items = raw if isinstance(raw, (list, tuple)) else str(raw or "").split(",")
    aliases = [str(a).strip() for a in items if str(a).strip()]
    if len(set(aliases)) != len(aliases):
        raise ConfigError(key, ",".join(aliases), "Duplicate alias provided.")
    return aliases


def _settings(props: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """The keys under `prefix`, prefix stripped, without the chain's own keys."""
    return {
        k[len(prefix) :]: v
        for k, v in props.items()
        if k.startswith(prefix) and k[len(prefix) :] not in _CHAIN_KEYS
    }


def _rekeyed(exc: ConfigError, prefix: str) -> ConfigError:
    """`exc` with its key as it appears in the connector config."""
    name = exc.name if exc.name.startswith(prefix) else prefix + exc.name
    reason = exc.reason if exc.reason is not None else str(exc)
    return ConfigError(name, exc.value, reason)


def _instantiate(
    resolver: Resolver, kind: str, props: Mapping[str, Any], prefix: str, what: str
) -> Any:
    """Resolve, create and configure the plugin configured under `prefix`."""
    type_key = prefix + _TYPE
    class_name = props.get(type_key)
    if class_name is None or not str(class_name).strip():
        raise ConfigError(type_key, None, f"no class given for {what}")
    cls = resolver(kind, str(class_name), key=type_key)
    plugin = cls()
    settings = _settings(props, prefix)
    try:
        plugin.config().parse(settings)  # every declared key, checked before configure
        plugin.configure(settings)
    except ConfigError as exc:
        raise _rekeyed(exc, prefix) from None
    return plugin


class TransformChain:
    """Transforms applied in order, each optionally guarded by a predicate."""

    __slots__ = ("_predicates", "_stages", "aliases", "classes", "stages")

    def __init__(
        self,
        stages: list[tuple[str, Transformation, Predicate | None, bool]],
        predicates: Mapping[str, Predicate] | None = None,
        *,
        classes: Sequence[str] | None = None,
    ) -> None:
        self.aliases = tuple(alias for alias, *_ in stages)
        #: Each transform's class as its config named it (its `transforms.<alias>.type`),
        #: which errors report; the Python class path when built without a config.
        self.classes = tuple(classes or (_class_path(t) for _, t, _, _ in stages))
        if len(self.classes) != len(stages):
            raise ValueError("one class name per stage")
        self._stages = tuple((t, p, n) for _, t, p, n in stages)
        self._predicates = dict(predicates or {})
        #: (configured class, stage function) per transform, in order: what the error
        #: handler runs one at a time.
        self.stages: tuple[tuple[str, StageFunction], ...] = tuple(
            (name, _stage(t, p, n))
            for name, (t, p, n) in zip(self.classes, self._stages, strict=True)
        )

    @classmethod
    def from_config(cls, props: Mapping[str, Any], resolver: Resolver) -> TransformChain:
        """The chain a connector config describes (see the module docstring); a
        ConfigError naming the full key when any part of it is wrong."""
        predicate_aliases = _aliases(props, PREDICATES)
        predicates: dict[str, Predicate] = {}
        stages: list[tuple[str, Transformation, Predicate | None, bool]] = []
        classes: list[str] = []
        try:
            for alias in predicate_aliases:
                predicates[alias] = _instantiate(
                    resolver, "predicate", props, f"{PREDICATES}.{alias}.", f"predicate {alias!r}"
                )
            for alias in _aliases(props, TRANSFORMS):
                prefix = f"{TRANSFORMS}.{alias}."
                predicate, negate = _guard(props, prefix, predicates)
                transform = _instantiate(
                    resolver, "transform", props, prefix, f"transformation {alias!r}"
                )
                stages.append((alias, transform, predicate, negate))
                classes.append(str(props[prefix + _TYPE]).strip())
        except BaseException:
            for _, transform, _, _ in stages:
                _close_quietly(transform)
            for predicate in predicates.values():
                _close_quietly(predicate)
            raise
        return cls(stages, predicates, classes=classes)

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """The record after every transform, or None when one dropped it."""
        for transform, predicate, negate in self._stages:
            if predicate is not None and predicate.test(record) == negate:
                continue
            record = transform.apply(record)
            if record is None:
                return None
        return record

    __call__ = apply

    def apply_batch(self, batch: Any) -> Any:
        """A `SourceBatch` after every transform (None: all dropped), or NotImplemented
        when a stage has a predicate (which tests records one at a time) or a transform
        cannot work on columns: then the caller applies the chain record by record."""
        for transform, predicate, _ in self._stages:
            if predicate is not None:
                return NotImplemented
            batch = transform.apply_batch(batch)
            if batch is NotImplemented or batch is None:
                return batch
        return batch

    def __len__(self) -> int:
        return len(self._stages)

    def close(self) -> None:
        """Close every transform and predicate; the first error is raised after all
        have been given the chance to close."""
        first: BaseException | None = None
        plugins: list[Any] = [t for t, _, _ in self._stages]
        plugins.extend(self._predicates.values())
        for plugin in plugins:
            try:
                plugin.close()
            except Exception as exc:
                first = first or exc
        if first is not None:
            raise first


def _guard(
    props: Mapping[str, Any], prefix: str, predicates: Mapping[str, Predicate]
) -> tuple[Predicate | None, bool]:
    """The predicate and negate flag of the transform under `prefix`."""
    predicate_key, negate_key = prefix + _PREDICATE, prefix + _NEGATE
    alias = props.get(predicate_key)
    raw_negate = props.get(negate_key, False)
    if isinstance(raw_negate, bool):
        negate = raw_negate
    elif str(raw_negate).strip().lower() in ("true", "false"):
        negate = str(raw_negate).strip().lower() == "true"
    else:
        raise ConfigError(negate_key, raw_negate, "Expected value to be either true or false")
    if alias is None or not str(alias).strip():
        return None, negate
    alias = str(alias).strip()
    if alias not in predicates:
        raise ConfigError(
            predicate_key,
            alias,
            f"Predicate {alias!r} is not defined: it must be listed in '{PREDICATES}' and "
            f"given a '{PREDICATES}.{alias}.type'",
        )
    return predicates[alias], negate


def _stage(transform: Transformation, predicate: Predicate | None, negate: bool) -> StageFunction:
    """`transform` guarded by its predicate, as one function (the bound method itself
    when there is no predicate: nothing added on the hot path)."""
    if predicate is None:
        return transform.apply

    def guarded(record: ConnectRecord) -> ConnectRecord | None:
        if predicate.test(record) == negate:
            return record
        return transform.apply(record)

    return guarded


def _class_path(plugin: object) -> str:
    cls = type(plugin)
    return f"{cls.__module__}.{cls.__qualname__}"


def _close_quietly(plugin: Any) -> None:
    # Closing after a config error: the config error is the news, not this.
    with contextlib.suppress(Exception):
        plugin.close()


def transform_config_defs(props: Mapping[str, Any], resolver: Resolver) -> ConfigDef:
    """The config keys the `transforms` and `predicates` of `props` add, with their
    full prefixed names, for the herder's config validation: per alias its `type`
    (checked by resolving it), a transform's `predicate` and `negate`, and every key
    the resolved plugin declares. A type that does not resolve contributes only its
    `type` key, whose validation then reports why."""
    out = ConfigDef()
    for list_key, kind in ((TRANSFORMS, "transform"), (PREDICATES, "predicate")):
        try:
            aliases = _aliases(props, list_key)
        except ConfigError:
            aliases = list(dict.fromkeys(_split(props.get(list_key))))
        for alias in aliases:
            prefix = f"{list_key}.{alias}."
            group = f"{list_key.capitalize()}: {alias}"
            out.define(
                prefix + _TYPE,
                ConfigType.CLASS,
                validator=_resolving(resolver, kind),
                importance=Importance.HIGH,
                documentation=f"Class for the '{alias}' {kind}.",
                group=group,
            )
            if kind == "transform":
                out.define(
                    prefix + _PREDICATE,
                    ConfigType.STRING,
                    None,
                    None,
                    Importance.MEDIUM,
                    "The alias of a predicate used to determine whether to apply this "
                    "transformation.",
                    group=group,
                )
                out.define(
                    prefix + _NEGATE,
                    ConfigType.BOOLEAN,
                    False,
                    None,
                    Importance.MEDIUM,
                    "Whether the configured predicate should be negated.",
                    group=group,
                )
            try:
                own = resolver(kind, str(props.get(prefix + _TYPE, "")), key=prefix + _TYPE)
                keys = own().config().keys().values()
            except ConfigError:
                continue
            for key in keys:
                if prefix + key.name in out:
                    continue
                out.define(
                    prefix + key.name,
                    key.type,
                    key.default,
                    key.validator,
                    key.importance,
                    key.documentation,
                    group=group,
                    order_in_group=key.order_in_group,
                    display_name=key.display_name,
                )
    return out


def _split(raw: Any) -> list[str]:
    return [a.strip() for a in str(raw or "").split(",") if a.strip()]


def _resolving(resolver: Resolver, kind: str) -> Callable[[str, Any], None]:
    def check(name: str, value: Any) -> None:
        resolver(kind, value if value is not None else "", key=name)

    check.__doc__ = f"a {kind} class"
    return check
