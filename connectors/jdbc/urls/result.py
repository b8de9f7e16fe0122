"""`DatabaseUrl`: what a `connection.url` means here, the one value every step of the
translation hands on and every connector opens its engine from.

Its own module because the dialect parsers, the driver resolution and PostgreSQL's
libpq view (`libpq_params`) all take or make one, and none of them owns it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from connectors.jdbc.urls.masking import MASK

if TYPE_CHECKING:
    from sqlalchemy.engine import URL


@dataclass(frozen=True)
class DatabaseUrl:
    """What a `connection.url` means here: the SQLAlchemy URL (password included: never
    print it, print `str(self)`), keyword arguments for the driver's connect(), and the
    JDBC parameters accepted with no effect here (for a log line)."""

    url: URL
    connect_args: Mapping[str, Any] = field(default_factory=dict)
    ignored: tuple[str, ...] = ()

    def __str__(self) -> str:
        text = self.url.render_as_string(hide_password=True)
        return text.replace(":***@", f":{MASK}@", 1) if self.url.password else text

    @property
    def backend(self) -> str:
        return self.url.get_backend_name()

    def with_credentials(self, user: str | None, password: str | None) -> DatabaseUrl:
        """The same with `user`/`password` (when given) in place of the URL's."""
        url = self.url
        if user:
            url = url.set(username=user)
        if password:
            url = url.set(password=password)
        return DatabaseUrl(url, self.connect_args, self.ignored)
