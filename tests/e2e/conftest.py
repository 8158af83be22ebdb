"""`database_url`: a fresh, empty database for one test, on each database svc supports."""

from __future__ import annotations

import pytest

DATABASES = ["sqlite"]


@pytest.fixture(params=DATABASES)
def database_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "test.sqlite")
    raise AssertionError(request.param)
