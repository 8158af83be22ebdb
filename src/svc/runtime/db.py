"""The embedded SQLite database: one thread per `Db`, a bounded job queue, typed row mapping.

Why a thread: `sqlite3` calls block (file locks, fsync), and the event loop must never block.
Each `Db` owns one connection that only its own thread touches. The event loop hands jobs to
that thread through a queue of at most `DB_QUEUE_SIZE` (64, from svc.contract) waiting jobs,
while the thread may be running one more batch; a caller that finds it full waits
asynchronously, in arrival order, and gives up with `busy` (503) when its request's
processing deadline passes.

Wake-ups are what cost (measured: one loop wake-up per job loses most of the gain over inline
queries), so both directions are batched: the jobs accepted during one loop iteration are
handed to the thread together at its end (one thread wake-up), and the thread takes every
queued job at once, runs them, and wakes the loop ONCE with all the results. On
`GET /users/{id}` handing jobs over one by one cost about 2.5 context switches per request;
batched, about 0.3. A job the thread has taken runs to completion even if its caller was
cancelled: the result is simply dropped.

Contract (docs/internals.md, "Database API"): every coroutine returns its value or an
`SvcError` of kind `database` (bad SQL, constraint violation, a locked database, a row that
does not fit the class), never raises for database problems. Choices made here:

- Autocommit: each statement is its own transaction (`isolation_level=None`). With
  `synchronous=FULL` and WAL journaling a `db_exec` that has returned is on disk and survives
  kill -9.
- Foreign keys are enforced (`PRAGMA foreign_keys=ON`); a locked database is waited for up to
  `BUSY_TIMEOUT_SECONDS` before the statement fails.
- Row mapping matches columns to the class's fields by name. Extra columns are ignored; when
  two columns share a name, the first wins. An INTEGER into an `f64` field is converted; a
  REAL into an integer field is a mismatch.
- `close_all()` (server shutdown) finishes the queued jobs, checkpoints the WAL and closes
  every connection; later jobs on those handles get `busy` "shutting down". `db_open` keeps
  working afterwards (new handles), which tests rely on.
- One `Db` per file: opening an open file again returns the same handle. Each `:memory:`
  database is new.
- A `Db` is used from one event loop at a time (svc programs have exactly one).
"""

from __future__ import annotations

import asyncio
import atexit
import os
import sqlite3
import threading
from collections import deque
from queue import SimpleQueue

from svc.contract import DB_QUEUE_SIZE, I32_MAX, I32_MIN
from svc.runtime.context import request_deadline
from svc.runtime.support import SvcError

#: How long a statement waits for another connection's lock before failing.
BUSY_TIMEOUT_SECONDS = 2.0

_base_directory: str | None = None
_open_dbs: set[Db] = set()  # every Db whose thread runs: close_all stops them
_files: dict = {}  # file path → its open Db, or the task opening it

# Job operations (what the thread does with the cursor).
_EXEC, _ALL, _ONE = "exec", "all", "one"
_STOP = None  # queue sentinel: finish what is queued, then close


def _shutting_down() -> SvcError:
    return SvcError("busy", "shutting down")


class Db:
    """A database handle: the path, the job queue and the thread that owns the connection."""

    __slots__ = ("path", "_queue", "_outbox", "_submitted", "_taken", "_thread", "_closing",
                 "_overflow", "__weakref__")

    def __init__(self, path: str) -> None:
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
        # None). Only the event loop touches it.
        self._overflow: deque[tuple[tuple, asyncio.TimerHandle | None]] = deque()
        self._thread: threading.Thread | None = None  # started by db_open

    def __repr__(self) -> str:
        return f"Db({self.path!r})"

    @property
    def queued(self) -> int:
        """Jobs accepted but not yet taken by the thread (at most DB_QUEUE_SIZE)."""
        return self._submitted - self._taken

    # --- event-loop side ---------------------------------------------------------------

    def _submit(self, op: str, sql: str, args: tuple, cls: type | None) -> asyncio.Future:
        """Queue one job; returns the future of its result. Runs on the event loop."""
        if memoryview in map(type, args):
            # The view's buffer may be reused once the request ends; the job may run later.
            args = tuple(bytes(a) if type(a) is memoryview else a for a in args)
        loop = asyncio.get_running_loop()
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
        self._overflow.append((job, timer))
        self._admit()

    def _accept(self, loop: asyncio.AbstractEventLoop, job: tuple) -> None:
        """Count the job as queued; it reaches the thread at the end of this loop iteration."""
        self._submitted += 1
        outbox = self._outbox
        if not outbox:
            loop.call_soon(self._hand_over)
        elif outbox[0][0].get_loop() is not loop:  # left by a loop that stopped first
            self._hand_over()
            loop.call_soon(self._hand_over)
        self._outbox.append(job)

    def _hand_over(self) -> None:
        if self._outbox:
            jobs, self._outbox = self._outbox, []
            self._queue.put(jobs)

    def _admit(self) -> None:
        """Move waiting jobs into the queue while there is room, oldest first. On the loop."""
        overflow = self._overflow
        room = DB_QUEUE_SIZE - self.queued
        while room > 0 and overflow:
            job, timer = overflow.popleft()
            if job[0].done():  # cancelled, or gave up at its deadline
                continue
            if timer is not None:
                timer.cancel()
            self._accept(job[0].get_loop(), job)
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

    # --- database-thread side ----------------------------------------------------------

    def _serve(self, conn: sqlite3.Connection) -> None:
        """The thread's loop: take every queued job, run them, deliver the batch at once."""
        queue = self._queue
        stop = False
        while not stop:
            batch = queue.get()
            for _ in range(queue.qsize()):
                batch += queue.get_nowait()
            self._taken += len(batch)
            results = []
            for job in batch:
                if job is _STOP:
                    stop = True
                    continue
                future, op, sql, args, cls = job
                results.append((future, _execute(conn, op, sql, args, cls)))
            _deliver_batch(self, results)
        _close_connection(conn)
        # Jobs that slipped in after the stop (a caller on another thread) must not hang.
        late = []
        for _ in range(queue.qsize()):
            late += [(job[0], _shutting_down()) for job in queue.get_nowait() if job is not _STOP]
        _deliver_batch(self, late)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _call_on_loop(loop: asyncio.AbstractEventLoop, fn, *args) -> None:
    try:
        loop.call_soon_threadsafe(fn, *args)
    except RuntimeError:  # the loop is closed: nobody is waiting any more
        pass


def _give_up(future: asyncio.Future) -> None:
    """The request deadline passed while the job was still waiting for room (503)."""
    if not future.done():
        future.set_result(SvcError("busy", "database job queue full past the processing limit"))


def _reject_overflow(db: Db) -> None:
    while db._overflow:
        job, timer = db._overflow.popleft()
        if timer is not None:
            timer.cancel()
        if not job[0].done():
            job[0].set_result(_shutting_down())


def _deliver_batch(db: Db, results: list) -> None:
    """Hand a batch of (future, result) pairs to their event loop(s): one wake-up per loop."""
    if not results:
        return
    loop = results[0][0].get_loop()
    if all(future.get_loop() is loop for future, _ in results):
        _call_on_loop(loop, _settle_batch, db, results)
        return
    by_loop: dict = {}
    for pair in results:
        by_loop.setdefault(pair[0].get_loop(), []).append(pair)
    for other, pairs in by_loop.items():
        _call_on_loop(other, _settle_batch, db, pairs)


def _settle_batch(db: Db, results: list) -> None:
    """On the loop: resolve the futures still wanted, then let waiting jobs in."""
    for future, result in results:
        if not future.done():
            future.set_result(result)
    if db._overflow:
        db._admit()


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


async def db_open(path: str) -> Db | SvcError:
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
    db = Db(path)
    db._thread = threading.Thread(
        target=_thread_main, args=(db, loop, opened), name=f"svc-db {path}", daemon=True)
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


def _thread_main(db: Db, loop: asyncio.AbstractEventLoop, opened: asyncio.Future) -> None:
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
        return conn, None
    except (sqlite3.Error, OSError) as exc:
        if conn is not None:
            conn.close()
        return None, SvcError("database", f"cannot open database {path!r}: {exc}")


def _close_connection(conn: sqlite3.Connection) -> None:
    """Checkpoint the WAL into the main file and close; errors here are not actionable."""
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.Error:
        pass
    conn.close()


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
        db._thread.join()


# A program whose `main` returns without serving still closes its databases cleanly (the WAL
# checkpointed into the file, no -wal/-shm files left behind). Daemon threads are still alive
# while atexit handlers run.
atexit.register(close_all)


# --- the queries ----------------------------------------------------------------------------

async def db_exec(db: Db, sql: str, *args) -> int | SvcError:
    """Run one statement; the number of rows it changed (0 for statements that change none)."""
    return await db._submit(_EXEC, sql, args, None)


async def db_all(cls: type, db: Db, sql: str, *args) -> list | SvcError:
    """Every row of a query, each mapped to an instance of `cls`."""
    return await db._submit(_ALL, sql, args, cls)


async def db_one(cls: type, db: Db, sql: str, *args) -> object | None | SvcError:
    """The first row of a query mapped to `cls`, or None when there is no row."""
    return await db._submit(_ONE, sql, args, cls)


def _rows_changed(conn: sqlite3.Connection, sql: str, args: tuple) -> int:
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


def _execute(conn: sqlite3.Connection, op: str, sql: str, args: tuple, cls: type | None):
    """Run one job on the database thread; every failure becomes a `database` SvcError."""
    try:
        if op is _EXEC:
            return _rows_changed(conn, sql, args)
        cursor = conn.execute(sql, args)
        if op is _ONE:
            row = cursor.fetchone()
            return None if row is None else _mapper(cls, cursor.description)(row)
        rows = cursor.fetchall()
        if not rows:
            return []
        mapper = _mapper(cls, cursor.description)
        return [mapper(row) for row in rows]
    except RowMismatch as exc:
        return SvcError("database", str(exc))
    except Exception as exc:  # sqlite3.Error, unsupported argument, int too big, ...
        return SvcError("database", f"{exc} (in SQL: {_shorten(sql)})")


def _shorten(sql: str, limit: int = 200) -> str:
    sql = " ".join(str(sql).split())
    return sql if len(sql) <= limit else sql[:limit] + "..."


# --- typed row mapping (docs/reference/language.md) ------------------------------------------

class RowMismatch(Exception):
    """A row that does not fit its class: reported as a `database` error naming the column."""


_SQL_TYPE = {int: "INTEGER", float: "REAL", str: "TEXT", bytes: "BLOB", type(None): "NULL"}
_BAD = object()


def _to_i64(v):
    return v if type(v) is int else _BAD


def _to_i32(v):
    return v if type(v) is int and I32_MIN <= v <= I32_MAX else _BAD


def _to_f64(v):
    t = type(v)
    return v if t is float else float(v) if t is int else _BAD


def _to_bool(v):
    return (v == 1) if type(v) is int and (v == 0 or v == 1) else _BAD


def _to_str(v):
    return v if type(v) is str else _BAD


def _to_bytes(v):
    return v if type(v) is bytes else _BAD


_CONVERTERS = {"i64": _to_i64, "i32": _to_i32, "f64": _to_f64, "bool": _to_bool,
               "str": _to_str, "bytes": _to_bytes}

# (cls, column names) → row mapper. Bounded by the program's distinct queries.
_mappers: dict = {}


def _mapper(cls: type, description) -> object:
    names = tuple([d[0] for d in description])
    mapper = _mappers.get((cls, names))
    if mapper is None:
        mapper = _mappers[(cls, names)] = _build_mapper(cls, names)
    return mapper


def _build_mapper(cls: type, names: tuple):
    """Plan which column feeds each field and how it is checked, once per (class, columns)."""
    class_name = getattr(cls, "__name__", repr(cls))
    fields = getattr(cls, "__svc_fields__", None)
    if fields is None:
        raise RowMismatch(f"{class_name} is not an svc class; rows cannot map to it")
    position = {}
    for i, name in enumerate(names):
        position.setdefault(name, i)
    plan = []
    for name, type_name, optional in fields:
        if name not in position:
            raise RowMismatch(f"query result has no column '{name}' for field {class_name}.{name}")
        convert = _CONVERTERS.get(type_name)
        if convert is None:
            raise RowMismatch(
                f"field {class_name}.{name} has type {type_name}, which no column can fill")
        plan.append((position[name], convert, optional, name, type_name))
    field_names = tuple(f[0] for f in fields)
    positional = getattr(cls, "__struct_fields__", None) == field_names

    def make(values):
        return cls(*values) if positional else cls(**dict(zip(field_names, values)))

    def checked(row):
        """Field by field, with a message naming the first value that does not fit."""
        values = []
        for i, convert, optional, name, type_name in plan:
            value = row[i]
            if value is None:
                if not optional:
                    raise RowMismatch(f"column '{name}' is NULL but field {class_name}.{name} "
                                      f"is {type_name}, not {type_name}?")
                values.append(None)
                continue
            converted = convert(value)
            if converted is _BAD:
                raise RowMismatch(_mismatch_text(name, class_name, type_name, value))
            values.append(converted)
        return values

    return _compile_fast_path(plan, positional)(cls, make, checked)


#: How the fast path tests a value of each field type, and how it passes the value on.
_FAST_TEST = {
    "i64": "type({v}) is int",
    "i32": f"type({{v}}) is int and {I32_MIN} <= {{v}} <= {I32_MAX}",
    "f64": "type({v}) is float",
    "bool": "type({v}) is int and ({v} == 0 or {v} == 1)",
    "str": "type({v}) is str",
    "bytes": "type({v}) is bytes",
}
_FAST_VALUE = {"bool": "{v} == 1"}


def _compile_fast_path(plan: list, positional: bool):
    """Generate straight-line code for the common row: every value already fits its field.

    A row mapper runs once per row on the database thread, on the hot path of every query;
    generated code (as `dataclasses` and `namedtuple` do) is several times faster than a
    loop over the fields. Any other row (a NULL, an INTEGER for an f64, a mismatch) falls
    back to `checked`, which converts or names the problem.
    """
    names = [f"v{j}" for j in range(len(plan))]
    load = "; ".join(f"{v} = row[{step[0]}]" for v, step in zip(names, plan))
    test = " and ".join(_FAST_TEST[step[4]].format(v=v) for v, step in zip(names, plan))
    values = [_FAST_VALUE.get(step[4], "{v}").format(v=v) for v, step in zip(names, plan)]
    if positional:
        build = f"cls({', '.join(values)})"
    else:
        build = "cls(**{" + ", ".join(f"{step[3]!r}: {value}" for step, value in
                                      zip(plan, values)) + "})"
    source = (f"def outer(cls, make, checked):\n"
              f"    def map_row(row):\n"
              f"        {load}\n"
              f"        if {test}:\n"
              f"            return {build}\n"
              f"        return make(checked(row))\n"
              f"    return map_row\n")
    namespace: dict = {}
    exec(source, namespace)  # noqa: S102 - built only from field types and column positions
    return namespace["outer"]


def _mismatch_text(column: str, class_name: str, type_name: str, value) -> str:
    sql_type = _SQL_TYPE.get(type(value), type(value).__name__)
    shown = repr(value)
    if len(shown) > 40:
        shown = shown[:40] + "..."
    why = "outside the i32 range" if type_name == "i32" and type(value) is int else \
        "not 0 or 1" if type_name == "bool" and type(value) is int else "does not fit"
    return (f"column '{column}' holds {sql_type} value {shown}, {why} for field "
            f"{class_name}.{column} ({type_name})")
