"""The SQLite schema of a program: its migrations applied to a private in-memory database,
where each statement is prepared (never run) and described.

APSW rather than the standard `sqlite3` module, because a checker needs what only SQLite's
C interface tells: a prepared statement's columns with their declared types and the table
column each comes from (`description_full`), how many parameters it has, and where in the
text an error is (`error_offset`). Nothing is written anywhere: the database lives in memory
for one check.

(APSW carries its own SQLite, usually newer than the one the runtime's `sqlite3` links: the
checker accepts the syntax of the newer one. The decisions page says so.)
"""

from __future__ import annotations

import apsw
import apsw.ext

from svc.rules import patterns
from svc.compiler.sql.schema import (
    MigrationFile, MigrationProblem, Prepared, ResultColumn, SqlProblem,
)


class SqliteSchema:
    dialect = "sqlite"

    def __init__(self) -> None:
        self.db = apsw.Connection(":memory:")
        self.db.execute("PRAGMA foreign_keys = ON")
        # as the runtime gives every connection (svc.runtime.db.regexp): so `x REGEXP ?1`
        # prepares, and a migration's CHECK or seed row using it runs
        self.db.create_scalar_function("regexp", _regexp, 2, deterministic=True)
        self.level = f"prepared in an in-memory SQLite {apsw.sqlite_lib_version()} database"
        self._not_null: dict[str, dict[str, bool]] = {}

    def apply(self, migration: MigrationFile) -> MigrationProblem | None:
        """Run one migration file, statement by statement (so a failure names its line)."""
        for start, statement in split_statements(migration.text):
            try:
                self.db.execute(statement)
            except apsw.Error as exc:
                offset = getattr(exc, "error_offset", -1)
                at = start + (offset if isinstance(offset, int) and offset >= 0 else
                              len(statement) - len(statement.lstrip()))
                line = migration.text.count("\n", 0, at) + 1
                return MigrationProblem(migration.path, line, _words(exc))
        return None

    def prepare(self, sql: str) -> Prepared | SqlProblem:
        try:
            info = apsw.ext.query_info(self.db, sql)
        except apsw.Error as exc:
            offset = getattr(exc, "error_offset", -1)
            return SqlProblem(_words(exc), offset if isinstance(offset, int) and offset >= 0
                              else None)
        columns = tuple(self._column(*described) for described in info.description_full or ())
        return Prepared(columns, info.bindings_count)

    def _column(self, name: str, decltype: str | None, _database: str | None,
                table: str | None, origin: str | None) -> ResultColumn:
        nullable = None
        if table is not None and origin is not None:
            not_null = self._table_not_null(table).get(origin)
            nullable = None if not_null is None else not not_null
        return ResultColumn(name, decltype.lower() if decltype else None, nullable)

    def _table_not_null(self, table: str) -> dict[str, bool]:
        """Per column of `table`: whether it can never be NULL (NOT NULL, or the INTEGER
        PRIMARY KEY that is the rowid). Nothing for a table-valued function (`json_each`):
        its columns declare nothing, so whether they hold NULL is unknown."""
        found = self._not_null.get(table)
        if found is None and table not in self.tables():
            found = self._not_null[table] = {}
        if found is None:
            rows = self.db.execute(f"PRAGMA table_info({_quoted(table)})").fetchall()
            found = {str(name): bool(notnull) or (pk == 1 and str(decl or "").upper() == "INTEGER")
                     for _cid, name, decl, notnull, _default, pk in rows}
            self._not_null[table] = found
        return found

    def tables(self) -> dict[str, tuple[str, ...]]:
        names = [row[0] for row in self.db.execute(
            "SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') "
            "AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        return {name: tuple(row[1] for row in self.db.execute(
            f"PRAGMA table_info({_quoted(name)})")) for name in names}

    def close(self) -> None:
        self.db.close()


def open_sqlite_schema(migrations: list[MigrationFile]) -> SqliteSchema | MigrationProblem:
    """The schema the migrations build, in order; or the first that fails to apply."""
    schema = SqliteSchema()
    for migration in migrations:
        problem = schema.apply(migration)
        if problem is not None:
            schema.close()
            return problem
    return schema


def split_statements(text: str) -> list[tuple[int, str]]:
    """(offset, text) of each statement of a script: cut at each `;` after which SQLite
    itself says the statement is complete (so a trigger's body, a literal or a comment
    holding `;` stays whole)."""
    found: list[tuple[int, str]] = []
    start = 0
    at = text.find(";")
    while at >= 0:
        chunk = text[start:at + 1]
        if apsw.complete(chunk):
            if chunk.strip(" \t\r\n;"):
                found.append((start, chunk))
            start = at + 1
        at = text.find(";", at + 1)
    if text[start:].strip():
        found.append((start, text[start:]))
    return found


def _regexp(*args: object) -> int | None:
    """SQLite's `regexp(pattern, text)`: RE2's match anywhere (the runtime's semantics)."""
    pattern, text = args
    if not isinstance(pattern, str) or not isinstance(text, str):
        return None
    return int(patterns.compiled(pattern).search(text) is not None)


def _words(exc: apsw.Error) -> str:
    return str(exc).split(": ", 1)[-1] if str(exc).startswith(type(exc).__name__) else str(exc)


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
