"""What the job-store tests share: a fresh database on each database svc supports."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "jobs.sqlite")
    return request.getfixturevalue("postgres_cluster").create_database()

