"""`svcc fmt`: rewrite `.svc` files in the canonical layout, or with `--check` list those
that are not in it (for CI).

The layout itself is `svc.compiler.front.layout`; this module picks the files, reads them as
the compiler does (UTF-8, a byte order mark dropped), and writes a file only when its text
changes, through a temporary file renamed over it so an interrupted run never leaves half a
file. A file that does not parse is left untouched and its diagnostics are shown as `svcc
check` shows them; the other files are still formatted.
"""

from __future__ import annotations

import os
import sys

from svc.compiler.diagnostics import Diagnostic, render_all
from svc.compiler.front.imports import read_source
from svc.compiler.front.layout import format_source
from svc.compiler.source import SourceFile
from svc.tools.output import write_atomically


def fmt_command(files: list[str], project: str | None, check: bool) -> int:
    """0: every file is (now) in the layout; 1: a file has errors, or with `check` a file
    differs. The files that differ (or were rewritten) are printed one per line."""
    paths = project_files(project) if project is not None else [
        path for given in files
        for path in (project_files(given) if os.path.isdir(given) else [given])]
    differ = False
    errors: list[Diagnostic] = []
    sources: dict[str, SourceFile] = {}
    for path in paths:
        source, diagnostics = read_source(path)
        text = None
        if source is not None:
            sources[path] = source
            if not diagnostics:
                text, diagnostics = format_source(source)
        if text is None:
            errors += diagnostics
        elif text != _on_disk(path):
            print(path, flush=True)
            differ = True
            if not check:
                write_atomically(path, text)
    if errors:
        print(render_all(errors, sources), file=sys.stderr)
    return 1 if errors or (check and differ) else 0


def project_files(project: str) -> list[str]:
    """Every `.svc` file under a folder (a project's, or one given as a PATH; tests too), in a
    stable order; hidden folders (`.git`, `.venv`) are skipped."""
    found = []
    for folder, subfolders, names in os.walk(project):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith("."))
        found += [os.path.join(folder, n) for n in sorted(names) if n.endswith(".svc")]
    return found


def _on_disk(path: str) -> str:
    """The file's exact text (line endings and byte order mark included), to compare."""
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()
