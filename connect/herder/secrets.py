"""Secrets never leave the worker: one masking rule for every exit.

Kafka Connect returns stored configs as they are, passwords included, and repeats a
`connection.url` with its password in status traces and logs. Here every exit goes
through the functions of this module, which replace a secret by `[hidden]` (Kafka's
word for a PASSWORD value in validate answers):

- REST answers that carry a config (create, config, info, `?expand=info`, tasks,
  validate) mask every key a plugin types as PASSWORD, and every key whose name ends
  in `password` (an override such as `consumer.override.ssl.key.password`), whole;
  in every other value they mask the password inside a URL or a parameter list
  (`mask_config`);
- free text (a status trace, a validation message, a log line) gets the same URL
  and parameter masking plus the literal values of the secrets the worker knows
  (`mask_text`);
- log records are masked when they are made (`install_log_masking`), so every
  handler — the worker's stderr, a test's caplog, a task process's stderr — sees the
  masked text.

What counts as a password inside a string (`secret_spans`), whatever the scheme:

1. the password of a URL's authority: `scheme://user:PASSWORD@host`;
2. Oracle thin's `jdbc:oracle:thin:user/PASSWORD@host`;
3. a parameter whose name ends in `password`, `passwd` or `pwd`, after `?`, `&`, `;`,
   `,`, a space, a quote or the start of the text: `?password=P`, `;password={P}`,
   libpq's `host=h password=P`;
4. a quoted key ending in `password` with its quoted value, as a dict or JSON prints
   it: `'connection.password': 'P'`.

A config-provider placeholder (`${file:…}`) is not a secret and stays visible.

Round trip: so that a script can GET a config, change one key and PUT it back, a
masked value that comes back keeps the stored secret (`restore_secrets`): a PASSWORD
key sent as `[hidden]` keeps its stored value, and in any other value each `[hidden]`
takes, in order, the secret the stored value had at that place (so the host of a
`connection.url` can be edited while its password stays as stored).

This module imports no connector: URL grammars of particular drivers stay with the
connectors (`connectors.jdbc.urls`); this rule is deliberately general, so that any
plugin's URL is masked at the runtime's exits.
"""

from __future__ import annotations

import logging
import re
import threading
import traceback
from collections.abc import Iterable, Mapping
from typing import Any

from connect.api import ConfigType, Password
from connect.plugins import PluginKind, Plugins

__all__ = [
    "HIDDEN",
    "config_secrets",
    "install_log_masking",
    "mask_config",
    "mask_secrets",
    "mask_text",
    "mask_value",
    "masks_left",
    "password_keys",
    "remember_secrets",
    "restore_secrets",
    "secret_spans",
]

HIDDEN = Password.HIDDEN

# Step 1: the password of a URL's authority (RFC 3986: the authority ends at / ? #).
_USERINFO = re.compile(r"[A-Za-z][\w+.-]*://[^\s/?#@:'\"]*:(?P<secret>[^\s/?#@'\"]+)@")
# Step 2: Oracle thin's user/password@.
_ORACLE = re.compile(r"jdbc:oracle:thin:[^\s/@:'\"]*/(?P<secret>[^\s@'\"]+)@", re.IGNORECASE)
# Step 3: name=value, the name ending in password / passwd / pwd.
_PARAM = re.compile(
    r"(?:^|(?<=[\s?&;,(\[{'\"]))[\w.-]*(?:password|passwd|pwd)\s*=\s*"
    r"(?P<secret>\{[^}]*\}|'[^']*'|\"[^\"]*\"|[^\s&;,'\")\]}]+)",
    re.IGNORECASE | re.MULTILINE,
)
# Step 4: 'key.password': 'value' (a dict's repr) or "key.password": "value" (JSON).
_QUOTED = re.compile(
    r"(?P<q>['\"])[\w.-]*password(?P=q)\s*:\s*(?P<v>['\"])(?P<secret>.*?)(?P=v)",
    re.IGNORECASE,
)
_PATTERNS = (_USERINFO, _ORACLE, _PARAM, _QUOTED)
_CHEAP = re.compile(r"://|password|passwd|pwd|oracle", re.IGNORECASE)

#: Literal secrets shorter than this are not searched for in free text: a 2-letter
#: "password" would mask every occurrence of those letters; the patterns above still
#: mask it wherever it stands as a password.
_MIN_LITERAL = 4


def _placeholder(value: str) -> bool:
    return "${" in value


def secret_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every password inside `text` (the module docstring's steps 1-4),
    sorted and not overlapping; config-provider placeholders are not passwords."""
    if not _CHEAP.search(text):  # the common case: nothing that could hold one
        return []
    spans = []
    for pattern in _PATTERNS:
        for match in pattern.finditer(text):
            start, end = match.span("secret")
            if end > start and not _placeholder(match.group("secret")):
                if text.startswith(HIDDEN, start):
                    continue  # masked already
                spans.append((start, end))
    spans.sort()
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def mask_value(text: str) -> str:
    """`text` with every password in it (`secret_spans`) replaced by `[hidden]`."""
    spans = secret_spans(text)
    if not spans:
        return text
    out, last = [], 0
    for start, end in spans:
        out += [text[last:start], HIDDEN]
        last = end
    out.append(text[last:])
    return "".join(out)


def _literal(secret: str) -> bool:
    """Whether `secret` is searched for as it is in free text (see _MIN_LITERAL); the
    mask itself and placeholders never are."""
    return (
        len(secret) >= _MIN_LITERAL
        and not _placeholder(secret)
        and HIDDEN not in secret
        and secret not in HIDDEN
    )


#: Secrets remembered for this process, longest first (so a secret that contains
#: another is masked whole). Replaced, never changed in place: a log call on any
#: thread reads it without a lock.
_known: tuple[str, ...] = ()
_known_lock = threading.Lock()


def remember_secrets(secrets: Iterable[str]) -> None:
    """Let `mask_text` (and so every log line of this process) mask these values
    wherever they occur, whatever surrounds them."""
    global _known
    fresh = {s for s in secrets if _literal(s)}
    if fresh.difference(_known):
        with _known_lock:
            _known = tuple(sorted(fresh.union(_known), key=len, reverse=True))


def mask_text(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with every password in it (`secret_spans`), each of `secrets` and each
    secret passed to `remember_secrets` replaced by `[hidden]`."""
    masked = mask_value(text)
    extra = sorted({s for s in secrets if _literal(s)}, key=len, reverse=True)
    for secret in (*extra, *_known):
        if secret in masked:
            masked = masked.replace(secret, HIDDEN)
    return masked


def _named_secret(key: str) -> bool:
    return key.lower().endswith(("password", "passwd"))


def password_keys(plugins: Plugins, config: Mapping[str, str]) -> set[str]:
    """Keys of `config` that its connector, transforms or predicates type as PASSWORD,
    and every key whose name says it is a password."""
    keys = {k for k in config if _named_secret(k)}
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


def config_secrets(config: Mapping[str, Any], keys: set[str]) -> list[str]:
    """The secret values of `config`: its PASSWORD keys' values and every password
    inside its other values (for masking free text that may repeat them)."""
    out = []
    for key, value in config.items():
        if not isinstance(value, str) or not value:
            continue
        if key in keys:
            out.append(value)
        else:
            out += [value[s:e] for s, e in secret_spans(value)]
    return out


def mask_config(config: Mapping[str, str], keys: set[str]) -> dict[str, str]:
    """`config` as a REST answer shows it: PASSWORD keys (`keys`) `[hidden]` whole,
    passwords inside other values `[hidden]`, placeholders as they are."""
    return {
        k: (HIDDEN if not _placeholder(v) else v)
        if k in keys and v is not None
        else mask_value(v)
        if isinstance(v, str)
        else v
        for k, v in config.items()
    }


#: The name this module had for `mask_config` (PASSWORD keys only, then).
mask_secrets = mask_config


def _restore_value(incoming: str, stored: str) -> str:
    """`incoming` with each `[hidden]` given back, in order, the secret `stored` had at
    that place; as it came when the counts differ (the user rewrote the value)."""
    secrets = [stored[s:e] for s, e in secret_spans(stored)]
    if not secrets or incoming.count(HIDDEN) != len(secrets):
        return incoming
    parts = incoming.split(HIDDEN)
    out = [parts[0]]
    for secret, part in zip(secrets, parts[1:], strict=True):
        out += [secret, part]
    return "".join(out)


def restore_secrets(
    incoming: Mapping[str, str], stored: Mapping[str, str], keys: set[str]
) -> dict[str, str]:
    """A config sent back with the masks of `mask_config` in place, with the stored
    secrets in their places (the module docstring's round trip)."""
    out = {}
    for k, v in incoming.items():
        if k in stored and isinstance(v, str) and HIDDEN in v:
            if k in keys or _named_secret(k):
                v = stored[k] if v == HIDDEN else v
            else:
                v = _restore_value(v, stored[k])
        out[k] = v
    return out


def masks_left(config: Mapping[str, str], keys: set[str]) -> list[str]:
    """Keys of `config` whose value still holds `[hidden]` where a secret goes, after
    `restore_secrets` had no stored secret to put there: a config copied from another
    connector's answer, or a new one. Stored as it is, the mask would become the
    password, and the connector would fail to log in on every start."""
    left = []
    for key, value in config.items():
        if not isinstance(value, str) or HIDDEN not in value:
            continue
        if key in keys or _named_secret(key):
            if value == HIDDEN:
                left.append(key)
            continue
        probe = value.replace(HIDDEN, "\x00")
        if any("\x00" in probe[s:e] for s, e in secret_spans(probe)):
            left.append(key)
    return left


# ------------------------------------------------------------------------- logs

_previous_factory: Any = None


def _masking_factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
    record: logging.LogRecord = _previous_factory(*args, **kwargs)
    try:
        message = record.getMessage()
    except Exception:  # a bad format string: logging reports it as it always has
        return record
    masked = mask_text(message)
    if masked != message:
        record.msg, record.args = masked, ()
    if record.exc_info and record.exc_info[1] is not None:
        text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
        shown = mask_text(text)
        if shown != text:
            record.exc_text = shown
    return record


def install_log_masking() -> None:
    """Mask secrets in every log record of this process as it is made (idempotent).

    Why a record factory and not a handler's filter or formatter: a filter sees only
    the records of its own handler or logger, and handlers come and go (a test's
    caplog, a service's own); the factory runs once per record, before any handler,
    and only for records whose level is enabled."""
    global _previous_factory
    current = logging.getLogRecordFactory()
    if current is _masking_factory:
        return
    _previous_factory = current
    logging.setLogRecordFactory(_masking_factory)
