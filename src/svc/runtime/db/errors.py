"""The errors every database backend returns (as values, never raised to svc code).

Both backends speak in the same kinds, so one program behaves the same on SQLite and on
PostgreSQL: a failing statement is a `database` error naming the SQL, a database that is
gone or a server that is stopping is `busy` (503).
"""

from __future__ import annotations

from svc.runtime.db import constraints
from svc.runtime.support import SvcError


def shutting_down() -> SvcError:
    return SvcError("busy", "shutting down")


def shorten(sql: str, limit: int = 200) -> str:
    """The SQL as one line, cut at `limit` characters, for error messages and logs."""
    sql = " ".join(str(sql).split())
    return sql if len(sql) <= limit else sql[:limit] + "..."


def statement_failed(exc: BaseException, sql: str) -> SvcError:
    """A statement the database refused: the database's reason and the SQL. A violated
    constraint is `conflict` or `invalid` instead (constraints.py), with both in the log."""
    detail = f"{exc} (in SQL: {shorten(sql)})"
    category = constraints.category_of(exc)
    if category is not None:
        return constraints.constraint_error(category, detail)
    return SvcError("database", detail)
