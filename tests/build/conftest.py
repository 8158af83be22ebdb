"""The build cache shared by every build test of a run (see tests/helpers/executables.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def build_cache(tmp_path_factory) -> Path:
    """One cache for the whole run: the first build pays for the analysis, later ones reuse it,
    as they would on a user's machine. Under pytest-xdist each worker is a session of its own,
    so the cache sits in the folder all workers' temporary folders share; `svcc build` locks
    its cache, so two workers' builds take turns instead of each paying the analysis."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    cache = root / "svc-cache"
    cache.mkdir(exist_ok=True)
    return cache
