"""Fixtures every test folder may use: the private PostgreSQL cluster of the session."""

from __future__ import annotations

import pytest

from tests.helpers.postgres import start_cluster


@pytest.fixture(scope="session")
def postgres_cluster():
    """Started on first use (initdb, pg_ctl on a free port of 127.0.0.1), removed at the end."""
    cluster = start_cluster()
    yield cluster
    cluster.remove()
