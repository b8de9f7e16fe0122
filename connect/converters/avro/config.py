"""The AvroConverter's keys: Confluent's AvroConverterConfig and serde config, declared
once.

Why a module of its own: the keys are a table (Confluent's names and meanings, so
worker and connector configs move over unchanged) that a reader looks up apart from
how the converter caches and converts (`connect.converters.avro.converter`), which
reads them once per `configure`.
"""

from __future__ import annotations

from typing import Any

from connect.api.config import ConfigDef, ConfigType, Importance, at_least, one_of

__all__ = [
    "AUTO_REGISTER_SCHEMAS_CONFIG",
    "AUTO_REGISTER_SCHEMAS_DOC",
    "BASIC_AUTH_CREDENTIALS_SOURCE_CONFIG",
    "BASIC_AUTH_CREDENTIALS_SOURCE_DOC",
    "BASIC_AUTH_USER_INFO_ALIAS",
    "BASIC_AUTH_USER_INFO_CONFIG",
    "BASIC_AUTH_USER_INFO_DOC",
    "ENHANCED_AVRO_SCHEMA_SUPPORT_CONFIG",
    "ENHANCED_AVRO_SCHEMA_SUPPORT_DOC",
    "KEY_SUBJECT_NAME_STRATEGY_CONFIG",
    "LATEST_CACHE_TTL_CONFIG",
    "LATEST_CACHE_TTL_DOC",
    "LATEST_COMPATIBILITY_STRICT_CONFIG",
    "LATEST_COMPATIBILITY_STRICT_DOC",
    "SCHEMAS_CACHE_SIZE_CONFIG",
    "SCHEMAS_CACHE_SIZE_DOC",
    "SCHEMA_REGISTRY_URL_CONFIG",
    "SCHEMA_REGISTRY_URL_DOC",
    "SUBJECT_NAME_STRATEGY_DOC",
    "USE_LATEST_VERSION_CONFIG",
    "USE_LATEST_VERSION_DOC",
    "VALUE_SUBJECT_NAME_STRATEGY_CONFIG",
    "config_def",
]

SCHEMA_REGISTRY_URL_CONFIG = "schema.registry.url"
SCHEMA_REGISTRY_URL_DOC = (
    "Comma-separated list of URLs for Schema Registry instances that can be used to register "
    "or look up schemas; 'mock://<scope>' for an in-memory registry, 'embedded' for the "
    "registry running in this worker."
)
AUTO_REGISTER_SCHEMAS_CONFIG = "auto.register.schemas"
AUTO_REGISTER_SCHEMAS_DOC = "Specify if the Serializer should attempt to register the Schema."
USE_LATEST_VERSION_CONFIG = "use.latest.version"
USE_LATEST_VERSION_DOC = (
    "Use the latest version of the subject's schema for serialization (needs "
    "auto.register.schemas=false)."
)
LATEST_COMPATIBILITY_STRICT_CONFIG = "latest.compatibility.strict"
LATEST_COMPATIBILITY_STRICT_DOC = (
    "With use.latest.version, check that the latest subject version can read data of the "
    "record's own schema (backward compatible); refuse the record when it cannot."
)
LATEST_CACHE_TTL_CONFIG = "latest.cache.ttl.sec"
LATEST_CACHE_TTL_DOC = "Seconds to keep the latest version of a subject; -1 keeps it for good."
KEY_SUBJECT_NAME_STRATEGY_CONFIG = "key.subject.name.strategy"
VALUE_SUBJECT_NAME_STRATEGY_CONFIG = "value.subject.name.strategy"
SUBJECT_NAME_STRATEGY_DOC = (
    "How to name the subject a schema is registered under: TopicNameStrategy, "
    "RecordNameStrategy or TopicRecordNameStrategy (short or Confluent class name)."
)
BASIC_AUTH_CREDENTIALS_SOURCE_CONFIG = "basic.auth.credentials.source"
BASIC_AUTH_CREDENTIALS_SOURCE_DOC = (
    "Where the registry's basic-auth credentials come from: URL (user:password@ in the URL) "
    "or USER_INFO (basic.auth.user.info)."
)
BASIC_AUTH_USER_INFO_CONFIG = "basic.auth.user.info"
BASIC_AUTH_USER_INFO_ALIAS = "schema.registry.basic.auth.user.info"
BASIC_AUTH_USER_INFO_DOC = "user:password for the registry, with credentials source USER_INFO."
SCHEMAS_CACHE_SIZE_CONFIG = "schemas.cache.size"
SCHEMAS_CACHE_SIZE_DOC = "The maximum number of schemas that can be cached in this converter."
ENHANCED_AVRO_SCHEMA_SUPPORT_CONFIG = "enhanced.avro.schema.support"
ENHANCED_AVRO_SCHEMA_SUPPORT_DOC = (
    "Write Connect strings that came from Avro enums back as enums (and bytes from fixed as fixed)."
)

#: (name, type, default, validator, importance, documentation) of each key, in the
#: order `config/validate` and the plugin's config listing show them.
_KEYS: tuple[tuple[Any, ...], ...] = (
    (
        SCHEMA_REGISTRY_URL_CONFIG,
        ConfigType.LIST,
        None,
        None,
        Importance.HIGH,
        SCHEMA_REGISTRY_URL_DOC,
    ),
    (
        AUTO_REGISTER_SCHEMAS_CONFIG,
        ConfigType.BOOLEAN,
        True,
        None,
        Importance.MEDIUM,
        AUTO_REGISTER_SCHEMAS_DOC,
    ),
    (
        USE_LATEST_VERSION_CONFIG,
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.LOW,
        USE_LATEST_VERSION_DOC,
    ),
    (
        LATEST_COMPATIBILITY_STRICT_CONFIG,
        ConfigType.BOOLEAN,
        True,
        None,
        Importance.LOW,
        LATEST_COMPATIBILITY_STRICT_DOC,
    ),
    (LATEST_CACHE_TTL_CONFIG, ConfigType.LONG, -1, None, Importance.LOW, LATEST_CACHE_TTL_DOC),
    (
        KEY_SUBJECT_NAME_STRATEGY_CONFIG,
        ConfigType.STRING,
        "TopicNameStrategy",
        None,
        Importance.MEDIUM,
        SUBJECT_NAME_STRATEGY_DOC,
    ),
    (
        VALUE_SUBJECT_NAME_STRATEGY_CONFIG,
        ConfigType.STRING,
        "TopicNameStrategy",
        None,
        Importance.MEDIUM,
        SUBJECT_NAME_STRATEGY_DOC,
    ),
    (
        BASIC_AUTH_CREDENTIALS_SOURCE_CONFIG,
        ConfigType.STRING,
        "URL",
        one_of("URL", "USER_INFO"),
        Importance.MEDIUM,
        BASIC_AUTH_CREDENTIALS_SOURCE_DOC,
    ),
    (
        BASIC_AUTH_USER_INFO_CONFIG,
        ConfigType.PASSWORD,
        "",
        None,
        Importance.MEDIUM,
        BASIC_AUTH_USER_INFO_DOC,
    ),
    (
        BASIC_AUTH_USER_INFO_ALIAS,
        ConfigType.PASSWORD,
        "",
        None,
        Importance.LOW,
        BASIC_AUTH_USER_INFO_DOC,
    ),
    (
        SCHEMAS_CACHE_SIZE_CONFIG,
        ConfigType.INT,
        1000,
        at_least(1),
        Importance.LOW,
        SCHEMAS_CACHE_SIZE_DOC,
    ),
    (
        ENHANCED_AVRO_SCHEMA_SUPPORT_CONFIG,
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.LOW,
        ENHANCED_AVRO_SCHEMA_SUPPORT_DOC,
    ),
)


def config_def() -> ConfigDef:
    """The AvroConverter's keys, as a ConfigDef of its own (a caller may add to it)."""
    config = ConfigDef()
    for key in _KEYS:
        config.define(*key)
    return config
