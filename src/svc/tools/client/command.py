"""`svcc client --lang ts|js FILE|--project DIR [-o OUT]`: check the program, then print its
client (or write it to OUT, atomically: a reader never sees half a client)."""

from __future__ import annotations

import os
import sys
import tempfile

from svc.tools.client.module import client_module


def client_command(file: str | None, project: str | None, lang: str, output: str | None) -> int:
    """0 written, 1 the program has errors or OUT cannot be written."""
    from svc import pipeline
    from svc.compiler.diagnostics import render_all
    from svc.tools.openapi import program_title

    checked = pipeline.check(pipeline.Target(file=file, project=project))
    if isinstance(checked, pipeline.Failed):
        print(render_all(checked.diagnostics, checked.sources), file=sys.stderr)
        return 1
    text = client_module(checked.program, program_title(checked, file, project), lang)
    if output is None:
        sys.stdout.write(text)
        return 0
    try:
        _write_atomically(output, text)
    except OSError as exc:
        print(f"error: cannot write '{output}': {exc.strerror or exc}", file=sys.stderr)
        return 1
    return 0


def _write_atomically(path: str, text: str) -> None:
    """A temporary file beside `path`, renamed over it."""
    if os.path.isdir(path):
        raise IsADirectoryError(21, "Is a directory")
    fd, temporary = tempfile.mkstemp(prefix=".svcc-client-", dir=os.path.dirname(path) or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
