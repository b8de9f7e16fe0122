"""The pieces of JDBC URL grammar the drivers share, and the refusal every parser raises.

pgJDBC, Connector/J and MariaDB's driver write hosts, user info and `k=v&…` query
strings alike, and every driver's parameters are flags or whole numbers; the dialect
modules (`postgres`, `mysql`, `mssql`, `oracle`, `sqlite`) parse with these so that a
host list or a boolean is read one way, and refused in the same words, whatever the
database. `Refused` carries the reason; `translate` turns it into a ConfigError naming
the key and showing the masked URL.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, unquote_plus

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

#: what a dialect's parser returns: the SQLAlchemy URL, the driver's connect() keyword
#: arguments, and the names of the parameters accepted with no effect here
Parsed = tuple["URL", dict[str, Any], list[str]]


def new_url(drivername: str, **parts: Any) -> URL:
    """SQLAlchemy's `URL.create(drivername, **parts)`, imported on the first URL made,
    not with this package: PostgresCdcSource validates its other keys through it, and
    importing SQLAlchemy costs a process ~26 MB (its whole package loads at once)."""
    from sqlalchemy.engine import URL

    return URL.create(drivername, **parts)


class Refused(Exception):
    """A reason to refuse the URL; `translate` makes it a ConfigError naming the key."""


@dataclass
class Collected:
    """What a dialect's loop over the URL's parameters gathers: the credentials a
    parameter may override, the connect arguments, the parameters ignored (reported)
    and those unknown (refused together, so one error names them all)."""

    user: str | None
    password: str | None
    args: dict[str, Any] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)

    def refuse_unknown(self, scheme: str) -> None:
        """Raise Refused naming every unknown parameter, if there were any."""
        if self.unknown:
            raise unknown_parameters(self.unknown, scheme)


def query_pairs(text: str) -> list[tuple[str, str]]:
    """`k=v&…` pairs decoded as pgJDBC and Connector/J decode them (Java's URLDecoder:
    %XX escapes, and `+` is a space); a bare `k` has the value ''."""
    pairs = []
    for part in text.split("&"):
        if not part.strip():
            continue
        name, _, value = part.partition("=")
        pairs.append((unquote_plus(name.strip()), unquote_plus(value.strip())))
    return pairs


def host_list(authority: str, default_port: int | None) -> list[tuple[str, int | None]]:
    """`h1:p1,[::1]:p2,…` as (host, port) pairs; IPv6 addresses in brackets."""
    out: list[tuple[str, int | None]] = []
    for entry in authority.split(","):
        entry = entry.strip()
        if entry.startswith("["):
            host, _, rest = entry[1:].partition("]")
            port_text = rest[1:] if rest.startswith(":") else ""
        else:
            host, _, port_text = entry.partition(":")
        port = default_port
        if port_text:
            if not port_text.isdigit() or not 0 < int(port_text) < 65536:
                raise Refused(f"port {port_text!r} of host {host!r} is not a port number")
            port = int(port_text)
        out.append((unquote(host), port))
    return out


def split_userinfo(authority: str) -> tuple[str | None, str | None, str]:
    """user:password@ off an authority (Connector/J takes it; so do we for pgJDBC)."""
    if "@" not in authority:
        return None, None, authority
    userinfo, _, rest = authority.rpartition("@")
    user, sep, password = userinfo.partition(":")
    return unquote(user) or None, unquote(password) if sep else None, rest


def as_bool(name: str, value: str) -> bool:
    """A driver's boolean parameter as Java reads it (a bare name is true)."""
    lowered = value.strip().lower()
    if lowered in ("", "true", "yes", "1", "on"):
        return True
    if lowered in ("false", "no", "0", "off"):
        return False
    raise Refused(f"parameter {name} takes true or false, not {value!r}")


def as_int(name: str, value: str) -> int:
    """A driver's whole-number parameter (timeouts, ports): never negative."""
    try:
        number = int(value.strip())
    except ValueError:
        raise Refused(f"parameter {name} takes a whole number, not {value!r}") from None
    if number < 0:
        raise Refused(f"parameter {name} may not be negative")
    return number


def unknown_parameters(names: list[str], scheme: str) -> Refused:
    """The refusal of parameters no table knows: one may change what is read or written."""
    listed = ", ".join(sorted(names))
    plural = "s" if len(names) > 1 else ""
    return Refused(
        f"unknown {scheme} parameter{plural} {listed}: not translated to this driver "
        "(remove it, or set the equivalent the documentation of connection.url names)"
    )
