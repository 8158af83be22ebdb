"""`svcc install` then `svcc build --project examples/notes`: the notes app, whose pages are made
by the `markdown` package from PyPI, as one file run alone under `env -i` on a machine where no
Python can be found. The package travels inside the executable (`svc-python/`) and is
imported from there.

How the folder gets into the executable without this build (the spec, the launcher's import
path) is tested in-process in tests/tools/test_install.py."""

from __future__ import annotations

import shutil
import signal
import subprocess

import pytest
from tests.helpers.executables import (POSIX_ONLY, REPO, install_alone, start, svcc, svcc_build,
                                       unpack_folders)

pytestmark = [pytest.mark.build, POSIX_ONLY]


def test_the_notes_app_renders_markdown_with_the_bundled_package(build_cache, tmp_path):
    project = tmp_path / "notes"
    shutil.copytree(REPO / "examples" / "notes", project,
                    ignore=shutil.ignore_patterns(".svc", "*.sqlite"))
    installed = subprocess.run(svcc() + ["install", "--project", str(project)],
                               capture_output=True, text=True, cwd=REPO, timeout=300)
    assert installed.returncode == 0, installed.stderr
    assert "from the versions svc.lock pins" in installed.stdout  # the committed lock's pins
    output = tmp_path / "dist" / "notes"
    built = svcc_build(build_cache, "--project", str(project), "-o", str(output))
    assert built.returncode == 0, built.stdout + built.stderr

    folder, tmpdir = tmp_path / "elsewhere", tmp_path / "tmp"
    tmpdir.mkdir()
    server = start(install_alone(output, folder), folder, tmpdir)
    try:
        status, note = server.json("POST", "/notes", {"title": "Groceries <today>",
                                                      "text": "# Buy\n\n* *fresh* bread\n"})
        assert status == 200, note
        status, content_type, body = server.request("GET", f"/notes/{note['id']}/html")
        assert (status, content_type) == (200, "text/html; charset=utf-8")
        page = body.decode()
        assert "<title>Groceries &lt;today&gt;</title>" in page
        assert "<h1>Buy</h1>" in page and "<li><em>fresh</em> bread</li>" in page
        assert server.request("GET", "/notes/999/html")[0] == 404
    finally:
        assert server.stop(signal.SIGTERM) == 0, "".join(server.stderr)
    assert unpack_folders(tmpdir) == []
