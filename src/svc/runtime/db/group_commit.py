"""Group commit: the plain writes of one batch share one transaction, and so one fsync.

On a database file every autocommit statement waits for its own fsync (`synchronous=FULL`,
so that an answered write survives a power cut): about a millisecond each, which caps plain
writes near a thousand a second however fast the rest is. The database thread already takes
its jobs in batches (sqlite.py), and the jobs of one batch come from concurrent callers. So
the plain writes of a batch run together in one `BEGIN IMMEDIATE` ... `COMMIT`, and each is
answered only after the `COMMIT` that holds it returned: the durability promise is the one
of an autocommit statement (an answered write is on disk).

A statement that fails in the group undoes only itself, and gets its own error, as it would
alone: SQLite makes each statement atomic inside a transaction (a violated constraint rolls
back that statement's changes and leaves the transaction open), so no SAVEPOINT per statement
is needed. One would also change a statement's meaning with the timing: `INSERT OR FAIL`
keeps the rows it inserted before the failing one, alone and inside a transaction alike, and
rolling back to a savepoint would drop them only when the statement happened to share a
batch. A failure that ends the whole transaction (`INSERT OR ROLLBACK`, `RAISE(ROLLBACK)` in
a trigger, a full disk) answers its error, and the group's other statements, none of them
answered yet (their changes gone with the transaction), run again in a new group.

Which jobs join: `db_exec` of a statement that begins with INSERT, UPDATE, DELETE or REPLACE
(`joins_group`). Anything else in the batch (reads, a `db_one` or `db_all` of
`INSERT ... RETURNING`, schema changes, PRAGMA, VACUUM, a migration's script) runs on its own
as before: a statement that cannot run inside a transaction (VACUUM) must not fail for being
grouped, and a write that runs alone is merely not grouped, never wrong. Those run FIRST, in
their order, and the group after them: a read must never see a write of a group that could
still fail, and the order of one batch's jobs is free (a caller's next statement is submitted
only after the answer to its last, so jobs of one batch never depend on each other).

When grouping cannot help, each write runs alone, as without grouping: fewer than two writes
in the batch; a BEGIN that fails (another process holds the write lock past the busy
timeout); a COMMIT refused by a deferred constraint (rolled back, then each alone, so only
the statement at fault fails). A COMMIT that fails otherwise (an I/O error) answers each
statement of the group that had succeeded with that error: nothing of the group is kept.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from svc.runtime.db.base import EXEC
from svc.runtime.db.errors import statement_failed
from svc.runtime.lib.support import SvcError

#: The statements that join a group: plain writes, by their first word.
_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")
#: Whether each SQL text joins a group; bounded by the program's distinct SQL texts, and
#: cleared when a program that builds its SQL at run time makes it grow past this.
_CACHE_LIMIT = 4096
_joins: dict[str, bool] = {}

#: Runs one job on the connection: (conn, op, sql, args, cls) → its result (sqlite._execute).
Execute = Callable[[sqlite3.Connection, str, str, tuple, Any], Any]


def joins_group(sql: str) -> bool:
    """Whether a `db_exec` of `sql` is a plain write, which may share a transaction."""
    joins = _joins.get(sql)
    if joins is None:
        if len(_joins) >= _CACHE_LIMIT:
            _joins.clear()
        joins = _joins[sql] = sql.lstrip()[:7].upper().startswith(_WRITES)
    return joins


def run_jobs(conn: sqlite3.Connection, jobs: list[tuple], execute: Execute) -> list[tuple]:
    """Run a batch's jobs (no BEGIN among them): the plain writes together when there are
    two or more, after the rest. (future, result) pairs."""
    others, writes = [], []
    for job in jobs:
        if job[1] is EXEC and joins_group(job[2]):
            writes.append(job)
        else:
            others.append(job)
    if len(writes) < 2:
        return one_by_one(conn, jobs, execute)
    return one_by_one(conn, others, execute) + commit_together(conn, writes, execute)


def one_by_one(conn: sqlite3.Connection, jobs: list[tuple], execute: Execute) -> list[tuple]:
    """Each job on its own (autocommit, as every statement outside a group)."""
    return [(future, execute(conn, op, sql, args, cls)) for future, op, sql, args, cls in jobs]


def commit_together(conn: sqlite3.Connection, writes: list[tuple],
                    execute: Execute) -> list[tuple]:
    """The writes in one transaction, answered after its COMMIT."""
    answered: list[tuple] = []
    while writes:
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error:  # another process holds the write lock past the busy timeout
            return answered + one_by_one(conn, writes, execute)
        results, ended_by = _in_transaction(conn, writes, execute)
        if ended_by is None:
            return answered + _commit(conn, writes, results, execute)
        # A failure ended the transaction: it answers its error; the others (none answered
        # yet, their changes gone with it) run again in a new one.
        answered.append((writes[ended_by][0], results[ended_by]))
        writes = writes[:ended_by] + writes[ended_by + 1:]
    return answered


def _in_transaction(conn: sqlite3.Connection, writes: list[tuple],
                    execute: Execute) -> tuple[list, int | None]:
    """Run each write in the open transaction: the results so far, and the index of the
    write whose failure ended the whole transaction, if one did."""
    results = []
    for index, (_future, op, sql, args, cls) in enumerate(writes):
        result = execute(conn, op, sql, args, cls)
        results.append(result)
        if result.__class__ is SvcError and not conn.in_transaction:
            return results, index  # INSERT OR ROLLBACK, RAISE(ROLLBACK), a full disk
    return results, None


def _commit(conn: sqlite3.Connection, writes: list[tuple], results: list,
            execute: Execute) -> list[tuple]:
    """COMMIT, then the answers: the results, or each statement again alone when a deferred
    constraint refused the COMMIT, or the COMMIT's error for each that had succeeded."""
    try:
        conn.execute("COMMIT")
    except sqlite3.IntegrityError:  # a deferred constraint: find the statement at fault
        _roll_back(conn)
        return one_by_one(conn, writes, execute)
    except sqlite3.Error as exc:  # an I/O error: nothing of the group is kept
        _roll_back(conn)
        return [(job[0], result if result.__class__ is SvcError else
                 statement_failed(exc, job[2])) for job, result in zip(writes, results)]
    return [(job[0], result) for job, result in zip(writes, results)]


def _roll_back(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass
