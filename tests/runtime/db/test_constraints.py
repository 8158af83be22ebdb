"""The constraint mapping shared by the database backends: real SQLite violations by
category, PostgreSQL's SQLSTATE codes, and what the client and the log each get."""

from __future__ import annotations

import sqlite3

import pytest

from svc.runtime.db.constraints import Constraint, category_of, constraint_error
from svc.runtime.db.errors import statement_failed
from svc.runtime.http.responses import error_for

# Its subject is the compiled request path: `make test` runs it again on the pure-Python modules.
pytestmark = pytest.mark.compiled_path

SCHEMA = [
    "PRAGMA foreign_keys = ON",
    "CREATE TABLE p (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, n INT CHECK (n > 0))",
    "CREATE TABLE c (id INTEGER PRIMARY KEY, p INT REFERENCES p(id))",
    "INSERT INTO p VALUES (1, 'a', 1)",
]


def _violation(sql: str) -> sqlite3.Error:
    conn = sqlite3.connect(":memory:")
    for statement in SCHEMA:
        conn.execute(statement)
    with pytest.raises(sqlite3.Error) as caught:
        conn.execute(sql)
    conn.close()
    return caught.value


@pytest.mark.parametrize("sql, category, kind, status", [
    ("INSERT INTO p VALUES (1, 'b', 1)", Constraint.PRIMARY_KEY, "conflict", 409),
    ("INSERT INTO p VALUES (2, 'a', 1)", Constraint.UNIQUE, "conflict", 409),
    ("INSERT INTO c VALUES (1, 99)", Constraint.FOREIGN_KEY, "conflict", 409),
    ("INSERT INTO p VALUES (3, NULL, 1)", Constraint.NOT_NULL, "invalid", 400),
    ("INSERT INTO p VALUES (4, 'd', 0)", Constraint.CHECK, "invalid", 400),
])
def test_sqlite_violations_map_by_category(sql, category, kind, status):
    exc = _violation(sql)
    assert category_of(exc) is category
    err = statement_failed(exc, sql)
    assert err.kind == kind
    answered, body, logged = error_for(err)
    assert answered == status
    assert b"INSERT" not in body and b" p." not in body  # no SQL, no table names
    assert logged.startswith(f"{kind} error: {exc}") and sql in logged


def test_other_statement_failures_stay_database_errors():
    exc = _violation("INSERT INTO nowhere VALUES (1)")
    assert category_of(exc) is None
    err = statement_failed(exc, "INSERT INTO nowhere VALUES (1)")
    assert err.kind == "database"
    assert error_for(err)[:2] == (500, b'{"error":"internal error"}')


class _PostgresError(Exception):
    """What psycopg's and asyncpg's errors carry: the SQLSTATE as `sqlstate`."""

    def __init__(self, sqlstate: str) -> None:
        super().__init__(sqlstate)
        self.sqlstate = sqlstate


@pytest.mark.parametrize("sqlstate, category", [
    ("23505", Constraint.UNIQUE), ("23503", Constraint.FOREIGN_KEY),
    ("23502", Constraint.NOT_NULL), ("23514", Constraint.CHECK), ("42P01", None),
])
def test_postgresql_sqlstates_map_to_the_same_categories(sqlstate, category):
    assert category_of(_PostgresError(sqlstate)) is category


def test_the_reason_names_the_constraint_kind_only():
    reasons = {c: constraint_error(c, "x").message for c in Constraint}
    assert reasons == {
        Constraint.UNIQUE: "conflicts with an existing row",
        Constraint.PRIMARY_KEY: "conflicts with an existing row",
        Constraint.FOREIGN_KEY: "violates a FOREIGN KEY constraint",
        Constraint.NOT_NULL: "violates a NOT NULL constraint",
        Constraint.CHECK: "violates a CHECK constraint",
    }
    assert constraint_error(Constraint.UNIQUE, "x") == constraint_error(Constraint.UNIQUE, "y")
