"""What every database handle offers, whichever database is behind it.

The builtins in `svc.runtime.db` only ever call `_submit(op, sql, args, cls)`, which returns
an awaitable of the result (a value or an `SvcError`, never an exception for database
problems). A `Db` and a `Tx` (a transaction on one) both have it, which is how `db_exec`,
`db_all` and `db_one` accept either.
"""

from __future__ import annotations

#: Job operations: run a statement for its change count, or a query for all rows or one.
EXEC, ALL, ONE = "exec", "all", "one"


class Db:
    """A database handle (SQLite file or PostgreSQL pool). `dialect` names the database."""

    __slots__ = ("__weakref__",)
    dialect = ""

    def _submit(self, op: str, sql: str, args: tuple, cls: type | None):
        raise NotImplementedError
