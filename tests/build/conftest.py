"""The build cache shared by every test of a session (see tests/helpers/executables.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def build_cache(tmp_path_factory) -> Path:
    """One cache for the whole session: the first build pays for the analysis, later ones
    reuse it, as they would on a user's machine."""
    return tmp_path_factory.mktemp("svc-cache")
