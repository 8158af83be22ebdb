"""What every database handle offers, whichever database is behind it.

The builtins in `svc.runtime.db` only ever call `_submit(op, sql, args, cls)`, which returns
an awaitable of the result (a value or an `SvcError`, never an exception for database
problems). A `Db` and a `Tx` (a transaction on one) both have it, which is how `db_exec`,
`db_all` and `db_one` accept either. The arguments come ready to send (args.py): a
`view[bytes]` already copied into bytes (its buffer may be reused once its request ends, while
an SQLite job may run later), a str never holding a NUL, a JSON value encoded (on SQLite, Lists
and JSON values already as their text; PostgreSQL's placeholders are written by postgres.py).
"""

from __future__ import annotations

from svc.runtime.lib.support import SvcError

#: Job operations: run a statement for its change count, or a query for all rows or one;
#: run several statements (a migration step); begin, commit or roll back a transaction.
EXEC, ALL, ONE, SCRIPT = "exec", "all", "one", "script"
BEGIN, COMMIT, ROLLBACK = "begin", "commit", "rollback"


class Db:
    """A database handle (SQLite file or PostgreSQL pool). `dialect` names the database.

    `_holders`: the transactions begun on it by svc code and maybe still open, by the task
    that began each (transactions.py): that task's statements on the `Db` itself are refused.
    """

    __slots__ = ("__weakref__", "_holders")
    dialect = ""

    def __init__(self) -> None:
        self._holders: dict[object, Tx] = {}

    def _submit(self, op: str, sql: str, args: tuple, cls: type | None):
        raise NotImplementedError

    async def _begin(self) -> Tx | SvcError:
        """Start a transaction (`db_begin`); the caller watches its owner (transactions.py)."""
        raise NotImplementedError


#: The state of a transaction that may still be used.
OPEN = "open"


class Tx:
    """A transaction on one `Db`: statements given it run inside it until it is finished.

    `state` is OPEN, or says how it finished ("committed", "rolled back", "rolled back because
    its request ended"); a finished Tx answers every use with a `database` error.
    """

    __slots__ = ("db", "state", "site", "owner")

    #: A Tx is never held against itself: a statement given it always runs (db_exec, ...).
    _holders = None

    def __init__(self, db: Db) -> None:
        self.db = db
        self.state = OPEN
        self.site = ""  # the .svc "file:line" of its db_begin, when svc code began it
        self.owner: object = None  # the task that began it, while it is in `db._holders`

    @property
    def dialect(self) -> str:
        return self.db.dialect

    def finished_error(self) -> SvcError:
        return SvcError("database", f"this transaction is finished: it was {self.state}")

    def _submit(self, op: str, sql: str, args: tuple, cls: type | None):
        raise NotImplementedError

    async def _end(self, op: str) -> None | SvcError:
        """COMMIT or ROLLBACK (`db_commit`, `db_rollback`); the Tx is finished either way."""
        raise NotImplementedError

    def _abandon(self, why: str) -> None:
        """Roll back, without waiting, a transaction still open: its owner is gone."""
        raise NotImplementedError
