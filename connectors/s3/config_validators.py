"""Checks of single S3 config values, used by the declarations in `config_defs`.

Each takes (key name, value) and raises `ConfigError` naming the key and saying what
a good value looks like; None (unset) passes unless the key needs a value. Rules
that tie several keys together are applied after parsing, in `config`.
"""

from __future__ import annotations

import re
import zoneinfo
from collections.abc import Callable, Mapping
from typing import Any

from connect.api import ConfigError, non_empty_string

__all__ = [
    "DEFAULT_CREDENTIALS_CHAIN",
    "STORAGE_CLASSES",
    "alias",
    "bucket_name",
    "credentials_provider",
    "locale",
    "storage_class",
    "timezone",
    "topic_regex_list",
    "topics_dir",
    "unsupported",
    "url",
]

# The one credentials provider class accepted (boto3's chain stands for it).
DEFAULT_CREDENTIALS_CHAIN = "com.amazonaws.auth.DefaultAWSCredentialsProviderChain"
# The storage classes Confluent's configs name; this sink has the one.
STORAGE_CLASSES = ("io.confluent.connect.s3.storage.S3Storage", "S3Storage")


def alias(table: Mapping[str, str], what: str) -> Callable[[str, Any], None]:
    def check(name: str, value: Any) -> None:
        if value is not None and str(value).strip() not in table:
            known = sorted({k for k in table if "." in k}) or sorted(table)
            raise ConfigError(name, value, f"unknown {what}; one of: {', '.join(known)}")

    check.__doc__ = "[" + ", ".join(sorted(k for k in table if "." not in k)) + "]"
    return check


def timezone(name: str, value: Any) -> None:
    if value:
        try:
            zoneinfo.ZoneInfo(str(value))
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise ConfigError(name, value, "not a time zone id (e.g. UTC, Europe/Paris)") from None


def locale(name: str, value: Any) -> None:
    if value:
        from connectors.s3.locales import check_locale  # Babel: only when a locale is set

        problem = check_locale(value)
        if problem is not None:
            raise ConfigError(name, value, problem)


def bucket_name(name: str, value: Any) -> None:
    non_empty_string(name, value)
    if value is not None and not re.fullmatch(r"[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]", str(value)):
        raise ConfigError(
            name, value, "an S3 bucket name: 3-63 lowercase letters, digits, dots and hyphens"
        )


def url(name: str, value: Any) -> None:
    if value and not re.match(r"^https?://[^/\s]+", str(value)):
        raise ConfigError(name, value, "an http:// or https:// URL")


def credentials_provider(name: str, value: Any) -> None:
    if value and value != DEFAULT_CREDENTIALS_CHAIN:
        raise ConfigError(
            name,
            value,
            f"only {DEFAULT_CREDENTIALS_CHAIN} (boto3's credential chain: environment, shared "
            "files, instance roles) is supported; or set aws.access.key.id and "
            "aws.secret.access.key",
        )


def storage_class(name: str, value: Any) -> None:
    if value and value not in STORAGE_CLASSES:
        raise ConfigError(name, value, f"must be {STORAGE_CLASSES[0]}")


def topics_dir(name: str, value: Any) -> None:
    """Published configs name the prefix as a path (`/raw/kafka/topics`, `backup/`): the
    slashes around it are dropped, and an empty prefix (Confluent's "") puts the topics
    at the bucket's root. A `..` segment is refused: stores with a file-system view of
    the bucket (MinIO, SeaweedFS's filer, s3fs mounts) resolve it out of the prefix."""
    if value is None:
        raise ConfigError(name, value, 'a prefix is needed ("" for none)')
    if ".." in str(value).split("/"):
        raise ConfigError(name, value, "a prefix without '..' segments")


def unsupported(reason: str) -> Callable[[str, Any], None]:
    """A validator for a key of Confluent's S3 sink whose feature this sink does not
    have: unset or empty is accepted, a value is refused with `reason` (a silent
    ignore would store objects without what the key asked for)."""

    def check(name: str, value: Any) -> None:
        if value not in (None, "", False):
            raise ConfigError(name, value, reason)

    return check


def topic_regex_list(name: str, value: Any) -> None:
    for item in value or []:
        topic, sep, regex = item.partition(":")
        if not sep or not topic or not regex:
            raise ConfigError(name, value, f"{item!r} is not a <topic>:<regex> pair")
        try:
            re.compile(regex)
        except re.error as exc:
            raise ConfigError(name, value, f"bad regex {regex!r}: {exc}") from None
