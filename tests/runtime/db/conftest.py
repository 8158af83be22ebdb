"""What the database tests share: `url`, one new database of each kind per test."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path) -> str:
    """A fresh SQLite file, or a fresh database in the session's private PostgreSQL cluster."""
    if request.param == "sqlite":
        return str(tmp_path / "test.sqlite")
    return request.getfixturevalue("postgres_cluster").create_database()
