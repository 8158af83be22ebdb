"""The server's stderr log: one access line per request, and error details, buffered.

Lines are collected in memory and written with one `write` per sweep tick (or when the
buffer grows large), so logging does not cost a syscall per request. `SVC_LOG=quiet`
turns off the access lines; error details are always written, since they are the only
place a 500's cause appears.
"""

from __future__ import annotations

import sys
from time import perf_counter

FLUSH_AT = 512


class ServerLog:
    __slots__ = ("quiet", "lines", "stream")

    def __init__(self, quiet: bool = False, stream=None) -> None:
        self.quiet = quiet
        self.lines: list[str] = []
        self.stream = stream

    def access(self, method: str, target: bytes, status: int, started: float) -> None:
        """`GET /search?q=x 200 0.4ms`: method, request target as received, status, duration.

        The target stays bytes until here, so a quiet server never decodes it."""
        if self.quiet:
            return
        lines = self.lines
        lines.append(f"{method} {target.decode('latin-1')} {status} "
                     f"{(perf_counter() - started) * 1000:.1f}ms\n")
        if len(lines) >= FLUSH_AT:
            self.flush()

    def error(self, message: str) -> None:
        self.lines.append(message if message.endswith("\n") else message + "\n")
        if len(self.lines) >= FLUSH_AT:
            self.flush()

    def flush(self) -> None:
        if not self.lines:
            return
        text = "".join(self.lines)
        self.lines.clear()
        stream = self.stream or sys.stderr
        try:
            stream.write(text)
            stream.flush()
        except (OSError, ValueError):  # stderr closed: nothing better to do than drop the lines
            pass
