"""include_text reads only regular files inside the program's folder, of at most 8 MiB, and
says why it refuses any other (issue 35: `../`, absolute paths, /proc/self/environ, /dev/zero,
a FIFO, a NUL in the name were read, or hung, or crashed the compiler)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from svc.compiler.check.includes import MAX_INCLUDE_BYTES
from svc.pipeline import Checked, Failed, Target, check


def messages(folder: Path, call: str, project: bool = False) -> list[str]:
    (folder / "main.svc").write_text(f"def main():\n    t = {call}\n")
    if project:
        (folder / "svc.toml").write_text('entry = "main.svc"\n')
    checked = check(Target(project=str(folder)) if project else Target(file=str(folder / "main.svc")))
    return [] if isinstance(checked, Checked) else [d.message for d in checked.diagnostics]


@pytest.fixture
def app(tmp_path) -> Path:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "page.html").write_text("<p>hi</p>")
    (tmp_path / "secret.txt").write_text("s3cret")
    return tmp_path / "app"


def test_a_file_inside_the_folder_is_included(app):
    assert messages(app, 'include_text("page.html")') == []


@pytest.mark.parametrize("name, says", [
    ("../secret.txt", "is outside the program's folder"),
    ("/proc/self/environ", "is an absolute path"),
    ("/dev/zero", "is an absolute path"),
    (".", "is not a regular file"),
    ("nul\\0.txt", "contains a NUL character"),
])
def test_paths_out_of_the_program_or_not_files_are_refused(app, name, says):
    found = messages(app, f'include_text("{name}")')
    assert len(found) == 1 and says in found[0], found


def test_a_link_out_of_the_folder_and_a_fifo_are_refused(app):
    os.symlink(app.parent / "secret.txt", app / "link.txt")
    os.mkfifo(app / "pipe")
    assert "is outside the program's folder" in messages(app, 'include_text("link.txt")')[0]
    assert "is not a regular file" in messages(app, 'include_text("pipe")')[0]  # not opened


def test_a_file_over_the_limit_is_refused_before_it_is_read(app):
    with open(app / "big.txt", "wb") as big:
        big.truncate(MAX_INCLUDE_BYTES + 1)  # sparse: no 8 MiB written
    assert "the limit is 8,388,608 (8 MiB)" in messages(app, 'include_text("big.txt")')[0]


def test_in_a_project_the_project_folder_is_the_root(app):
    (app / "sub").mkdir()
    (app / "sub" / "x.svc").write_text('def page() -> str:\n    return include_text("../page.html")\n')
    (app / "main.svc").write_text('from "sub/x.svc" import page\n\ndef main():\n    t = page()\n')
    (app / "svc.toml").write_text('entry = "main.svc"\n')
    assert isinstance(check(Target(project=str(app))), Checked)
    assert isinstance(check(Target(file=str(app / "sub" / "x.svc"))), Failed)  # root: sub/
