"""Which program an editor's file belongs to, and that program checked with the editor's
unsaved texts: the language server's view of the pipeline.

A file belongs to the project of the nearest `svc.toml` above it when that project's program
reads it; else to the program of an open document that reads it (an imported file opened
after its importer); else it is a program of its own. Each check runs `pipeline.check` with
the open documents as an overlay, so the server never has a second parser or checker.
"""

from __future__ import annotations

import gc
import os
from dataclasses import dataclass, field

from svc import pipeline
from svc.compiler.diagnostics import Diagnostic
from svc.compiler.program import CheckedProgram
from svc.compiler.source import SourceFile, Span
from svc.compiler.sql.schemas import Schemas
from svc.project import config_path


@dataclass
class Analysis:
    """One program as last checked: every file it read, each file's diagnostics and the
    (possibly partly) checked program, absent when the program did not parse."""

    target: pipeline.Target
    sources: dict[str, SourceFile]  # by absolute path
    diagnostics: dict[str, list[Diagnostic]] = field(default_factory=dict)  # by absolute path
    program: CheckedProgram | None = None

    @property
    def files(self) -> set[str]:
        return set(self.sources)


def analyse(target: pipeline.Target, overlay: dict[str, str],
            schemas: Schemas | None = None) -> Analysis:
    """Check `target` (absolute paths) with `overlay` (real path -> text), its SQL in the
    server's `schemas` (kept open for the session, compiler/sql/schemas.py).

    The cyclic garbage collector is paused meanwhile: a check allocates hundreds of thousands
    of small objects, and with the previous analyses alive each collection would scan them
    all, which made a 10,000-line file take twice as long to check (bench/lsp_latency.py).
    The syntax tree holds no cycles, so reference counting frees old analyses anyway; and
    what survives a check is frozen (`gc.freeze`) so later collections, e.g. while a message
    is decoded, do not scan it either. Closing a document unfreezes and collects."""
    gc.disable()
    try:
        result = pipeline.check(target, overlay, schemas)
    except RecursionError:  # absurd nesting the pipeline could not turn into a diagnostic
        entry = target.file or config_path(target.project or ".")
        return Analysis(target, {}, {entry: [Diagnostic(
            "expression or block nested too deeply to check", Span(entry, 1, 1, 1, 1))]})
    finally:
        gc.freeze()
        gc.enable()
    sources = {os.path.abspath(p): s for p, s in result.sources.items()}
    if isinstance(result, pipeline.Checked):
        return Analysis(target, sources, {}, result.program)
    by_file: dict[str, list[Diagnostic]] = {}
    for d in result.diagnostics:
        by_file.setdefault(os.path.abspath(d.span.file), []).append(d)
    return Analysis(target, sources, by_file, result.program)


def project_above(path: str, stop: str | None = None) -> str | None:
    """The nearest folder at or above `path`'s folder holding `svc.toml` (not above `stop`,
    the workspace root, when given)."""
    folder = os.path.dirname(os.path.abspath(path))
    while True:
        if os.path.isfile(config_path(folder)):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder or (stop and os.path.abspath(folder) == os.path.abspath(stop)):
            return None
        folder = parent


def candidate_targets(path: str, open_analyses: list[Analysis],
                      root: str | None = None) -> list[pipeline.Target]:
    """The programs `path` may belong to, most likely first (see the module docstring)."""
    path = os.path.abspath(path)
    found: list[pipeline.Target] = []
    project = project_above(path, root)
    if project is not None:
        found.append(pipeline.Target(project=project))
    for a in open_analyses:
        if path in a.files and a.target not in found:
            found.append(a.target)
    own = pipeline.Target(file=path)
    if own not in found:
        found.append(own)
    return found


def analyse_file(path: str, overlay: dict[str, str], open_analyses: list[Analysis],
                 root: str | None = None, schemas: Schemas | None = None) -> Analysis:
    """Check the program `path` belongs to: the first candidate whose program reads it."""
    path = os.path.abspath(path)
    candidates = candidate_targets(path, open_analyses, root)
    for target in candidates[:-1]:
        analysis = analyse(target, overlay, schemas)
        if path in analysis.files:
            return analysis
    return analyse(candidates[-1], overlay, schemas)
