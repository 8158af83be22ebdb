"""A built executable honours SVC_WORKERS like `svcc run`: tests/e2e/programs/workers.svc built
with `svcc build`, run alone under `env -i` with SVC_WORKERS=2."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest
from tests.e2e.test_workers import listening_workers, worker_pids
from tests.helpers.executables import POSIX_ONLY, install_alone, start, svcc_build, unpack_folders

pytestmark = [pytest.mark.build, POSIX_ONLY,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")]


def test_a_built_executable_runs_two_workers_sharing_its_database(build_cache, tmp_path):
    output = tmp_path / "dist" / "notes"
    result = svcc_build(build_cache, "tests/e2e/programs/workers.svc", "-o", str(output))
    assert result.returncode == 0, result.stdout + result.stderr
    folder, tmpdir = tmp_path / "run", tmp_path / "tmp"
    tmpdir.mkdir()
    installed = install_alone(output, folder)

    server = start(installed, folder, tmpdir, SVC_WORKERS="2", SVC_DB="notes.sqlite")
    try:
        (supervisor,) = worker_pids(server.process.pid)  # the bootloader runs one Python
        pids = worker_pids(supervisor)
        assert len(pids) == 2 and listening_workers(server.port, pids) == set(pids)
        ids = [server.json("POST", "/notes", {"text": f"n{i}"})[1]["id"] for i in range(20)]
        assert len(set(ids)) == 20
        assert server.json("GET", "/notes/count") == (200, {"total": 20})
        assert server.json("POST", "/transfer") == (200, {"total": 1_000_000})
        assert (folder / "notes.sqlite").is_file()
    finally:
        assert server.stop(signal.SIGINT, group=True) == 0, "".join(server.stderr)  # Ctrl+C
    assert [pid for pid in pids + [supervisor] if Path(f"/proc/{pid}").exists()] == []
    assert [line for line in server.stdout if line.startswith("listening")] == [
        f"listening on http://127.0.0.1:{server.port}\n"]
    assert unpack_folders(tmpdir) == []
    assert not os.path.exists(folder / "notes.sqlite-wal")
