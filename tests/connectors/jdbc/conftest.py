"""The databases the JDBC connectors are tested against: SQLite (a file), and the
private PostgreSQL and MariaDB servers of tests/pg.py and tests/mysql.py. Suites written
for every dialect take `db_url` and run once per database."""

from __future__ import annotations

from pathlib import Path

import pytest

DATABASES = [
    "sqlite",
    pytest.param("postgres", marks=pytest.mark.postgres),
    pytest.param("mysql", marks=pytest.mark.mysql),
]


@pytest.fixture(params=DATABASES)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A SQLAlchemy URL of an empty database: SQLite, PostgreSQL, then MySQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'sink.db'}"
    return str(request.getfixturevalue(f"{request.param}_url"))
