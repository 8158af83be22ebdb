"""Diagnostics: compile errors with a position, rendered like rustc/gcc with a caret.

    error: unknown field 'titel' in class Task
      --> tasks.svc:12:21
       |
    12 |     return ok(Task(titel=title, done=False))
       |                    ^^^^^
"""

from __future__ import annotations

from dataclasses import dataclass

from svc.compiler.source import SourceFile, Span


@dataclass(frozen=True)
class Diagnostic:
    message: str
    span: Span
    # False for a line that may hold a secret (a secret in svc.toml's [config]): the
    # position is given, the line itself is not printed.
    shows_source: bool = True

    def sort_key(self) -> tuple:
        return (self.span.file, self.span.line, self.span.col)


#: Control characters (but tab) in a shown source line become U+FFFD, one for one, so a
#: stray escape byte cannot drive the user's terminal and the caret still lines up.
_UNPRINTABLE = {code: "\ufffd" for code in [*range(0x20), 0x7F] if code != 0x09}
#: In a message (which may quote a string literal) they are written as escapes instead, so
#: the message stays on its one line and says which character it was.
_ESCAPED = {code: repr(chr(code))[1:-1] for code in [*range(0x20), 0x7F]}


def escape_controls(text: str) -> str:
    """`text` with control characters written as escapes (`\\n`, `\\x1b`): one line, inert."""
    return text.translate(_ESCAPED)


def render(diagnostic: Diagnostic, source: SourceFile | None) -> str:
    """The diagnostic as text: message, location, source line and a caret under the span."""
    span = diagnostic.span
    gutter = " " * len(str(span.line))
    message = escape_controls(diagnostic.message)
    lines = [f"error: {message}", f"{gutter}--> {span.file}:{span.line}:{span.col}"]
    if not diagnostic.shows_source:
        source = None
    text = source.line_text(span.line).translate(_UNPRINTABLE) if source else ""
    if text or source is not None:
        width = span.end_col - span.col if span.end_line == span.line else len(text) - span.col + 1
        # Keep tabs before the caret, so it lines up under the source however tabs display.
        pad = "".join("\t" if c == "\t" else " " for c in text[:span.col - 1])
        caret = pad.ljust(span.col - 1) + "^" * max(1, width)
        lines += [f"{gutter} |", f"{span.line} | {text}", f"{gutter} | {caret}"]
    return "\n".join(lines)


def render_all(diagnostics: list[Diagnostic], sources: dict[str, SourceFile]) -> str:
    """Every diagnostic, sorted by file, line and column, each followed by a blank line, then
    a one-line summary (`error: 3 errors in app.svc`): what a failed command prints."""
    ordered = sorted(diagnostics, key=Diagnostic.sort_key)
    shown = "".join(f"{render(d, sources.get(d.span.file))}\n\n" for d in ordered)
    files = sorted({d.span.file for d in ordered})
    where = files[0] if len(files) == 1 else f"{len(files)} files"
    return f"{shown}error: {plural(len(ordered), 'error')} in {where}"


def plural(count: int, noun: str) -> str:
    """`1 file`, `2 files`."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
