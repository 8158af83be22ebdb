"""What a command makes of a checked program, printed or written to a file.

`svcc openapi` and `svcc client` both check the program (its diagnostics, as `svcc check`
shows them, are the answer when it does not check), make one text of it, and print it or
write it to `-o`/`--output`; `svcc fmt` rewrites files in place. Every such file is written
atomically: a reader never sees half of it.
"""

from __future__ import annotations

import errno
import os
import sys
import tempfile
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from svc.pipeline import Checked

#: The permissions of a file written where none was (an existing file keeps its own).
NEW_FILE_MODE = 0o644


def print_or_write(file: str | None, project: str | None, output: str | None,
                   make_text: Callable[[Checked], str]) -> int:
    """Check the program, then print `make_text(checked)` (or write it to `output`): 0 done,
    1 the program has errors or `output` cannot be written."""
    from svc import pipeline
    from svc.compiler.diagnostics import render_all

    checked = pipeline.check(pipeline.Target(file=file, project=project))
    if isinstance(checked, pipeline.Failed):
        print(render_all(checked.diagnostics, checked.sources), file=sys.stderr)
        return 1
    text = make_text(checked)
    if output is None:
        sys.stdout.write(text)
        return 0
    try:
        write_atomically(output, text)
    except OSError as exc:
        print(f"error: cannot write '{output}': {exc.strerror or exc}", file=sys.stderr)
        return 1
    return 0


def write_atomically(path: str, text: str) -> None:
    """Replace (or make) the file `path` with `text`, exactly (line endings as they are): a
    temporary file beside it, renamed over it, with the permissions the file had."""
    if os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = NEW_FILE_MODE
    fd, temporary = tempfile.mkstemp(prefix=".svcc-", dir=os.path.dirname(path) or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
