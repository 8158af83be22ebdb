"""The embedded SQLite database: one thread per `Db`, a bounded job queue.

Why a thread: `sqlite3` calls block (file locks, fsync), and the event loop must never block.
Each `Db` owns one connection that only its own thread touches. The event loop hands jobs to
that thread through a queue of at most `DB_QUEUE_SIZE` (64, from svc.rules.contract) waiting jobs,
while the thread may be running one more batch; a caller that finds it full waits
asynchronously, in arrival order, and gives up with `busy` (503) when its request's
processing deadline passes.

Wake-ups are what cost (measured: one loop wake-up per job loses most of the gain over inline
queries), so both directions are batched: the jobs accepted during one loop iteration are
handed to the thread together at its end (one thread wake-up), and the thread takes every
queued job at once, runs them, and wakes the loop ONCE with all the results. On
`GET /users/{id}` handing jobs over one by one cost about 2.5 context switches per request;
batched, about 0.3. A job the thread has taken runs to completion even if its caller was
cancelled: the result is simply dropped. This module is the loop's side and the handle; the
thread's side is sqlite_thread.py.

Contract (docs/internals.md, "Database API"): every coroutine returns its value or an
`SvcError` of kind `database` (bad SQL, constraint violation, a locked database, a row that
does not fit the class), never raises for database problems. Choices made here:

- Autocommit: each statement is its own transaction (`isolation_level=None`), except that on
  a file the plain writes of one batch commit together (group_commit.py: one fsync for the
  batch, a savepoint each, each answered after the COMMIT). With `synchronous=FULL` and WAL
  journaling a `db_exec` that has returned is on disk and survives kill -9.
- Foreign keys are enforced (`PRAGMA foreign_keys=ON`); a locked database is waited for up to
  `BUSY_TIMEOUT_SECONDS` before the statement fails.
- Rows are mapped to classes by rows.py, shared with PostgreSQL.
- Every connection has a `regexp` function (regexp.py), so `x REGEXP pattern` works, with
  RE2's patterns.
- `close_all()` (server shutdown) finishes the queued jobs, checkpoints the WAL and closes
  every connection; later jobs on those handles get `busy` "shutting down". `db_open` keeps
  working afterwards (new handles), which tests rely on.
- One `Db` per file: opening an open file again returns the same handle. Each `:memory:`
  database is new.
- A `Db` is used from one event loop at a time (svc programs have exactly one).
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import sqlite3
import threading
from collections import deque
from queue import SimpleQueue

from svc.rules.contract import DB_QUEUE_SIZE
from svc.runtime.observability import metrics
from svc.runtime.http.context import request_deadline
from svc.runtime.db import sqlite_thread, sqlite_tx
from svc.runtime.db.base import BEGIN, Db
from svc.runtime.db.regexp import sqlite_regexp
from svc.runtime.db.errors import shutting_down as _shutting_down
from svc.runtime.db.sqlite_thread import STOP as _STOP
from svc.runtime.db.sqlite_thread import call_on_loop as _call_on_loop
from svc.runtime.lib.support import SvcError

#: How long a statement waits for another connection's lock before failing.
BUSY_TIMEOUT_SECONDS = 2.0

_base_directory: str | None = None
_open_dbs: set[SqliteDb] = set()  # every Db whose thread runs: close_all stops them
_files: dict = {}  # file path → its open Db, or the task opening it


class SqliteDb(Db):
    """A database handle: the path, the job queue and the thread that owns the connection."""

    __slots__ = ("path", "_queue", "_outbox", "_submitted", "_taken", "_thread", "_closing",
                 "_overflow", "_loop")
    dialect = "sqlite"

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        # Lists of jobs handed to the thread; a job is a (future, op, sql, args, cls) tuple.
        self._queue: SimpleQueue = SimpleQueue()
        # Jobs accepted during the current loop iteration, handed over together at its end
        # (one thread wake-up per iteration, so the thread sees whole batches).
        self._outbox: list[tuple] = []
        # Jobs accepted (written by the loop) and taken by the thread (written by the
        # thread): their difference is the queue length the bound applies to.
        self._submitted = 0
        self._taken = 0
        self._closing = False
        # Jobs that found the queue full, oldest first, each with its deadline timer (or
        # None) and the loop time it began to wait. Only the event loop touches it.
        self._overflow: deque[tuple[tuple, asyncio.TimerHandle | None, float]] = deque()
        self._thread: threading.Thread | None = None  # started by db_open
        # The loop of the last accepted job: the loop of the next one while it runs (a Db is
        # used from one loop at a time), so that a job costs no `get_running_loop()`, which
        # makes a getpid system call in Python 3.11.
        self._loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        return f"Db({self.path!r})"

    async def _begin(self):
        """Queue a BEGIN like any job; once the thread takes it, it serves only the Tx."""
        return await self._submit(BEGIN, "BEGIN IMMEDIATE", (), sqlite_tx.SqliteTx(self))

    @property
    def queued(self) -> int:
        """Jobs accepted but not yet taken by the thread (at most DB_QUEUE_SIZE)."""
        return self._submitted - self._taken

    # --- event-loop side ---------------------------------------------------------------

    def _current_loop(self) -> asyncio.AbstractEventLoop:
        """The running loop: the last one used while it still runs, else asked for (once
        per loop: tests run several loops one after another, a forked worker its own)."""
        loop = self._loop
        if loop is None or not loop.is_running():
            loop = asyncio.get_running_loop()
        return loop

    def _submit(self, op: str, sql: str, args: tuple, cls: type | None) -> asyncio.Future:
        """Queue one job; returns the future of its result. Runs on the event loop."""
        loop = self._current_loop()
        future = loop.create_future()
        job = (future, op, sql, args, cls)
        if self._closing:
            future.set_result(_shutting_down())
        elif not self._overflow and self._submitted - self._taken < DB_QUEUE_SIZE:
            self._accept(loop, job)
        else:
            self._wait_in_line(loop, job)
        return future

    def _wait_in_line(self, loop: asyncio.AbstractEventLoop, job: tuple) -> None:
        """The queue is full: the job waits its turn, and gives up at the request deadline.

        The caller just awaits the job's future; nothing else wakes it. A caller cancelled
        while in line leaves a cancelled future, which `_admit` skips.
        """
        deadline = request_deadline()
        timer = None if deadline is None else loop.call_at(deadline, _give_up, job[0])
        self._overflow.append((job, timer, loop.time()))
        self._admit()

    def _accept(self, loop: asyncio.AbstractEventLoop, job: tuple) -> None:
        """Count the job as queued; it reaches the thread at the end of this loop iteration."""
        self._submitted += 1
        if loop is not self._loop:  # the first job, or the first on another loop
            self._hand_over()  # jobs left by a loop that stopped before handing them over
            self._loop = loop
        outbox = self._outbox
        if not outbox:
            loop.call_soon(self._hand_over)
        outbox.append(job)

    def _hand_over(self) -> None:
        if self._outbox:
            jobs, self._outbox = self._outbox, []
            self._queue.put(jobs)

    def _admit(self) -> None:
        """Move waiting jobs into the queue while there is room, oldest first. On the loop."""
        overflow = self._overflow
        room = DB_QUEUE_SIZE - self.queued
        while room > 0 and overflow:
            job, timer, since = overflow.popleft()
            if job[0].done():  # cancelled, or gave up at its deadline
                continue
            if timer is not None:
                timer.cancel()
            loop = job[0].get_loop()
            metrics.db_waited(self.path, loop.time() - since)
            self._accept(loop, job)
            room -= 1

    def _begin_close(self) -> None:
        """Refuse new jobs, answer the waiting ones, and ask the thread to stop."""
        if self._closing:
            return
        self._closing = True
        if self._overflow:
            loop = self._overflow[0][0][0].get_loop()
            if _running_loop() is loop:
                _reject_overflow(self)
            else:
                _call_on_loop(loop, _reject_overflow, self)
        self._hand_over()
        self._queue.put([_STOP])

    def _settle_batch(self, results: list) -> None:
        """On the loop: resolve the futures still wanted, then let waiting jobs in."""
        for future, result in results:
            if not future.done():
                future.set_result(result)
            elif result.__class__ is sqlite_tx.SqliteTx:  # its db_begin was cancelled meanwhile
                result._abandon("its db_begin was cancelled")
        if self._overflow:
            self._admit()

    # --- database-thread side ----------------------------------------------------------

    def _serve(self, conn: sqlite3.Connection) -> None:
        """The thread's loop (sqlite_thread.py, compiled where svc.native is)."""
        sqlite_thread.serve(self, conn)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _give_up(future: asyncio.Future) -> None:
    """The request deadline passed while the job was still waiting for room (503)."""
    if not future.done():
        future.set_result(SvcError("busy", "database job queue full past the processing limit"))


def _reject_overflow(db: SqliteDb) -> None:
    while db._overflow:
        job, timer, _since = db._overflow.popleft()
        if timer is not None:
            timer.cancel()
        if not job[0].done():
            job[0].set_result(_shutting_down())


# --- opening and closing ---------------------------------------------------------------------

def set_base_directory(path: str | None) -> None:
    """Project mode: relative database paths resolve against the project folder."""
    global _base_directory
    _base_directory = os.fspath(path) if path is not None else None


def resolve_path(path: str) -> str:
    """`:memory:` stays; a relative path joins the base directory (or the cwd); normalised."""
    if path == ":memory:":
        return path
    return os.path.abspath(os.path.join(_base_directory or os.getcwd(), path))


async def open_file(path: str) -> Db | SvcError:
    """Open (creating if needed) a database file, or `:memory:`; start its thread.

    A file that is already open gets the same handle (one thread and connection per file,
    so opening a database per request cannot pile up threads); every `:memory:` is new.
    """
    if not isinstance(path, str) or not path or "\0" in path:
        return SvcError("database", f"cannot open database {path!r}: not a valid path")
    full = resolve_path(path)
    if full == ":memory:":
        return await _start(full)
    entry = _files.get(full)
    if isinstance(entry, Db):
        return entry
    if entry is None:  # not open, nor being opened by another caller
        entry = _files[full] = asyncio.ensure_future(_start(full))
    result = await asyncio.shield(entry)
    if _files.get(full) is entry:
        if isinstance(result, Db):
            _files[full] = result
        else:
            del _files[full]
    return result


async def _start(path: str) -> Db | SvcError:
    """Start a Db's thread and wait for it to report whether the connection opened."""
    loop = asyncio.get_running_loop()
    opened = loop.create_future()
    db = SqliteDb(path)
    # The thread runs in a copy of the opener's context, so the callbacks it schedules on the
    # loop find the program's services (svc.runtime.services) as the opener's code does.
    db._thread = threading.Thread(
        target=contextvars.copy_context().run, args=(_thread_main, db, loop, opened),
        name=f"svc-db {path}", daemon=True)
    try:
        db._thread.start()
    except RuntimeError as exc:  # no more threads
        return SvcError("database", f"cannot open database {path!r}: {exc}")
    _open_dbs.add(db)  # even if the caller is cancelled, close_all will stop the thread
    error = await opened
    if error is not None:
        _open_dbs.discard(db)
        return error
    return db


def _thread_main(db: SqliteDb, loop: asyncio.AbstractEventLoop, opened: asyncio.Future) -> None:
    """Body of a `Db`'s thread: connect, report, then serve jobs until told to stop."""
    conn, error = _connect(db.path)
    _call_on_loop(loop, _settle_open, opened, error)
    if conn is not None:
        db._serve(conn)


def _settle_open(opened: asyncio.Future, error: SvcError | None) -> None:
    if not opened.done():
        opened.set_result(error)


def _connect(path: str) -> tuple[sqlite3.Connection | None, SvcError | None]:
    """Open the connection with the durability settings; any failure is a `database` error."""
    conn = None
    try:
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None,
                               check_same_thread=False, cached_statements=256)
        if path != ":memory:":
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise sqlite3.OperationalError(f"cannot use WAL journaling (got {mode})")
            conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.create_function("regexp", 2, sqlite_regexp, deterministic=True)
        return conn, None
    except (sqlite3.Error, OSError) as exc:
        if conn is not None:
            conn.close()
        return None, SvcError("database", f"cannot open database {path!r}: {exc}")


def close_all() -> None:
    """Stop every database thread cleanly: queued jobs finish, connections close.

    Called by the server at shutdown (from the event loop thread, so no job can slip in
    after the stop). Blocks until each thread is done; their results reach the loop later.
    """
    dbs = list(_open_dbs)
    _open_dbs.clear()
    _files.clear()
    for db in dbs:
        db._begin_close()
    for db in dbs:
        if db._thread is not None:  # started before the db joined _open_dbs
            db._thread.join()


# --- worker processes (svc.runtime.http.workers) --------------------------------------------------

def add_gauges(rows: dict[str, list]) -> None:
    """Each open database's queue depth (jobs queued for its thread and waiting for room)."""
    for db in list(_open_dbs):
        rows["svc_db_queue_depth"].append([[db.path], db.queued + len(db._overflow)])


def open_paths() -> list[str]:
    """The path of every open database (`:memory:` for each in-memory one)."""
    return [db.path for db in _open_dbs]


def reopen_after_fork() -> None:
    """In a worker process just forked from the process that ran `main`: give every open
    `SqliteDb` a fresh connection on a fresh thread.

    The parent's database threads do not exist in the child, their queue may have been copied
    mid-operation, and an SQLite connection must never be used on both sides of a fork. Each
    handle keeps its path, so the handles `main` made keep working; the new connection opens
    on the new thread before its first job runs (if it cannot, each job answers that error).
    """
    for path, entry in list(_files.items()):
        if not isinstance(entry, SqliteDb):  # an open in flight belongs to the parent's loop
            del _files[path]
    for db in list(_open_dbs):
        db._queue = SimpleQueue()
        db._outbox = []
        db._submitted = db._taken = 0
        db._closing = False
        db._overflow = deque()
        db._loop = None  # the parent's loop does not run here, even if it did at the fork
        db._thread = threading.Thread(target=contextvars.copy_context().run,
                                      args=(_reopened_thread_main, db),
                                      name=f"svc-db {db.path}", daemon=True)
        db._thread.start()


def _reopened_thread_main(db: SqliteDb) -> None:
    conn, error = _connect(db.path)
    if conn is not None:
        db._serve(conn)
        return
    stop = False
    while not stop:  # the file cannot be opened here: every job gets the reason
        batch = db._queue.get()
        db._taken += len(batch)
        stop = _STOP in batch
        sqlite_thread.deliver(db, [(job[0], error) for job in batch if job is not _STOP])
