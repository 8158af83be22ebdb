"""Transactions on SQLite: the transaction holds the database thread for its whole life.

SQLite allows one writer at a time anyway, and the thread owns the only connection, so a
transaction is simplest and safest as a span of the thread's time: once the thread has run
`BEGIN IMMEDIATE` (which takes the write lock at once, so a read-then-write transaction never
fails half-way on a lock upgrade), it serves only that transaction's jobs, from the Tx's own
queue, until COMMIT or ROLLBACK (`run_transaction` in sqlite_thread.py, the thread's side).
Other jobs wait in the Db's queue of 64 meanwhile (and give up with `busy` at their request's
processing limit), which is why transactions must be short.

A transaction whose owner went away without ending it (its request finished or timed out,
`main` returned) is rolled back by `_abandon`; one still open when the database closes is
rolled back by the thread.

`db_begin` does not wait for the thread: its Tx is *unbegun*, and its first statement takes
the BEGIN to the Db's queue and waits in the Tx's own queue behind it, so the thread runs
both in one hand-off and answers both at once (a round trip of the loop and the thread
fewer per transaction; each is most of a transaction's cost). A BEGIN that fails, or never
reaches the thread (the queue full past the processing limit, the Db closing), answers that
first statement with its error. A Tx ended before any statement never touched the database:
its commit or rollback has nothing to do. (`SqliteDb._begin`, for migrations, still begins at
once.)
"""

from __future__ import annotations

import asyncio
from queue import Empty, SimpleQueue

from svc.runtime.db.base import BEGIN, COMMIT, OPEN, ROLLBACK, Tx


class SqliteTx(Tx):
    """A transaction on an SQLite `Db`: its jobs go straight to the waiting database thread.

    `unbegun`: made by `db_begin`, its BEGIN not yet sent (it goes with the first job).
    `loop`: the loop of its owner, which alone uses it (a Tx cannot be stored), the Db's
    (Python 3.11's `get_running_loop` makes a getpid system call each time).
    """

    __slots__ = ("jobs", "unbegun", "loop")

    def __init__(self, db, unbegun: bool = False) -> None:
        super().__init__(db)
        self.loop = db._current_loop()
        self.jobs: SimpleQueue = SimpleQueue()
        self.unbegun = unbegun

    def _submit(self, op: str, sql: str, args: tuple, cls: type | None) -> asyncio.Future:
        future = self.loop.create_future()
        if self.state is not OPEN:
            future.set_result(self.finished_error())
        else:
            if self.unbegun:
                self._send_begin()
            self.jobs.put((future, op, sql, args, cls))
        return future

    def _send_begin(self) -> None:
        """The BEGIN to the Db's queue; the job put after it waits in `jobs` for the thread."""
        self.unbegun = False
        begun = self.db._submit(BEGIN, "BEGIN IMMEDIATE", (), self)  # type: ignore[arg-type]
        begun.add_done_callback(self._begun)  # (the Tx rides in `cls`, as in SqliteDb._begin)

    def _begun(self, begun: asyncio.Future) -> None:
        """On the loop: the BEGIN's answer. A failed one answers the jobs waiting behind it."""
        result = begun.result()
        if result is self:
            return
        if self.state is OPEN:
            self.state = "never begun"
        for job in drain_jobs(self):
            if job[0] is not None and not job[0].done():
                job[0].set_result(result)

    async def _end(self, op: str):
        if self.state is not OPEN:
            return self.finished_error()
        self.state = "committed" if op == COMMIT else "rolled back"
        if self.unbegun:  # no statement ran: nothing to commit or roll back
            return None
        future = self.loop.create_future()
        self.jobs.put((future, op, "", (), None))
        result = await future
        if result is not None and op == COMMIT:
            self.state = "rolled back because its commit failed"
        return result

    def _abandon(self, why: str) -> None:
        if self.state is OPEN:
            self.state = f"rolled back because {why}"
            if not self.unbegun:
                self.jobs.put((None, ROLLBACK, "", (), None))


def drain_jobs(tx: SqliteTx) -> list[tuple]:
    """The jobs waiting in the Tx's queue, taken out."""
    jobs = []
    while True:
        try:
            jobs.append(tx.jobs.get_nowait())
        except Empty:
            return jobs
