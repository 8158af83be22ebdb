"""`database_url`: a fresh, empty database for one test, on each database svc supports (an
SQLite file, and a new database of the session's private PostgreSQL cluster)."""

from __future__ import annotations

import pytest

DATABASES = ["sqlite", "postgresql"]


@pytest.fixture(params=DATABASES)
def database_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "test.sqlite")
    return request.getfixturevalue("postgres_cluster").create_database()
