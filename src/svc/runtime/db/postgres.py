"""PostgreSQL through asyncpg: a `Db` backed by a pool of connections, used on the event loop.

Programs are written once: the same `?1`/`?` placeholders (rewritten to `$n`, sql_text.py),
the same row mapping (rows.py) and the same error kinds as SQLite. Choices made here:

- The pool holds at most `SVC_DB_POOL_SIZE` connections (default 10), made as needed (one is
  tried by `db_open`, which is how an unreachable server is a `database` error there).
  Opening the same URL again returns the same `Db`.
- Each statement outside a transaction runs on a connection borrowed for it alone, so it
  is its own transaction (autocommit), as on SQLite. A `Tx` keeps one connection from
  `db_begin` to its end.
- A server that is gone (refused, reset, shut down, starting up, too many connections) makes
  a call fail with `busy` (503), quickly, and a call that the server does not answer gives up
  with `busy` just before its request's processing limit, so a request never hangs. The pool
  drops connections that broke and connects again on a later call, so once the server is
  back requests succeed again without a restart.
- A statement the server refuses is a `database` error with its message and the SQL (a
  violated constraint is `conflict` or `invalid`, constraints.py), as on SQLite.
"""

from __future__ import annotations

import asyncio
import os
from decimal import Decimal

from svc.runtime.context import request_deadline
from svc.runtime.db import sql_text
from svc.runtime.db.base import ALL, COMMIT, EXEC, ONE, OPEN, ROLLBACK, SCRIPT, Db, Tx
from svc.runtime.db.errors import several_statements, shorten, shutting_down, statement_failed
from svc.runtime.db.rows import RowMismatch, mapper
from svc.runtime.support import SvcError

try:
    import asyncpg
except ImportError:  # pragma: no cover - asyncpg is a dependency; a broken install says so
    asyncpg = None

#: Seconds a connection attempt may take before the server counts as unreachable.
CONNECT_TIMEOUT_SECONDS = 2.0
#: A call gives up this long before its request's processing limit, to answer 503 itself.
DEADLINE_MARGIN_SECONDS = 0.1
#: The change count is the last number of these command tags ("INSERT 0 3", "UPDATE 2").
_COUNTED = ("INSERT", "UPDATE", "DELETE", "MERGE", "COPY")

_pools: dict[str, PostgresDb] = {}  # URL → its open Db


def is_postgres_url(path: str) -> bool:
    return path.startswith(("postgresql://", "postgres://"))


def pool_size() -> int:
    text = os.environ.get("SVC_DB_POOL_SIZE", "10")
    try:
        size = int(text)
    except ValueError:
        size = 0
    return size if 1 <= size <= 1000 else 10


class PostgresDb(Db):
    """A pool of connections to one PostgreSQL database."""

    __slots__ = ("url", "pool")
    dialect = "postgresql"

    def __init__(self, url: str, pool) -> None:
        self.url = url
        self.pool = pool

    def __repr__(self) -> str:
        return f"Db({_without_password(self.url)!r})"

    def _submit(self, op: str, sql: str, args: tuple, cls: type | None):
        return _guarded(self._run(op, sql, args, cls), sql)

    async def _run(self, op, sql, args, cls):
        if self.pool is None:
            return shutting_down()
        async with self.pool.acquire() as conn:
            return await _execute(conn, op, sql, args, cls)

    async def _begin(self) -> Tx | SvcError:
        if self.pool is None:
            return shutting_down()
        tx = PostgresTx(self)
        try:
            result = await _guarded(tx._start(), "BEGIN")
        except asyncio.CancelledError:
            tx.state = "never begun"  # `_start`, still running, gives its connection back
            raise
        if isinstance(result, SvcError):
            tx.state = "never begun"
            await tx._release(broken=True)
            return result
        return tx


class PostgresTx(Tx):
    """A transaction: one connection of the pool from `db_begin` to its end."""

    __slots__ = ("conn", "_ending")

    def __init__(self, db: PostgresDb) -> None:
        super().__init__(db)
        self.conn = None
        self._ending: asyncio.Task | None = None

    async def _start(self) -> None:
        """Take a connection and BEGIN; one whose db_begin stopped waiting meanwhile (its
        request's limit, a cancellation) goes back to the pool closed, never leaks."""
        conn = await self.db.pool.acquire()
        try:
            await conn.execute("BEGIN")
        except BaseException:
            conn.terminate()
            await self.db.pool.release(conn)
            raise
        if self.state is not OPEN:
            conn.terminate()
            await self.db.pool.release(conn)
            return
        self.conn = conn

    def _submit(self, op: str, sql: str, args: tuple, cls: type | None):
        if self.state is not OPEN:
            return _answer(self.finished_error())
        return _guarded(_execute(self.conn, op, sql, args, cls), sql)

    async def _end(self, op: str):
        if self.state is not OPEN:
            return self.finished_error()
        self.state = "committed" if op == COMMIT else "rolled back"
        result = await _guarded(self.conn.execute(op.upper()), op.upper())
        if isinstance(result, SvcError):
            if op == COMMIT:
                self.state = "rolled back because its commit failed"
            await self._release(broken=True)
            return result
        await self._release(broken=False)
        return None

    def _abandon(self, why: str) -> None:
        if self.state is OPEN:
            self.state = f"rolled back because {why}"
            self._ending = asyncio.ensure_future(self._roll_back_quietly())

    async def _roll_back_quietly(self) -> None:
        """Give the connection back clean; one that cannot roll back is closed instead."""
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT_SECONDS):
                await self.conn.execute("ROLLBACK")
        except (Exception, asyncio.CancelledError):
            await self._release(broken=True)
            return
        await self._release(broken=False)

    async def _release(self, broken: bool) -> None:
        conn, self.conn = self.conn, None
        if conn is None:
            return
        if broken:
            conn.terminate()  # the server rolls back whatever it had
        try:
            await self.db.pool.release(conn)
        except Exception:  # noqa: BLE001 - the pool was closed meanwhile
            pass


async def _answer(value):
    return value


async def _guarded(work, sql: str):
    """Run `work` (a coroutine doing one statement) so that it never raises and never
    outlives the request: the result, or the error it means.

    In a request the work runs in a Task of its own and is waited for only until just before
    the processing limit: a server that stopped answering would otherwise hold the caller in
    asyncpg's clean-up after a cancellation (it waits for the server to confirm), past the
    limit. A Task given up on is cancelled and left to finish its clean-up alone.
    """
    deadline = request_deadline()
    try:
        if deadline is None:
            return await work
        loop = asyncio.get_running_loop()
        task = loop.create_task(work)
        waiter = loop.create_future()  # done when the task is, or at the deadline
        task.add_done_callback(lambda _task: _wake(waiter))
        timer = loop.call_at(deadline - DEADLINE_MARGIN_SECONDS, _wake, waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            _abandon_task(task)
            raise
        finally:
            timer.cancel()
        if not task.done():
            _abandon_task(task)
            return SvcError("busy", "the database is unavailable",
                            detail="busy error: the database did not answer within the "
                                   f"processing limit (in SQL: {shorten(sql)})")
        return task.result()
    except Exception as exc:  # noqa: BLE001 - sorted into busy or database below
        if _is_unavailable(exc):
            return SvcError("busy", "the database is unavailable",
                            detail=f"busy error: the database is unavailable: {_reason(exc)}")
        return statement_failed(exc, sql)


def _wake(waiter: asyncio.Future) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _abandon_task(task: asyncio.Task) -> None:
    task.cancel()
    task.add_done_callback(_retrieve)


def _retrieve(task: asyncio.Task) -> None:
    """Take a given-up task's outcome, so asyncio does not report it as never retrieved."""
    if not task.cancelled():
        task.exception()


def _is_unavailable(exc: BaseException) -> bool:
    if isinstance(exc, (OSError, ConnectionError)):
        return True
    if asyncpg is None:
        return False
    unavailable = (asyncpg.ConnectionDoesNotExistError, asyncpg.PostgresConnectionError,
                   asyncpg.CannotConnectNowError, asyncpg.AdminShutdownError,
                   asyncpg.CrashShutdownError, asyncpg.TooManyConnectionsError)
    if isinstance(exc, unavailable):
        return True
    return isinstance(exc, asyncpg.InterfaceError) and "closed" in str(exc)


def _reason(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


async def _execute(conn, op: str, sql: str, args: tuple, cls: type | None):
    """One job on one connection; a refused statement raises (sorted by `_guarded`)."""
    if op is SCRIPT:  # a migration step: the simple protocol runs several statements
        return _count(await conn.execute(sql))
    text, statements = sql_text.for_postgres(sql)
    if statements > 1:
        return several_statements(sql)
    if memoryview in map(type, args):
        args = tuple(bytes(a) if type(a) is memoryview else a for a in args)
    try:
        if op is EXEC:  # one statement (counted above), so the simple protocol is safe too
            return _count(await conn.execute(text, *args))
        if op is ONE:
            row = await conn.fetchrow(text, *args)
            return None if row is None else _map(cls, row)(_values(row))
        rows = await conn.fetch(text, *args)
        if not rows:
            return []
        map_row = _map(cls, rows[0])
        return [map_row(_values(row)) for row in rows]
    except RowMismatch as exc:
        return SvcError("database", str(exc))


def _count(status: str | None) -> int:
    words = (status or "").split()
    if words and words[0] in _COUNTED and words[-1].isdigit():
        return int(words[-1])
    return 0


def _map(cls: type, row):
    return mapper(cls, tuple(row.keys()))


def _values(row):
    """The row's values; NUMERIC (PostgreSQL's SUM of integers, say) as int or float, so it
    maps as SQLite's INTEGER or REAL would."""
    values = tuple(row.values())
    if Decimal in map(type, values):
        values = tuple(_from_decimal(v) if type(v) is Decimal else v for v in values)
    return values


def _from_decimal(value: Decimal):
    if value.is_finite() and value == value.to_integral_value():
        return int(value)
    return float(value)


async def open_url(url: str) -> Db | SvcError:
    """The pool for `url` (made and tried with one connection on first use)."""
    found = _pools.get(url)
    if found is not None:
        return found
    if asyncpg is None:
        return SvcError("database", "cannot open a PostgreSQL database: asyncpg is missing")
    pool = await _new_pool(url)
    if isinstance(pool, SvcError):
        return pool
    found = _pools.get(url)  # opened meanwhile by another caller: keep one pool per URL
    if found is not None:
        pool.terminate()
        return found
    db = _pools[url] = PostgresDb(url, pool)
    return db


async def _new_pool(url: str):
    """A pool for `url`, tried with one connection, or the reason it cannot be made.

    The pool keeps no floor of open connections (min_size=0): asyncpg would log a traceback
    each time it failed to restore one during an outage.
    """
    pool = None
    try:
        pool = await asyncpg.create_pool(url, min_size=0, max_size=pool_size(),
                                         timeout=CONNECT_TIMEOUT_SECONDS,
                                         max_inactive_connection_lifetime=60.0, reset=_reset)
        async with pool.acquire() as conn:
            await conn.fetchval("SELECT 1")
        return pool
    except Exception as exc:  # noqa: BLE001 - unreachable, refused, bad URL, bad password
        if pool is not None:
            pool.terminate()
        return SvcError("database", f"cannot open database {_without_password(url)!r}: "
                                    f"{_reason(exc)}")


# The parent's pools, in a worker process: kept referenced so that they are never collected
# (their finalizers would abort the parent's connections through the parent's event loop).
_left_by_parent: list = []


async def reopen_after_fork() -> SvcError | None:
    """In a worker process (svc.runtime.workers), on its own event loop: every handle gets a
    pool of its own. The parent's pools are left untouched: their sockets are the parent's
    sessions, and closing them from here would also change the parent's event loop."""
    for db in list(_pools.values()):
        if db.pool is None:
            continue
        _left_by_parent.append(db.pool)
        db.pool = None
        pool = await _new_pool(db.url)
        if isinstance(pool, SvcError):
            return pool
        db.pool = pool
    return None


async def _reset(conn) -> None:
    """What a connection needs when it goes back to the pool: nothing, unless a transaction is
    still open on it (a BEGIN sent through db_exec), which is rolled back.

    asyncpg's own reset sends a query at every release (unlock advisory locks, close
    cursors, unlisten, reset settings), which halved the requests per second of a point
    lookup. svc's transactions end with COMMIT or ROLLBACK, which release their advisory
    locks, and svc programs open no cursors and listen to nothing.
    """
    if conn.is_in_transaction():
        await conn.execute("ROLLBACK")


def close_all() -> None:
    """Close every pool now (server shutdown, end of the program): open transactions are
    rolled back by the server as their connections close. At the program's exit the event
    loop may be closed already; the sockets then close with the process, to the same effect."""
    dbs = list(_pools.values())
    _pools.clear()
    for db in dbs:
        pool, db.pool = db.pool, None
        if pool is not None:
            try:
                pool.terminate()
            except RuntimeError:  # the loop is closed
                pass


def _without_password(url: str) -> str:
    """The URL as it may be logged: `user:***@host`."""
    scheme, sep, rest = url.partition("://")
    credentials, at, host = rest.rpartition("@")
    if at and ":" in credentials:
        credentials = credentials.split(":", 1)[0] + ":***"
    return f"{scheme}{sep}{credentials}{at}{host}" if at else url


__all__ = ["PostgresDb", "PostgresTx", "close_all", "is_postgres_url", "open_url", "shorten"]
