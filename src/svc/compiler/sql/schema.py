"""What the SQL checker asks of a database: the schema a program's migrations build, one per
dialect, able to prepare a statement and describe it.

Plain data in and out, so the checks (check_sql.py) are the same for every dialect and every
level of checking:

- SQLite (sqlite_schema.py): the migrations applied to an in-memory database, each statement
  prepared there (never run).
- PostgreSQL (postgres_schema.py): the migrations applied in a private temporary cluster (or the
  database of `--database-url`), each statement prepared and described there; with neither, a
  syntax-only check by PostgreSQL's own parser (`level` says which ran).

The SQL a schema prepares is already the text the runtime would send (placeholders written for
the dialect, sql_params.py), so what the check accepts is what the database will accept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class MigrationFile:
    """One migration step: a file of the program's declared migrations, in the order applied."""

    path: str  # as the user names it (relative to the project when possible)
    text: str


@dataclass(frozen=True)
class MigrationProblem:
    """A migration that failed to apply: its file, the 1-based line of the failing statement
    (or of the error's position where the database gives one), and the database's words."""

    file: str
    line: int
    message: str


@dataclass(frozen=True)
class SqlProblem:
    """A statement the database refused: its words (`no such column: titel`) and, where it
    says where, the 0-based offset into the SQL text that was prepared."""

    message: str
    offset: int | None = None


@dataclass(frozen=True)
class ResultColumn:
    """One column of a statement's result as the database describes it.

    `db_type` is the database's type name in lower case (`integer`, `text`, `bigint`,
    `jsonb`; SQLite's declared type of a table column), None where it cannot tell (SQLite
    knows no type for an expression). `nullable` is False for a column read straight from a
    table column declared NOT NULL (or a primary key that cannot be NULL), True for a table
    column that may be NULL, and None where the database cannot tell (an expression)."""

    name: str
    db_type: str | None = None
    nullable: bool | None = None


@dataclass(frozen=True)
class Prepared:
    """A statement the database accepted: its result columns (empty for a statement that
    returns no rows; None where the level cannot describe them, a syntax-only check) and the
    number of parameters it counted (None where it cannot tell)."""

    columns: tuple[ResultColumn, ...] | None
    parameters: int | None


class Schema(Protocol):
    """A dialect's schema, built from the migrations; prepared statements never change it."""

    dialect: str  # "sqlite" or "postgresql"
    level: str  # how it checks, for a user: "prepared in an in-memory SQLite database"

    def prepare(self, sql: str) -> Prepared | SqlProblem:
        """Prepare (never run) one statement of this dialect's text and describe it."""
        ...

    def tables(self) -> dict[str, tuple[str, ...]]:
        """Each table (and view) the migrations made, with its columns in order: what a
        misspelt name is compared with. Empty where the level cannot tell."""
        ...

    def close(self) -> None:
        """Release what the schema holds (a connection, a cluster)."""
        ...
