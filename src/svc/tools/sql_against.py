"""`svcc check --against REV`: the SQL of an older version of the program, checked against
the migrations of this one.

During a rolling deploy the instances of the old version keep running while the new
version's migrations are applied: a migration that drops or renames a column they read
breaks them. So the old version (a git revision of the repository holding the project, or a
folder holding that version's project) is compiled up to its SQL, and each statement it can
run is checked against the schema the NEW migrations build: every problem is one the old
instances would meet in production. The old version's own migrations are not used.
"""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass, replace

from svc import pipeline
from svc.compiler.diagnostics import Diagnostic
from svc.compiler.source import SourceFile
from svc.compiler.sql.check_sql import check_sql
from svc.compiler.sql.statements import SqlReport
from svc.compiler.sql.schema import MigrationFile
from svc.compiler.sql.schemas import Schemas


@dataclass
class AgainstResult:
    """The old version's problems against the new migrations, with its files to show them
    (named `REV:path`), and how many of its statements were checked."""

    diagnostics: list[Diagnostic]
    sources: dict[str, SourceFile]
    report: SqlReport


def check_against(rev: str, project_dir: str, migrations: dict[str, list[MigrationFile]],
                  schemas: Schemas) -> AgainstResult | str:
    """Check version `rev`'s SQL against `migrations`; a string says why it could not."""
    with tempfile.TemporaryDirectory(prefix="svc-against-") as scratch:
        old_dir = _old_project(rev, project_dir, scratch)
        if not os.path.isdir(old_dir):
            return old_dir  # why
        old = pipeline.check(pipeline.Target(project=old_dir), sql=False, environment=False)
        if isinstance(old, pipeline.Failed):
            shown = _renamed(old.diagnostics, old.sources, old_dir, rev)
            return AgainstResult(
                [replace(d, message=f"the version at {rev} does not compile: {d.message}")
                 for d in shown[0]], shown[1], SqlReport())
        report = check_sql(old.program, migrations, schemas, old.sources)
        diagnostics = [replace(d, message=d.message + f" (the version at {rev} runs this SQL; "
                                                      "the new migrations would break it)")
                       for d in report.diagnostics]
        shown = _renamed(diagnostics, old.sources, old_dir, rev)
        return AgainstResult(shown[0], shown[1], report)


def _old_project(rev: str, project_dir: str, scratch: str) -> str:
    """The old version's project folder: `rev` itself when it is a folder, else the project's
    folder as git revision `rev` of its repository, written into `scratch`. A message
    (not a folder) when neither."""
    if os.path.isdir(rev):
        return rev if os.path.isfile(os.path.join(rev, "svc.toml")) else \
            f"--against {rev}: the folder holds no svc.toml (give the old version's project folder)"
    top = _git(project_dir, "rev-parse", "--show-toplevel")
    if isinstance(top, str):
        return f"--against {rev}: not a folder, and {project_dir} is not in a git repository"
    root = top.stdout.decode().strip()
    inside = os.path.relpath(os.path.abspath(project_dir), root)
    archive = _git(root, "archive", "--format=tar", rev, "--", inside)
    if isinstance(archive, str):
        return f"--against {rev}: not a folder, nor a git revision holding {inside}: {archive}"
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(scratch, filter="data")
    return os.path.join(scratch, inside)


def _git(folder: str, *args: str) -> subprocess.CompletedProcess | str:
    try:
        done = subprocess.run(["git", "-C", folder, *args], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode != 0:
        return done.stderr.decode(errors="replace").strip().splitlines()[-1:][0] \
            if done.stderr.strip() else f"git exited with {done.returncode}"
    return done


def _renamed(diagnostics: list[Diagnostic], sources: dict[str, SourceFile], old_dir: str,
             rev: str) -> tuple[list[Diagnostic], dict[str, SourceFile]]:
    """The diagnostics and sources with the old files named `REV:path/in/project`."""
    def name(path: str) -> str:
        inside = os.path.relpath(path, old_dir)
        return path if inside.startswith("..") else f"{rev}:{inside}"

    shown = [replace(d, span=replace(d.span, file=name(d.span.file))) for d in diagnostics]
    return shown, {name(path): replace(source, path=name(path))
                   for path, source in sources.items()}
