"""Reading SQL text without parsing it: where its placeholders and statements are.

Only a `?` outside string literals, quoted identifiers, dollar-quoted strings and comments is
a placeholder, and only a `;` there ends a statement, so one scan answers both. A bare `?` is
numbered one past the highest number so far, as SQLite numbers it. The runtime rewrites the
placeholders for each database (svc.runtime.db.sql_text); the SQL checker rewrites them the
same way before preparing a statement (svc.compiler.sql), and counts them.
"""

from __future__ import annotations

import re
from typing import Callable

_DOLLAR_TAG = re.compile(r"\$([A-Za-z_][A-Za-z_0-9]*)?\$")


def in_parentheses(sql: str, start: int, end: int) -> bool:
    """Whether the placeholder at sql[start:end] stands alone in the parentheses of an
    `IN (...)`: only blanks between it and them, and the word IN before them."""
    before = sql[:start].rstrip()
    if not before.endswith("(") or not sql[end:].lstrip().startswith(")"):
        return False
    before = before[:-1].rstrip()
    return before[-2:].upper() == "IN" and not (before[-3:-2].isalnum() or
                                                before[-3:-2] == "_")


def scan(sql: str, placeholder: Callable[[int], str] | None = None,
          lists: frozenset[int] = frozenset(), *,
          in_list: Callable[[int], str] | None = None) -> tuple[str, int, int]:
    """(the text with each placeholder rewritten, the number of statements, the number of
    the first List placeholder (`lists`) not alone in `IN (...)`, or 0). With `in_list`, a
    placeholder of `lists` alone in `IN (...)` is rewritten by it, any other by `placeholder`."""
    out: list[str] = []
    statements = 0
    has_text = False  # the current statement holds something besides blanks and comments
    highest = 0
    misplaced = 0
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        end = skip_quoted(sql, i)
        if end is not None:
            out.append(sql[i:end])
            if not sql.startswith(("--", "/*"), i):
                has_text = True
            i = end
            continue
        if c == "?":
            number, j = read_placeholder(sql, i, highest)
            highest = max(highest, number)
            alone = number in lists and in_parentheses(sql, i, j)
            if number in lists and not misplaced and not alone:
                misplaced = number
            if alone and in_list is not None:
                out.append(in_list(number))
            else:
                out.append(f"${number}" if placeholder is None else placeholder(number))
            has_text = True
            i = j
            continue
        if c == ";":
            if has_text:
                statements += 1
            has_text = False
        elif not c.isspace():
            has_text = True
        out.append(c)
        i += 1
    if has_text:
        statements += 1
    return "".join(out), statements, misplaced


def skip_quoted(sql: str, i: int) -> int | None:
    """The end of the literal, quoted identifier or comment starting at `i`, or None."""
    c = sql[i]
    if c in "'\"":
        j = i + 1
        while True:
            j = sql.find(c, j)
            if j < 0:
                return len(sql)
            if sql.startswith(c + c, j):  # a doubled quote stands for itself
                j += 2
                continue
            return j + 1
    if sql.startswith("--", i):
        j = sql.find("\n", i)
        return len(sql) if j < 0 else j + 1
    if sql.startswith("/*", i):
        depth, j = 0, i
        while j < len(sql):  # PostgreSQL's block comments nest
            if sql.startswith("/*", j):
                depth, j = depth + 1, j + 2
            elif sql.startswith("*/", j):
                depth, j = depth - 1, j + 2
                if depth == 0:
                    return j
            else:
                j += 1
        return len(sql)
    if c == "$" and (i == 0 or not (sql[i - 1].isalnum() or sql[i - 1] == "_")):
        tag = _DOLLAR_TAG.match(sql, i)
        if tag is not None:
            j = sql.find(tag.group(0), tag.end())
            return len(sql) if j < 0 else j + len(tag.group(0))
    return None


# --- REGEXP -----------------------------------------------------------------------------------
# `x REGEXP p` is SQLite's operator (svc gives it a function, svc.runtime.db.sqlite); PostgreSQL
# spells it `x ~ p` (and `x NOT REGEXP p` `x !~ p`), so a program writes REGEXP on both.

def postgres_operators(sql: str) -> str:
    """`sql` with each REGEXP operator outside literals, quoted names and comments written as
    PostgreSQL's: `REGEXP` as `~`, `NOT REGEXP` as `!~`."""
    found = _regexps(sql)
    if not found:
        return sql
    out, last = [], 0
    for start, end, _number in found:
        out.append(sql[last:start])
        out.append("!~" if sql[start].upper() == "N" else "~")
        last = end
    out.append(sql[last:])
    return "".join(out)


def regexp_placeholders(sql: str) -> tuple[int, ...]:
    """The numbers of the placeholders written right after a REGEXP operator: the patterns
    (`name REGEXP ?2` gives 2)."""
    return tuple(number for _start, _end, number in _regexps(sql) if number)


def _regexps(sql: str) -> list[tuple[int, int, int]]:
    """(start, end, pattern placeholder or 0) of each REGEXP operator, from its NOT if any."""
    if "regexp" not in sql.lower():
        return []
    numbers = {start: number for number, start, _end in placeholders(sql)}
    found: list[tuple[int, int, int]] = []
    i, n = 0, len(sql)
    while i < n:
        end = skip_quoted(sql, i)
        if end is not None:
            i = end
            continue
        if sql[i].isalpha() or sql[i] == "_":
            j = i
            while j < n and (sql[j].isalnum() or sql[j] in "_$"):
                j += 1
            if sql[i:j].upper() == "REGEXP":
                after = j
                while after < n and sql[after].isspace():
                    after += 1
                found.append((_not_before(sql, i), j, numbers.get(after, 0)))
            i = j
            continue
        i += 1
    return found


def _not_before(sql: str, i: int) -> int:
    """Where the word NOT before position `i` starts (only blanks between), else `i`."""
    j = i
    while j > 0 and sql[j - 1].isspace():
        j -= 1
    if j >= 3 and sql[j - 3:j].upper() == "NOT" and j < i and not (
            j > 3 and (sql[j - 4].isalnum() or sql[j - 4] in "_$")):
        return j - 3
    return i


def read_placeholder(sql: str, i: int, highest: int) -> tuple[int, int]:
    """(the number, the end) of the placeholder `?` or `?n` at `i`: a bare `?` is numbered one
    past `highest`, the highest number before it, as SQLite numbers it."""
    j = i + 1
    while j < len(sql) and sql[j].isdigit():
        j += 1
    return (int(sql[i + 1:j]) if j > i + 1 else highest + 1), j


def placeholders(sql: str) -> list[tuple[int, int, int]]:
    """(number, start, end) of each placeholder of the text, in order, numbered as `scan`
    numbers them (what the SQL checker compares with a call's arguments)."""
    found: list[tuple[int, int, int]] = []
    highest = 0
    i, n = 0, len(sql)
    while i < n:
        end = skip_quoted(sql, i)
        if end is not None:
            i = end
            continue
        if sql[i] == "?":
            number, j = read_placeholder(sql, i, highest)
            highest = max(highest, number)
            found.append((number, i, j))
            i = j
            continue
        i += 1
    return found


def statement_count(sql: str) -> int:
    """How many statements the text holds (blanks and comments alone are none)."""
    return scan(sql)[1]
