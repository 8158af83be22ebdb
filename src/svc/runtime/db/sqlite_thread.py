"""The database thread's side of a SQLite `Db`: take batches of jobs, run them, hand the results
back to the event loop in one wake-up (sqlite.py has the loop's side and the handle).

This is the part that runs for every statement on the thread, so svc.native compiles it: it is
plain functions over the handle (`SqliteDb` and `SqliteTx` stay plain Python classes, whose
attributes the interpreter reads faster than compiled code reads a class it does not own).

- `serve`: the thread's loop. The jobs of one batch come from concurrent callers, so their
  order is free: the transactions (a BEGIN holds the thread until its transaction ends) run
  after the others, which are not kept waiting behind them. On a file the plain writes among
  those others commit together (group_commit.py); in memory, where a commit costs no fsync,
  each job runs alone.
- `run_transaction`: a transaction has the thread from its BEGIN to its end (sqlite_tx.py).
- `execute`: one job; every failure becomes a `database` SvcError.
- `deliver` hands (future, result) pairs to their loop, where `SqliteDb._settle_batch`
  resolves them.
"""

from __future__ import annotations

import asyncio
import sqlite3
from queue import Empty
from typing import TYPE_CHECKING, Any

from svc.runtime.db import group_commit
from svc.runtime.db.base import BEGIN, COMMIT, EXEC, ONE, ROLLBACK, SCRIPT
from svc.runtime.db.errors import several_statements, shutting_down, statement_failed
from svc.runtime.db.regexp import take_failure
from svc.runtime.db.rows import RowMapper, RowMismatch, mapper
from svc.runtime.db.sqlite_tx import SqliteTx, drain_jobs
from svc.runtime.lib.support import SvcError

if TYPE_CHECKING:
    from svc.runtime.db.sqlite import SqliteDb

#: The queue's sentinel: finish what is queued, then close.
STOP = None
#: How often a thread waiting for a transaction's next job looks whether the Db is closing.
_CLOSE_POLL_SECONDS = 0.25


def serve(db: SqliteDb, conn: sqlite3.Connection) -> None:
    """Take every queued job, run them, deliver the batch at once; until told to stop."""
    queue = db._queue
    grouped = db.path != ":memory:"
    stop = False
    while not stop:
        batch = queue.get()
        for _ in range(queue.qsize()):
            batch += queue.get_nowait()
        db._taken += len(batch)
        jobs: list[tuple] = []
        begins: list[tuple] = []
        for job in batch:
            if job is STOP:
                stop = True
            elif job[1] is BEGIN:
                begins.append(job)
            else:
                jobs.append(job)
        results = run_jobs(conn, jobs, grouped)
        for index, begin in enumerate(begins):
            deliver(db, results)
            results = []
            # The later BEGINs of the batch were counted as taken; while this transaction
            # runs they count as queued again, so the bound of 64 holds.
            still_waiting = len(begins) - index - 1
            db._taken -= still_waiting
            run_transaction(db, conn, begin[4], begin[0])  # the Tx rides in `cls`
            db._taken += still_waiting
        deliver(db, results)
    close_connection(conn)
    # Jobs that slipped in after the stop (a caller on another thread) must not hang.
    late = []
    for _ in range(queue.qsize()):
        late += [(job[0], shutting_down()) for job in queue.get_nowait() if job is not STOP]
    deliver(db, late)


def close_connection(conn: sqlite3.Connection) -> None:
    """Checkpoint the WAL into the main file and close; errors here are not actionable."""
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.Error:
        pass
    conn.close()


# --- handing results back -------------------------------------------------------------------

def call_on_loop(loop: asyncio.AbstractEventLoop, fn: Any, *args: Any) -> None:
    try:
        loop.call_soon_threadsafe(fn, *args)
    except RuntimeError:  # the loop is closed: nobody is waiting any more
        pass


def deliver(db: SqliteDb, results: list) -> None:
    """Hand a batch of (future, result) pairs to their event loop(s): one wake-up per loop."""
    if not results:
        return
    loop = results[0][0].get_loop()
    if all(future.get_loop() is loop for future, _ in results):
        call_on_loop(loop, db._settle_batch, results)
        return
    by_loop: dict = {}
    for pair in results:
        by_loop.setdefault(pair[0].get_loop(), []).append(pair)
    for other, pairs in by_loop.items():
        call_on_loop(other, db._settle_batch, pairs)


# --- transactions ---------------------------------------------------------------------------

def run_transaction(db: SqliteDb, conn: sqlite3.Connection, tx: SqliteTx, begun: Any) -> None:
    """Begin, serve the transaction's jobs from its own queue, end it.

    A None future is a rollback nobody waits for. The BEGIN's own answer goes with the first
    job's when that job is already waiting (an unbegun Tx's).
    """
    try:
        conn.execute("BEGIN IMMEDIATE")
    except Exception as exc:  # locked by another process past the busy timeout, ...
        tx.state = "never begun"
        error = statement_failed(exc, "BEGIN IMMEDIATE")
        deliver(db, [(begun, error)] + [(job[0], error) for job in drain_jobs(tx)
                                        if job[0] is not None])
        return
    answered: list[tuple] = [(begun, tx)]
    while True:
        try:
            if answered:
                job = tx.jobs.get_nowait()
            else:
                job = tx.jobs.get(timeout=_CLOSE_POLL_SECONDS)
        except Empty:
            if answered:
                deliver(db, answered)
                answered = []
                continue
            if db._closing:  # the server stops while the transaction's owner still holds it
                _finish(conn, ROLLBACK)
                tx.state = "rolled back because the database was closed"
                deliver(db, [(job[0], tx.finished_error()) for job in drain_jobs(tx)
                             if job[0] is not None])
                return
            continue
        future, op, sql, args, cls = job
        if op is COMMIT or op is ROLLBACK:
            result = _finish(conn, op)
            deliver(db, answered + ([(future, result)] if future is not None else []))
            return
        answered.append((future, execute(conn, op, sql, args, cls)))
        deliver(db, answered)
        answered = []


def _finish(conn: sqlite3.Connection, op: str) -> SvcError | None:
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


# --- the queries ----------------------------------------------------------------------------

def run_jobs(conn: sqlite3.Connection, jobs: list[tuple], grouped: bool) -> list[tuple]:
    """Run jobs (none a BEGIN): (future, result) pairs."""
    if grouped and len(jobs) > 1:
        return group_commit.run_jobs(conn, jobs, execute)
    return group_commit.one_by_one(conn, jobs, execute)


def rows_changed(conn: sqlite3.Connection, sql: str, args: tuple) -> int:
    """`db_exec`'s count: the rows the statement inserted, updated or deleted.

    sqlite3's `rowcount` is -1 for a statement that does not start with INSERT, UPDATE,
    DELETE or REPLACE (`WITH ... INSERT`), and counts a `RETURNING` statement only once its
    rows are read; the connection's change counter covers the first case.
    """
    before = conn.total_changes
    cursor = conn.execute(sql, args)
    cursor.fetchall()
    count = cursor.rowcount
    return count if count >= 0 else conn.total_changes - before


def execute(conn: sqlite3.Connection, op: str, sql: str, args: tuple, cls: Any) -> Any:
    """Run one job; every failure becomes a `database` SvcError."""
    try:
        if op is EXEC:
            return rows_changed(conn, sql, args)
        if op is SCRIPT:
            return _run_script(conn, sql)
        cursor = conn.execute(sql, args)
        if op is ONE:
            row = cursor.fetchone()
            return None if row is None else _mapper(cls, sql, cursor)(row)
        rows = cursor.fetchall()
        if not rows:
            return []
        map_row = _mapper(cls, sql, cursor)
        return [map_row(row) for row in rows]
    # (one name per clause: compiled, a name keeps the type of its first clause)
    except RowMismatch as mismatch:
        return SvcError("database", str(mismatch))
    except sqlite3.ProgrammingError as misuse:
        if "one statement at a time" in str(misuse):
            return several_statements(sql)
        return statement_failed(misuse, sql)
    except Exception as exc:  # sqlite3.Error, unsupported argument, int too big, ...
        failure = take_failure(sql)  # a REGEXP that failed says why itself
        return statement_failed(exc, sql) if failure is None else failure


def _run_script(conn: sqlite3.Connection, script: str) -> int:
    """Several statements (a migration step) in the current transaction.

    `executescript` would COMMIT first, so the statements are split here: at each `;` where
    the text so far is a complete statement (`sqlite3.complete_statement` knows string
    literals, comments and trigger bodies).
    """
    count = 0
    for statement in split_statements(script):
        count += rows_changed(conn, statement, ())
    return count


def split_statements(script: str) -> list[str]:
    statements, start = [], 0
    for index, char in enumerate(script):
        if char == ";" and sqlite3.complete_statement(script[start:index + 1]):
            statements.append(script[start:index + 1])
            start = index + 1
    if not _only_comments(script[start:]):
        statements.append(script[start:])
    return statements


def _only_comments(text: str) -> bool:
    """Whether `text` is blank or nothing but SQL comments (nothing to run)."""
    text = text.strip()
    while text:
        if text.startswith("--"):
            newline = text.find("\n")
            text = "" if newline < 0 else text[newline + 1:].strip()
        elif text.startswith("/*") and "*/" in text:
            text = text[text.index("*/") + 2:].strip()
        else:
            return False
    return True


#: Per (class, SQL text): the column names of its last result and their row mapper. The key
#: hashes at once (the text is the caller's constant, its hash kept); bounded by the
#: program's distinct queries, cleared when a program building its SQL makes it grow past this.
_MAPPER_CACHE_LIMIT = 4096
_by_query: dict[tuple, tuple[tuple, RowMapper]] = {}


def _mapper(cls: type | None, sql: str, cursor: sqlite3.Cursor) -> RowMapper:
    """The row mapper for this result: found by query, checked against the result's column
    names (a schema change, even by another process, may rename a `SELECT *`'s columns)."""
    description = cursor.description
    known = _by_query.get((cls, sql))
    if known is not None:
        names, map_row = known
        if len(names) == len(description):
            for index, name in enumerate(names):
                if description[index][0] != name:
                    break
            else:
                return map_row
    names = tuple([d[0] for d in description])
    map_row = mapper(cls, names)
    if len(_by_query) >= _MAPPER_CACHE_LIMIT:
        _by_query.clear()
    _by_query[cls, sql] = (names, map_row)
    return map_row
