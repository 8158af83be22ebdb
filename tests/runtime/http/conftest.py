"""Fixtures for the server tests (helpers live in tests/helpers/http_testkit.py)."""

from __future__ import annotations

import pytest

from tests.helpers.http_testkit import start_server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One server shared by a test module (default 10 s wait deadline)."""
    srv = start_server(tmp_path_factory.mktemp("server"))
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def quick_server(tmp_path_factory):
    """A server whose connection wait deadline is 1 second."""
    srv = start_server(tmp_path_factory.mktemp("quick"), {"SVC_HTTP_REQUEST_WAIT_SECONDS": "1"})
    yield srv
    srv.stop()
