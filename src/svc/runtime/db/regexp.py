r"""`x REGEXP pattern` on both databases, with one dialect of patterns: RE2's (rules/patterns.py).

SQLite parses the operator but has no function behind it: every connection gets `regexp`
(`sqlite_regexp`), which matches with RE2, in time linear in the text whatever the pattern.
PostgreSQL's operator is `~` (sql_text.py rewrites the text); a pattern sent as the
placeholder right after REGEXP is compiled by RE2 first (`for_postgres`), so a pattern
SQLite refuses is refused there too, before anything is sent (a transaction stays usable).

The two engines read most patterns alike (classes, quantifiers, alternation, groups, anchors,
`\d`, `\s`, `(?i)` at the start). Where they differ, svc keeps one meaning:

- a repetition count above 255 (`a{300}`), which PostgreSQL cannot compile, is refused on
  both databases (`_check`);
- `\b` and `\B` (a word boundary, and not one, in RE2) mean a backspace and nothing in
  PostgreSQL's dialect, whose word boundaries are `\y` and `\Y`: the pattern sent to
  PostgreSQL has them rewritten (`_check`).

Others remain, as the reference says: on PostgreSQL `.` also matches a newline, and `\w`
letters beyond ASCII; RE2 features PostgreSQL lacks (`(?P<name>...)`, `\pL`, `\Q...\E`,
flags after the start) are refused there with PostgreSQL's message (SQLSTATE 2201B, errors.py).

A bad pattern is the program's client's mistake, not the database's: an `invalid` error (400),
`invalid regular expression: ...`, on both databases; PostgreSQL's own refusal (SQLSTATE
2201B, a pattern RE2 takes and PostgreSQL does not) is mapped to it (errors.py).

An SQLite function cannot return an error, only raise, and sqlite3 then reports "user-defined
function raised exception"; the error the function meant is left for the thread's `_execute`
(`take_failure`), which answers it instead. Each connection is used by its own thread only.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from svc.rules import patterns
from svc.runtime.db.errors import shorten
from svc.runtime.lib.support import SvcError

#: The prefix of every bad-pattern message, on both databases (PostgreSQL's own says it too).
BAD_PATTERN = "invalid regular expression"

_failure = threading.local()  # the error a failing `sqlite_regexp` meant, on its thread


#: PostgreSQL's largest repetition count (RE_DUP_MAX); RE2 takes up to 1000.
MAX_REPEAT = 255
_COUNT = re.compile(r"\{(\d+)(?:,(\d*))?\}")

#: Patterns checked (RE2's compiled pattern, PostgreSQL's text) by text; bounded, since a
#: client may send a new pattern with every request.
_KNOWN_LIMIT = 256
_known: dict[str, tuple[Any, str]] = {}


def _checked(pattern: str) -> tuple[Any, str]:
    """(the pattern compiled by RE2, its text for PostgreSQL), or a PatternError."""
    found = _known.get(pattern)
    if found is None:
        compiled = patterns.compiled_at_run_time(pattern)
        found = (compiled, _check(pattern))
        if len(_known) >= _KNOWN_LIMIT:
            _known.clear()
        _known[pattern] = found
    return found


def _check(pattern: str) -> str:
    r"""A pattern RE2 compiled, for PostgreSQL: its repetition counts checked against
    MAX_REPEAT (a PatternError), its `\b` and `\B` outside brackets written `\y`, `\Y`."""
    out: list[str] = []
    i, n, in_class = 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            d = pattern[i + 1]
            end = i + 2
            if d == "Q":  # \Q...\E: literal text
                stop = pattern.find("\\E", end)
                end = n if stop < 0 else stop + 2
            elif d in "xpP" and end < n and pattern[end] == "{":  # \x{41}, \p{Greek}
                end = pattern.find("}", end) + 1 or n
            elif d in "bB" and not in_class:
                out.append("\\y" if d == "b" else "\\Y")
                i = end
                continue
            out.append(pattern[i:end])
            i = end
            continue
        if in_class:
            if pattern.startswith("[:", i):  # [:alpha:] inside brackets
                stop = pattern.find(":]", i + 2)
                if stop >= 0:
                    out.append(pattern[i:stop + 2])
                    i = stop + 2
                    continue
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            out.append(c)
            i += 1
            if pattern.startswith("^", i):
                out.append("^")
                i += 1
            if pattern.startswith("]", i):  # a ] first in brackets is itself
                out.append("]")
                i += 1
            continue
        elif c == "{":
            count = _COUNT.match(pattern, i)
            if count is not None and any(int(x) > MAX_REPEAT for x in count.groups() if x):
                raise patterns.PatternError(
                    f"repetition count above {MAX_REPEAT}: {count.group(0)}", i)
        out.append(c)
        i += 1
    return "".join(out)


def sqlite_regexp(pattern, text):
    """SQLite's `regexp(pattern, text)`, which `text REGEXP pattern` calls: whether the
    pattern matches somewhere in the text; NULL when either is NULL."""
    if pattern is None or text is None:
        return None
    if type(pattern) is not str or type(text) is not str:
        which, value = ("pattern", pattern) if type(pattern) is not str else ("value", text)
        _failure.error = SvcError(
            "database", f"REGEXP compares text with a text pattern, and its {which} is "
                        f"{_SQL_TYPES.get(type(value), type(value).__name__)}")
        raise ValueError(_failure.error.message)
    try:
        return _checked(pattern)[0].search(text) is not None
    except patterns.PatternError as exc:
        _failure.error = SvcError("invalid", f"{BAD_PATTERN}: {exc.reason}")
        raise ValueError(_failure.error.message) from None


_SQL_TYPES = {int: "INTEGER", float: "REAL", bytes: "BLOB"}


def take_failure(sql: str) -> SvcError | None:
    """The error the last failing `sqlite_regexp` of this thread meant, with the SQL for the
    log (once: it is taken)."""
    error = getattr(_failure, "error", None)
    if error is None:
        return None
    _failure.error = None
    return SvcError(error.kind, error.message,
                    detail=f"{error.kind} error: {error.message} (in SQL: {shorten(sql)})")


def for_postgres(pattern, sql: str):
    r"""A REGEXP pattern argument as PostgreSQL gets it (`\b` written `\y`, ...), or the
    `invalid` error of one RE2 refuses. Any other value (NULL, a number) is left as it is,
    for the server to judge."""
    if type(pattern) is not str:
        return pattern
    try:
        return _checked(pattern)[1]
    except patterns.PatternError as exc:
        message = f"{BAD_PATTERN}: {exc.reason}"
        return SvcError("invalid", message,
                        detail=f"invalid error: {message} (in SQL: {shorten(sql)})")
