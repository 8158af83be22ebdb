"""What `include_text` may read: a regular file inside the program's folder, of bounded size.

The file is read while compiling, and its text becomes part of the program (and of the
executable `svcc build` makes). So a path must not reach out of the program (`../../.ssh`,
an absolute path, `/proc/self/environ`, which would carry the compiling shell's secrets into
the program), nor name something that never ends (`/dev/zero`) or never answers (a FIFO).
Each refusal is a diagnostic, decided before the file is opened.
"""

from __future__ import annotations

import os
import stat

#: The largest file include_text embeds (its text is a constant of the program).
MAX_INCLUDE_BYTES = 8 * 1024 * 1024


def include_problem(name: str, path: str, root: str) -> str | None:
    """Why `name` (as written, resolved to `path`) may not be included from a program whose
    folder is `root`; None when it may (a missing file is the caller's own message)."""
    if "\0" in name:
        return "include_text: the file name contains a NUL character"
    if os.path.isabs(name):
        return (f"include_text: '{name}' is an absolute path; name a file relative to this "
                "file, inside the program's folder")
    real, inside = os.path.realpath(path), os.path.realpath(root)
    if os.path.commonpath([real, inside]) != inside:
        return (f"include_text: '{name}' is outside the program's folder ({root}): only files "
                "inside it may be included")
    try:
        found = os.stat(real)
    except OSError:
        return None  # missing or unreadable: said when it is read
    if not stat.S_ISREG(found.st_mode):
        return f"include_text: '{name}' is not a regular file"
    if found.st_size > MAX_INCLUDE_BYTES:
        return (f"include_text: '{name}' has {found.st_size:,} bytes; the limit is "
                f"{MAX_INCLUDE_BYTES:,} (8 MiB)")
    return None
