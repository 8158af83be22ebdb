"""Regular expressions: the one dialect the checker checks and the runtime runs (RE2's).

svc's patterns are RE2's (the syntax of Go's `regexp`), matched by Google's RE2 engine in
linear time: no pattern, however written, can backtrack catastrophically, so no pattern can
hang a request (docs/decisions/language.md, "Regular expressions"). The price is what a backtracking
engine alone can do: backreferences and lookaround, which RE2 refuses as invalid.

Both the compiler (which refuses an invalid literal pattern with a diagnostic) and the runtime
(which compiles each pattern once, on first use) come here, so they cannot disagree.

A replacement (`replace_re`) names groups as Go and Rust do: `$1` or `${1}` by number (`$0` is
the whole match), `${name}` by name, `$$` is one `$`; any other `$` is itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any, Union

_COMPILED: dict[str, Any] = {}  # pattern -> compiled RE2 regexp; patterns are literals
_REFERENCE = re.compile(r"\$(?:\$|(\d+)|\{(\w+)\})")



@dataclass(frozen=True)
class Group:
    """A group reference in a replacement: its number, or its name."""
    ref: Union[int, str]

    def __str__(self) -> str:
        return f"${{{self.ref}}}"


#: A replacement, parsed: literal text and group references.
Piece = Union[str, Group]


class PatternError(Exception):
    """An invalid pattern: RE2's reason, and where in the pattern (0-based) when known."""

    def __init__(self, reason: str, offset: int | None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.offset = offset


def compiled(pattern: str) -> Any:
    """The compiled pattern, compiled on its first use and kept (a pattern is a literal of the
    program, so there are as many as the program has literals)."""
    found = _COMPILED.get(pattern)
    if found is None:
        found = _COMPILED[pattern] = _compile(pattern)
    return found


#: Patterns a program computes at run time (a REGEXP argument): kept as they are compiled, but
#: started over past this many, since a client could send a new one with every request.
RUN_TIME_PATTERNS = 256
_AT_RUN_TIME: dict[str, Any] = {}


def compiled_at_run_time(pattern: str) -> Any:
    """`compiled` for a pattern that is not a literal of the program (an invalid one is a
    PatternError each time, never kept): the cache is bounded."""
    found = _AT_RUN_TIME.get(pattern)
    if found is None:
        found = _compile(pattern)
        if len(_AT_RUN_TIME) >= RUN_TIME_PATTERNS:
            _AT_RUN_TIME.clear()
        _AT_RUN_TIME[pattern] = found
    return found


def problem(pattern: str) -> PatternError | None:
    """Why `pattern` is not a valid pattern, or None (the checker's question)."""
    try:
        compiled(pattern)
    except PatternError as exc:
        return exc
    return None


@cache
def _re2() -> Any:
    """RE2, imported when a first pattern is compiled (~15 ms), so that a program or a check
    without regular expressions does not pay for it."""
    import re2
    return re2


@cache
def _options() -> Any:
    options = _re2().Options()
    options.log_errors = False  # RE2 would print its own line on stderr for each bad pattern
    return options


def _compile(pattern: str) -> Any:
    re2 = _re2()
    try:
        return re2.compile(pattern, _options())
    except re2.error as exc:
        raise _pattern_error(pattern, exc) from None


def _pattern_error(pattern: str, exc: Exception) -> PatternError:
    """RE2 says "missing ): (a" (the reason, then the part of the pattern at fault): the
    reason in svc's words, and where that part starts."""
    text = exc.args[0] if exc.args else str(exc)
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    reason, _, fragment = str(text).partition(": ")
    offset = pattern.find(fragment) if fragment else -1
    if fragment:
        reason = f"{reason}: {fragment}"
    return PatternError(reason, offset if offset >= 0 else None)


def group_count(pattern: str) -> int:
    return int(compiled(pattern).groups)


def group_names(pattern: str) -> set[str]:
    return set(compiled(pattern).groupindex)


def parse_replacement(replacement: str) -> list[Piece]:
    """`"<$1> ${name} $$"` as its pieces: text and the groups it names."""
    pieces: list[Piece] = []
    last = 0
    for m in _REFERENCE.finditer(replacement):
        pieces.append(replacement[last:m.start()])
        ref = m.group(1) or m.group(2)
        if ref is None:
            pieces.append("$")
        else:
            pieces.append(Group(int(ref) if ref.isdigit() else ref))
        last = m.end()
    pieces.append(replacement[last:])
    return [p for p in pieces if p != ""]


def unknown_groups(pattern: str, pieces: list[Piece]) -> list[str]:
    """The group references of a replacement that `pattern` has no group for."""
    regexp = compiled(pattern)
    return [str(p) for p in pieces if isinstance(p, Group) and (
        p.ref > regexp.groups if isinstance(p.ref, int) else p.ref not in regexp.groupindex)]


def expand(pieces: list[Piece], match: Any) -> str:
    """The replacement of one match: a group that did not take part, or that the pattern
    does not have, is empty (as in Go and Rust)."""
    out = []
    for p in pieces:
        if isinstance(p, str):
            out.append(p)
        else:
            try:
                out.append(match.group(p.ref) or "")
            except (IndexError, KeyError, _re2().error):
                pass
    return "".join(out)
