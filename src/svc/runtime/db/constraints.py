"""Constraint violations as the errors a client should see, the way PostgREST maps them.

A UNIQUE or PRIMARY KEY violation means the row clashes with one already stored, and a
FOREIGN KEY violation that a row it refers to is missing (or still referred to): both are
`conflict` (409). A NOT NULL or CHECK violation means the values sent are not acceptable:
`invalid` (400). The reason names the kind of constraint only; the database's own message,
which names tables and columns, and the SQL go to the server log as the error's detail.

The mapping is by constraint category, so every backend shares it: SQLite tells the
category by its extended error code, PostgreSQL by its SQLSTATE (`category_of`).
"""

from __future__ import annotations

from enum import Enum

from svc.runtime.lib.support import SvcError


class Constraint(Enum):
    UNIQUE = "UNIQUE"
    PRIMARY_KEY = "PRIMARY KEY"
    FOREIGN_KEY = "FOREIGN KEY"
    NOT_NULL = "NOT NULL"
    CHECK = "CHECK"


#: Category → (error kind, reason the client reads).
KIND_AND_REASON = {
    Constraint.UNIQUE: ("conflict", "conflicts with an existing row"),
    Constraint.PRIMARY_KEY: ("conflict", "conflicts with an existing row"),
    Constraint.FOREIGN_KEY: ("conflict", "violates a FOREIGN KEY constraint"),
    Constraint.NOT_NULL: ("invalid", "violates a NOT NULL constraint"),
    Constraint.CHECK: ("invalid", "violates a CHECK constraint"),
}

#: SQLite's extended result codes, by name (`sqlite3.Error.sqlite_errorname`).
_SQLITE_NAMES = {
    "SQLITE_CONSTRAINT_UNIQUE": Constraint.UNIQUE,
    "SQLITE_CONSTRAINT_PRIMARYKEY": Constraint.PRIMARY_KEY,
    "SQLITE_CONSTRAINT_FOREIGNKEY": Constraint.FOREIGN_KEY,
    "SQLITE_CONSTRAINT_NOTNULL": Constraint.NOT_NULL,
    "SQLITE_CONSTRAINT_CHECK": Constraint.CHECK,
}

#: PostgreSQL's SQLSTATE codes of the integrity constraint violation class (23).
_SQLSTATES = {
    "23505": Constraint.UNIQUE,
    "23503": Constraint.FOREIGN_KEY,
    "23502": Constraint.NOT_NULL,
    "23514": Constraint.CHECK,
}


def category_of(exc: BaseException) -> Constraint | None:
    """The constraint a database exception reports as violated, or None for any other error.
    Python's sqlite3 turns on extended result codes, which name the category
    (`sqlite_errorname`); PostgreSQL drivers give the SQLSTATE (`sqlstate` in psycopg and
    asyncpg, `pgcode` in psycopg2)."""
    name = getattr(exc, "sqlite_errorname", None)
    if name:
        return _SQLITE_NAMES.get(name)
    sqlstate = getattr(exc, "sqlstate", None) or getattr(exc, "pgcode", None)
    return _SQLSTATES.get(sqlstate) if isinstance(sqlstate, str) else None


def constraint_error(category: Constraint, detail: str) -> SvcError:
    """The svc error for a violated constraint; `detail` (the database's message and the
    SQL) is only logged, never answered."""
    kind, reason = KIND_AND_REASON[category]
    return SvcError(kind, reason, detail=f"{kind} error: {detail}")
