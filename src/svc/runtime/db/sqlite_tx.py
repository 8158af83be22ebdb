"""Transactions on SQLite: the transaction holds the database thread for its whole life.

SQLite allows one writer at a time anyway, and the thread owns the only connection, so a
transaction is simplest and safest as a span of the thread's time: once the thread has run
`BEGIN IMMEDIATE` (which takes the write lock at once, so a read-then-write transaction never
fails half-way on a lock upgrade), it serves only that transaction's jobs, from the Tx's own
queue, until COMMIT or ROLLBACK. Other jobs wait in the Db's queue of 64 meanwhile (and give
up with `busy` at their request's processing limit), which is why transactions must be short.

A transaction whose owner went away without ending it (its request finished or timed out,
`main` returned) is rolled back by `_abandon`; one still open when the database closes is
rolled back by the thread.
"""

from __future__ import annotations

import asyncio
import sqlite3
from queue import Empty, SimpleQueue

from svc.runtime.db.base import COMMIT, OPEN, ROLLBACK, Tx
from svc.runtime.db.errors import statement_failed

#: How often a thread waiting for a transaction's next job looks whether the Db is closing.
_CLOSE_POLL_SECONDS = 0.25


class SqliteTx(Tx):
    """A transaction on an SQLite `Db`: its jobs go straight to the waiting database thread."""

    __slots__ = ("jobs",)

    def __init__(self, db) -> None:
        super().__init__(db)
        self.jobs: SimpleQueue = SimpleQueue()

    def _submit(self, op: str, sql: str, args: tuple, cls: type | None) -> asyncio.Future:
        future = asyncio.get_running_loop().create_future()
        if self.state is not OPEN:
            future.set_result(self.finished_error())
        else:
            if memoryview in map(type, args):
                args = tuple(bytes(a) if type(a) is memoryview else a for a in args)
            self.jobs.put((future, op, sql, args, cls))
        return future

    async def _end(self, op: str):
        if self.state is not OPEN:
            return self.finished_error()
        self.state = "committed" if op == COMMIT else "rolled back"
        future = asyncio.get_running_loop().create_future()
        self.jobs.put((future, op, "", (), None))
        result = await future
        if result is not None and op == COMMIT:
            self.state = "rolled back because its commit failed"
        return result

    def _abandon(self, why: str) -> None:
        if self.state is OPEN:
            self.state = f"rolled back because {why}"
            self.jobs.put((None, ROLLBACK, "", (), None))


def run_transaction(db, conn: sqlite3.Connection, tx: SqliteTx, begun, execute,
                    deliver) -> None:
    """On the database thread: begin, serve the transaction's jobs, end it.

    `execute(conn, op, sql, args, cls)` runs one job; `deliver(pairs)` hands (future, result)
    pairs to the event loop (a None future is a rollback nobody waits for).
    """
    try:
        conn.execute("BEGIN IMMEDIATE")
    except Exception as exc:  # locked by another process past the busy timeout, ...
        tx.state = "never begun"
        deliver([(begun, statement_failed(exc, "BEGIN IMMEDIATE"))])
        return
    deliver([(begun, tx)])
    while True:
        try:
            future, op, sql, args, cls = tx.jobs.get(timeout=_CLOSE_POLL_SECONDS)
        except Empty:
            if db._closing:  # the server stops while the transaction's owner still holds it
                _finish(conn, ROLLBACK)
                tx.state = "rolled back because the database was closed"
                _answer_late_jobs(tx, deliver)
                return
            continue
        if op is COMMIT or op is ROLLBACK:
            result = _finish(conn, op)
            if future is not None:
                deliver([(future, result)])
            return
        deliver([(future, execute(conn, op, sql, args, cls))])


def _finish(conn: sqlite3.Connection, op: str):
    """COMMIT or ROLLBACK; a failed COMMIT (a deferred constraint) rolls back and says why."""
    try:
        conn.execute("COMMIT" if op is COMMIT else "ROLLBACK")
        return None
    except Exception as exc:
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
        return statement_failed(exc, op.upper())


def _answer_late_jobs(tx: SqliteTx, deliver) -> None:
    late = []
    while True:
        try:
            job = tx.jobs.get_nowait()
        except Empty:
            break
        if job[0] is not None:
            late.append((job[0], tx.finished_error()))
    deliver(late)
