"""Passwords out of database URLs, before a URL reaches a message or a log line.

A module of its own because every error `connectors.jdbc.urls` raises, and every log
line a JDBC or CDC connector writes about its database, shows the URL through
`mask_url`; it knows the places each driver's grammar keeps a password in.
"""

from __future__ import annotations

import re

from connect.api import Password

#: what stands for a password in a message: the runtime's word for a hidden value
MASK = Password.HIDDEN

# user:password@ in an authority (SQLAlchemy's and Connector/J's URLs)
# (an authority ends at / ? #; a password holding those is percent-encoded)
_USERINFO = re.compile(r"(//[^/@?;#]*?:)[^/?#]*(@)")
# password=… as a query or property parameter (pgJDBC, Connector/J: ?&; SQL Server: ;)
_PARAM = re.compile(r"([?&;]\s*[A-Za-z]*password\s*=\s*)(\{[^}]*\}|[^&;]*)", re.IGNORECASE)
# Oracle's thin user/password@
_ORACLE = re.compile(r"(jdbc:oracle:thin:[^/@]*/)[^@]*(@)", re.IGNORECASE)


def mask_url(raw: str, *secrets: str | None) -> str:
    """`raw` with every password in it replaced by [hidden]: the user:password@ of an
    authority, any `…password=` parameter, Oracle's user/password@, and each of
    `secrets` wherever else it occurs (a password given as connection.password that
    was also pasted into the URL)."""
    text = _ORACLE.sub(rf"\g<1>{MASK}\g<2>", raw)
    text = _USERINFO.sub(rf"\g<1>{MASK}\g<2>", text)
    text = _PARAM.sub(rf"\g<1>{MASK}", text)
    for secret in secrets:
        if secret:
            text = text.replace(secret, MASK)
    return text
