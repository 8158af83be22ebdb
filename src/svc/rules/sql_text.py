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
          lists: frozenset[int] = frozenset()) -> tuple[str, int, int]:
    """(the text with each placeholder rewritten, the number of statements, the number of
    the first List placeholder (`lists`) not alone in `IN (...)`, or 0)."""
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
            j = i + 1
            while j < n and sql[j].isdigit():
                j += 1
            number = int(sql[i + 1:j]) if j > i + 1 else highest + 1
            highest = max(highest, number)
            if number in lists and not misplaced and not in_parentheses(sql, i, j):
                misplaced = number
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
            j = i + 1
            while j < n and sql[j].isdigit():
                j += 1
            number = int(sql[i + 1:j]) if j > i + 1 else highest + 1
            highest = max(highest, number)
            found.append((number, i, j))
            i = j
            continue
        i += 1
    return found


def statement_count(sql: str) -> int:
    """How many statements the text holds (blanks and comments alone are none)."""
    return scan(sql)[1]
