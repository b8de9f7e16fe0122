"""Config validation for the REST `config/validate` endpoint and for create/update (the
door: a config that fails here is refused before anything is written or started):
Kafka's ConfigInfos shape, built from the common connector keys, the connector's own
`validate()` (its ConfigDef, and whatever else it checks: the JDBC connectors parse
`connection.url` and find its driver), the checks that need several keys at once (a
sink's topics; a dead-letter topic the sink itself consumes), and the transforms' and
predicates' keys (prefixed as in the config). Values and messages are masked as
every exit is (connect.herder.secrets): a message quoting a URL never shows its
password."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from connect.api import (
    NO_DEFAULT,
    ConfigDef,
    ConfigError,
    ConfigKey,
    ConfigType,
    ConfigValue,
    Connector,
    Importance,
    NotFoundError,
    Password,
    SinkConnector,
    SourceConnector,
)
from connect.herder.api import BadRequestError
from connect.herder.secrets import (
    config_secrets,
    mask_config,
    mask_text,
    mask_value,
    password_keys,
)
from connect.plugins import PluginKind, Plugins
from connect.worker.config import CONNECTOR_PASS_THROUGH, unknown_key_warnings
from connect.worker.connector_config import (
    SINK_CONNECTOR_CONFIG,
    SOURCE_CONNECTOR_CONFIG,
    validate_connector_name,
)
from connect.worker.exactly_once_config import exactly_once_problems

__all__ = [
    "config_key_info",
    "config_problems",
    "invalid_config_message",
    "unknown_connector_keys",
    "validate_connector_config",
]


def config_key_info(key: ConfigKey) -> dict[str, Any]:
    default = key.default
    if key.required:
        default_text = None
    elif isinstance(default, list):
        default_text = ",".join(str(d) for d in default)
    elif isinstance(default, bool):
        default_text = str(default).lower()
    else:
        default_text = None if default is None else str(default)
    return {
        "name": key.name,
        "type": key.type.value,
        "required": key.required,
        "default_value": default_text,
        "importance": key.importance.value,
        "documentation": key.documentation,
        "group": key.group,
        "order_in_group": key.order_in_group,
        "width": "NONE",
        "display_name": key.display_name or key.name,
        "dependents": list(key.dependents),
    }


def _value_info(value: ConfigValue, key: ConfigKey, secrets: list[str]) -> dict[str, Any]:
    shown = value.value
    if isinstance(shown, Password) or key.type.value == "PASSWORD":
        shown = None if shown is None else Password.HIDDEN
    elif isinstance(shown, list):
        shown = mask_value(",".join(str(v) for v in shown))
    elif isinstance(shown, bool):
        shown = str(shown).lower()
    elif shown is not None:
        shown = mask_value(str(shown))  # a URL's password, as in every other answer
    return {
        "name": value.name,
        "value": shown,
        "recommended_values": list(value.recommended_values),
        "errors": [mask_text(str(e), secrets) for e in value.errors],
        "visible": value.visible,
    }


def _prefixed(cdef: ConfigDef, prefix: str) -> ConfigDef:
    out = ConfigDef()
    for key in cdef.keys().values():
        out.define(
            prefix + key.name,
            key.type,
            key.default,
            key.validator,
            key.importance,
            key.documentation,
            group=key.group,
            order_in_group=key.order_in_group,
            display_name=key.display_name,
        )
    return out


def _plugin_defs(
    plugins: Plugins,
    config: Mapping[str, str],
    kind: PluginKind,
    list_key: str,
    prefix: str,
    group: str,
) -> tuple[list[tuple[ConfigKey, ConfigValue]], ConfigDef]:
    results: list[tuple[ConfigKey, ConfigValue]] = []
    extra = ConfigDef()
    aliases = [a.strip() for a in str(config.get(list_key, "")).split(",") if a.strip()]
    for alias in aliases:
        type_key = f"{prefix}.{alias}.type"
        key = ConfigKey(
            type_key,
            ConfigType.CLASS,
            NO_DEFAULT,
            None,
            Importance.HIGH,
            f"Class for the '{alias}' {kind}.",
            group=f"{group}: {alias}",
        )
        value = ConfigValue(type_key, config.get(type_key))
        try:
            cls = plugins.resolve(kind, config.get(type_key, ""), key=type_key)
            extra = extra.merged(_prefixed(cls().config(), f"{prefix}.{alias}."))
        except ConfigError as exc:
            value.errors.append(
                str(exc)
                if config.get(type_key)
                else f'Missing required configuration "{type_key}" which has no default value.'
            )
        results.append((key, value))
        if kind is PluginKind.TRANSFORM:
            results.extend(_predicate_keys(config, alias, group))
    return results, extra


def _predicate_keys(
    config: Mapping[str, str], alias: str, group: str
) -> list[tuple[ConfigKey, ConfigValue]]:
    """A transform's `predicate` (which must name a listed predicate) and `negate`."""
    prefix = f"transforms.{alias}."
    predicate = ConfigKey(
        prefix + "predicate",
        ConfigType.STRING,
        None,
        None,
        Importance.MEDIUM,
        "The alias of a predicate that decides whether this transformation applies.",
        group=f"{group}: {alias}",
    )
    negate = ConfigKey(
        prefix + "negate",
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.MEDIUM,
        "Whether the predicate's answer is negated.",
        group=f"{group}: {alias}",
    )
    listed = {a.strip() for a in str(config.get("predicates", "")).split(",") if a.strip()}
    chosen = config.get(prefix + "predicate")
    predicate_value = ConfigValue(predicate.name, chosen)
    if chosen and chosen not in listed:
        predicate_value.errors.append(
            f"The predicate '{chosen}' is not listed in 'predicates' ({', '.join(sorted(listed))})"
        )
    negate_value = ConfigValue(negate.name, config.get(prefix + "negate"))
    raw_negate = config.get(prefix + "negate")
    if raw_negate is not None and str(raw_negate).strip().lower() not in ("true", "false"):
        negate_value.errors.append("Expected value to be either true or false")
    return [(predicate, predicate_value), (negate, negate_value)]


def validate_connector_config(
    plugins: Plugins, config: Mapping[str, str], *, exactly_once_source_support: str = "disabled"
) -> dict[str, Any]:
    """Kafka's ConfigInfos for a candidate connector config (a source's exactly-once
    keys checked against the worker's `exactly.once.source.support`)."""
    keys = password_keys(plugins, config)
    secrets = config_secrets(config, keys)
    class_name = config.get("connector.class")
    if not class_name:
        raise BadRequestError(
            "Connector config " + str(mask_config(config, keys)) + " contains no connector type"
        )
    try:
        cls = plugins.resolve_connector(config)
    except NotFoundError as exc:
        raise BadRequestError(str(exc)) from None
    connector: Connector = cls()
    sink = issubclass(cls, SinkConnector)
    base = SINK_CONNECTOR_CONFIG if sink else SOURCE_CONNECTOR_CONFIG
    pairs: list[tuple[ConfigKey, ConfigValue]] = []
    base_keys = base.keys()
    for value in base.validate(config):
        if value.name == "name" and value.value is not None and not value.errors:
            # Only past the key's own check: an empty name is one error, as in Kafka.
            problem = validate_connector_name(str(value.value))
            if problem:
                value.errors.append(problem)
        pairs.append((base_keys[value.name], value))
    if sink:
        _check_sink_topics(config, {v.name: v for _, v in pairs})
    elif isinstance(connector, SourceConnector):
        by_name = {v.name: v for _, v in pairs}
        for key, errors in exactly_once_problems(
            connector, config, exactly_once_source_support
        ).items():
            by_name[key].errors.extend(errors)
    own = connector.config()
    own_keys = own.keys()
    try:
        checked = connector.validate(config)
    except Exception as exc:  # a plugin's bug or an unforeseen refusal: still one answer
        checked = []
        by_name = {v.name: v for _, v in pairs}
        by_name["connector.class"].errors.append(
            f"{class_name} could not validate this config: {type(exc).__name__}: {exc}"
        )
    for value in checked:
        if value.name in own_keys and value.name not in base_keys:
            pairs.append((own_keys[value.name], value))
    pairs.extend(_converter_pairs(plugins, config, {v.name: v for _, v in pairs}))
    for kind, list_key, prefix, group in (
        (PluginKind.TRANSFORM, "transforms", "transforms", "Transforms"),
        (PluginKind.PREDICATE, "predicates", "predicates", "Predicates"),
    ):
        typed, extra = _plugin_defs(plugins, config, kind, list_key, prefix, group)
        pairs.extend(typed)
        extra_keys = extra.keys()
        pairs.extend((extra_keys[v.name], v) for v in extra.validate(config))
    groups: list[str] = []
    for key, _ in pairs:
        if key.group and key.group not in groups:
            groups.append(key.group)
    return {
        "name": f"{cls.__module__}.{cls.__qualname__}",
        "error_count": sum(len(v.errors) for _, v in pairs),
        "groups": groups,
        "configs": [
            {"definition": config_key_info(k), "value": _value_info(v, k, secrets)}
            for k, v in pairs
        ],
    }


_CONVERTERS = (
    (PluginKind.CONVERTER, "key.converter"),
    (PluginKind.CONVERTER, "value.converter"),
    (PluginKind.HEADER_CONVERTER, "header.converter"),
)


def _converter_pairs(
    plugins: Plugins, config: Mapping[str, str], by_name: Mapping[str, ConfigValue]
) -> list[tuple[ConfigKey, ConfigValue]]:
    """The converters the config names itself: the class must exist, and its settings
    (`value.converter.schemas.enable`, …) must be what its ConfigDef accepts, as the
    task will configure it (connect.worker.worker); a converter the config does not
    name is the worker's, checked with the worker's config. Why here: either mistake
    otherwise fails every task at start, after the connector was created."""
    pairs: list[tuple[ConfigKey, ConfigValue]] = []
    for kind, key in _CONVERTERS:
        class_name = str(config.get(key) or "").strip()
        if not class_name:
            continue
        try:
            cls = plugins.resolve(kind, class_name, key=key)
        except ConfigError as exc:
            by_name[key].errors.append(str(exc))
            continue
        try:
            definition = _prefixed(cls().config(), f"{key}.")
        except Exception as exc:  # a converter that cannot even be built: say so once
            by_name[key].errors.append(f"{class_name} could not be loaded: {exc}")
            continue
        keys = definition.keys()
        for value in definition.validate(config):
            if value.name in config or value.errors:
                pairs.append((keys[value.name], value))
    return pairs


_DLQ = "errors.deadletterqueue.topic.name"


def _check_sink_topics(config: Mapping[str, str], by_name: Mapping[str, ConfigValue]) -> None:
    """A sink's checks across keys: exactly one of topics / topics.regex, and no
    dead-letter topic that the sink consumes itself. Why the latter at the door: a
    record dead-lettered there would be read back, fail and be dead-lettered again
    without end, so the task refuses it at start; found here, it is one 400 instead of
    a created connector whose task fails on every restart."""
    topics = [t.strip() for t in str(config.get("topics", "")).split(",") if t.strip()]
    regex = str(config.get("topics.regex", "")).strip()
    if topics and regex:
        for name in ("topics", "topics.regex"):
            by_name[name].errors.append("topics and topics.regex are mutually exclusive.")
    elif not topics and not regex:
        for name in ("topics", "topics.regex"):
            by_name[name].errors.append("Must configure one of topics or topics.regex")
    dlq = str(config.get(_DLQ, "") or "").strip()
    if not dlq:
        return
    consumed_by = "topics" if dlq in topics else None
    if consumed_by is None and regex:
        try:
            consumed_by = "topics.regex" if re.fullmatch(regex, dlq) else None
        except re.error as exc:
            by_name["topics.regex"].errors.append(
                str(ConfigError("topics.regex", regex, f"not a regular expression: {exc}"))
            )
    if consumed_by:
        by_name[_DLQ].errors.append(
            str(
                ConfigError(
                    _DLQ,
                    dlq,
                    f"the connector consumes that topic ({consumed_by}); a record "
                    "dead-lettered there would be read, fail and be dead-lettered again "
                    "without end",
                )
            )
        )


def invalid_config_message(infos: Mapping[str, Any], extra: Sequence[str] = ()) -> str:
    """Kafka's 400 message when a create or update fails validation (`extra`: more
    `key: message` lines found beside `infos`)."""
    errors = [f"{c['value']['name']}: {e}" for c in infos["configs"] for e in c["value"]["errors"]]
    errors += extra
    return (
        f"Connector configuration is invalid and contains the following {len(errors)} "
        f"error(s):\n" + "\n".join(errors) + "\nYou can also find the above list of errors "
        "at the endpoint `/connector-plugins/{connectorType}/config/validate`"
    )


def config_problems(infos: Mapping[str, Any]) -> list[str]:
    """One line per error of `validate_connector_config`'s answer: `key: message` (the
    message alone when it names the key already), masked as the answer is."""
    lines = []
    for config in infos["configs"]:
        name = config["value"]["name"]
        for error in config["value"]["errors"]:
            text = " ".join(str(error).split())
            lines.append(text if name in text else f"{name}: {text}")
    return lines


def unknown_connector_keys(infos: Mapping[str, Any], config: Mapping[str, str]) -> list[str]:
    """A warning line per key of `config` that neither the runtime's connector keys nor
    the connector's own ConfigDef nor its transforms' and predicates' declare (`infos`
    is `validate_connector_config`'s answer for it), beyond the pass-through prefixes
    of connect.worker.config: Kafka's "supplied but isn't a known config"."""
    known = [c["definition"]["name"] for c in infos["configs"]]
    where = f"connector {config.get('name', '?')} ({infos['name'].rsplit('.', 1)[-1]})"
    return unknown_key_warnings(config, known, CONNECTOR_PASS_THROUGH, where=where)
