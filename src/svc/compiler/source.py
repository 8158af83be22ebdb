"""Source files and spans: where in which file a token, node or diagnostic is.

Lines and columns are 1-based; columns count characters (not bytes) so carets line up under
the source text as the user sees it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Span:
    """A half-open range [start, end) in one file, as (line, column) pairs, both 1-based."""

    file: str
    line: int
    col: int
    end_line: int
    end_col: int

    def to(self, other: "Span") -> "Span":
        """The span from the start of this one to the end of `other` (same file)."""
        return Span(self.file, self.line, self.col, other.end_line, other.end_col)


@dataclass
class SourceFile:
    """One `.svc` file's text, split into lines for diagnostics."""

    path: str  # as shown to the user (relative to the working directory where possible)
    text: str
    lines: list[str] = field(init=False)

    def __post_init__(self) -> None:
        # Only \n, \r\n and \r end a line (not str.splitlines' form feed, U+2028, ...), so
        # the lexer and the caret renderer agree on line numbers.
        self.lines = _LINE_BREAK.split(self.text)
        if self.lines and self.lines[-1] == "":
            self.lines.pop()

    def line_text(self, line: int) -> str:
        """The text of 1-based `line`, or "" past the end (e.g. an error at end of file)."""
        return self.lines[line - 1] if 1 <= line <= len(self.lines) else ""
