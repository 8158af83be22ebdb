"""PostgreSQL through asyncpg: a `Db` backed by a pool of connections, used on the event loop.

Programs are written once: the same `?1`/`?` placeholders (rewritten to `$n` cast to the
type of the value sent, a `None` to `NULL`, a List in `IN (?n)` to an array, sql_text.py),
the same row mapping (rows.py) and the same error kinds as SQLite. Choices made here:

- The pool (pg_pool.py) holds at most `SVC_DB_POOL_SIZE` connections (default 10), made as
  needed (one is tried by `db_open`, which is how an unreachable server is a `database`
  error there).
  Opening the same URL again returns the same `Db`.
- Each statement outside a transaction runs on a connection borrowed for it alone, so it
  is its own transaction (autocommit), as on SQLite. A `Tx` keeps one connection from
  `db_begin` to its end.
- A server that is gone (refused, reset, shut down, starting up, too many connections) makes
  a call fail with `busy` (503) "the database is unavailable", quickly, and a call that the
  server does not answer gives up with `busy` "the database did not answer within the
  processing limit" just before its request's processing limit, so a request never hangs.
  The pool drops connections that broke and connects again on a later call, so once the
  server is back requests succeed again without a restart.
- A lock wait is bounded well inside the processing limit (lock_waits.py): a transaction
  stuck behind another one fails fast with `busy`, saying so, instead of holding a queue of
  others until the limit.
- A statement the server refuses is a `database` error with its message and the SQL (a
  violated constraint is `conflict` or `invalid`, constraints.py), as on SQLite.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from svc.runtime.db import lock_waits, sql_text
from svc.runtime.db.base import ALL, COMMIT, EXEC, ONE, OPEN, ROLLBACK, SCRIPT, Db, Tx
from svc.runtime.db.errors import several_statements, shorten, shutting_down, statement_failed
from svc.runtime.db.pg_deadline import gave_up, unwatch, watch
from svc.runtime.db.pg_pool import Pool
from svc.runtime.db.rows import RowMapper, RowMismatch, mapper
from svc.runtime.observability.metrics import database_label
from svc.runtime.lib.support import SvcError

#: asyncpg, imported by the first `open_url` (`_import_driver`): a program that never opens a
#: PostgreSQL database does not pay for its import at every start (35-90 ms measured, the
#: largest of `svcc run`'s imports; the test suite starts hundreds of servers).
asyncpg: Any = None
# A statement prepared before its table changed: refused by the server before it ran (so
# asyncpg prepares it again and retries once, outside a transaction), or run with results
# whose types asyncpg no longer knows (reported, as asyncpg does). Set with `asyncpg`.
_REFUSED_BEFORE_RUNNING: type | None = None
_CHANGED: tuple = ()


def _import_driver() -> bool:
    """Import asyncpg once; False when it is missing (a broken install: the open says so)."""
    global asyncpg, _REFUSED_BEFORE_RUNNING, _CHANGED
    if asyncpg is None:
        try:
            import asyncpg as driver
        except ImportError:  # pragma: no cover - asyncpg is a dependency
            return False
        _REFUSED_BEFORE_RUNNING = driver.InvalidCachedStatementError
        _CHANGED = (driver.InvalidCachedStatementError, driver.OutdatedSchemaCacheError)
        asyncpg = driver
    return True

#: Seconds a connection attempt may take before the server counts as unreachable.
CONNECT_TIMEOUT_SECONDS = 2.0
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

    def __init__(self, url: str, pool: Pool | None) -> None:
        super().__init__()
        self.url = url
        self.pool = pool

    def __repr__(self) -> str:
        return f"Db({_without_password(self.url)!r})"

    def _submit(self, op: str, sql: str, args: tuple, cls: type | None):
        if self.pool is None:
            return _answer(shutting_down())
        return _statement(self.pool, None, op, sql, args, cls)

    async def _begin(self) -> Tx | SvcError:
        if self.pool is None:
            return shutting_down()
        tx = PostgresTx(self, self.pool)
        result = await _guarded(tx.pool.loop, tx._start(), "BEGIN")
        if isinstance(result, SvcError):
            tx.state = "never begun"
            if tx.waiting_for_connection and result.message == TOO_LATE:
                return _no_free_connection(tx.pool, "BEGIN")
            return result
        return tx


class PostgresTx(Tx):
    """A transaction: one connection of the pool from `db_begin` to its end."""

    __slots__ = ("conn", "pool", "_ending", "lock_wait_ms", "waiting_for_connection")

    def __init__(self, db: PostgresDb, pool: Pool) -> None:
        super().__init__(db)
        # An asyncpg Connection from `_start` to `_release` (asyncpg has no type information).
        self.conn: Any = None
        self.pool = pool  # its connection's (its loop, its prepared statements)
        self._ending: asyncio.Task | None = None
        self.lock_wait_ms = lock_waits.LOCK_WAIT_MS  # its statements' bound (lock_waits.py)
        self.waiting_for_connection = False  # in `_start`, until the pool lends it one

    async def _start(self) -> None:
        """Take a connection and BEGIN; one whose BEGIN failed or stopped waiting (its
        request's limit, a cancellation) is closed, never leaks."""
        pool = self.pool
        conn = pool.take()
        if conn is None:
            self.waiting_for_connection = True
            conn = await pool.acquire()
            self.waiting_for_connection = False
        begin, self.lock_wait_ms = lock_waits.begin()
        try:
            await conn.execute(begin)
        except BaseException:
            pool.discard(conn)
            raise
        self.conn = conn

    def _submit(self, op: str, sql: str, args: tuple, cls: type | None):
        if self.state is not OPEN:
            return _answer(self.finished_error())
        return _statement(self.pool, self, op, sql, args, cls)

    async def _end(self, op: str):
        if self.state is not OPEN:
            return self.finished_error()
        self.state = "committed" if op == COMMIT else "rolled back"
        result = await _guarded(self.pool.loop, self.conn.execute(op.upper()), op.upper(),
                                in_transaction=True)
        if isinstance(result, SvcError):
            if op == COMMIT:
                self.state = "rolled back because its commit failed"
            self._release(broken=True)
            return result
        self._release(broken=False)
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
            self._release(broken=True)
            return
        self._release(broken=False)

    def _release(self, broken: bool) -> None:
        conn, self.conn = self.conn, None
        if conn is None:
            return
        if broken:
            self.pool.discard(conn)  # the server rolls back whatever it had
        else:
            self.pool.give_back(conn)


async def _answer(value):
    return value


async def _statement(pool: Pool, tx: PostgresTx | None, op: str, sql: str, args: tuple,
                     cls: type | None):
    """One statement, on `tx`'s connection or, when it is None, on a connection borrowed
    from `pool` for it alone (its own transaction): its result, or the error it means, never
    raised.

    In a request it gives up with `busy` just before the processing limit (pg_deadline.py),
    and a transaction's lock waits end before that (lock_waits.py);
    a borrowed connection whose statement was cancelled settles in the background before it
    is lent again (pg_pool.py), so a server that stopped answering cannot hold the caller.
    One coroutine from the builtin to asyncpg: each level of awaiting costs on every step.
    Queries run as prepared statements kept per connection (`_prepared`).
    """
    prepared = _prepare(op, sql, args)
    if prepared.__class__ is SvcError:
        return prepared
    text, args = prepared
    task = watch(pool.loop)
    borrowed = None
    try:
        if tx is None:
            conn = pool.take()
            if conn is None:
                conn = await pool.acquire()
            borrowed = conn
        else:
            conn = tx.conn
            if task is not None:  # in a request: its lock waits end before its limit does
                lower = lock_waits.wait_to_set(pool.loop.time(), tx.lock_wait_ms)
                if lower is not None:
                    tx.lock_wait_ms = lower
                    await conn.execute(lock_waits.set_local(lower))
        if op is EXEC or op is SCRIPT:  # EXEC: one statement (counted); SCRIPT: no args, so
            value = await conn.execute(text, *args)  # the simple protocol runs several
        else:
            known = pool.statements.get(conn)
            stmt = None if known is None else known.get(text)
            if stmt is None:
                stmt = await _prepared(pool, conn, text)
            try:
                value = await (stmt.fetchrow(*args) if op is ONE else stmt.fetch(*args))
            except _CHANGED as changed:  # a table or type changed since it was prepared
                pool.statements.get(conn, {}).pop(text, None)
                if type(changed) is not _REFUSED_BEFORE_RUNNING or conn.is_in_transaction():
                    raise
                stmt = await _prepared(pool, conn, text)  # once more, as asyncpg would
                value = await (stmt.fetchrow(*args) if op is ONE else stmt.fetch(*args))
    except asyncio.CancelledError:
        if borrowed is not None:
            pool.give_back_later(borrowed)  # cancelled mid-statement: it settles first
        if task is not None and gave_up(task):
            if tx is None and borrowed is None:
                return _no_free_connection(pool, sql)
            return _too_late(sql)
        raise
    except Exception as exc:  # noqa: BLE001 - sorted into busy or database
        if borrowed is not None:
            pool.give_back(borrowed)  # a refused statement leaves it usable; closed: dropped
        failure = _failure(exc, sql, tx is not None)
        if failure.retry and tx is not None:  # the server rolled it back: end it here too
            tx._abandon(CLASHED)
        return failure
    finally:
        if task is not None:
            unwatch(task)
    if borrowed is not None:
        pool.give_back(borrowed)
    return _result(op, cls, value)


#: Prepared statements kept per connection; a program that builds its SQL at run time
#: starts a connection's set over past this many texts.
PREPARED_LIMIT = 256


async def _prepared(pool: Pool, conn, text: str):
    """A prepared statement for `text` on `conn`, kept for its next uses there.

    asyncpg's `fetchrow(text)` finds its own cached statement too, through four levels of
    Python calls per query; a statement kept here is used directly (measured in
    bench/PERF.md). asyncpg prepares on first use either way, so the round trips are the same.
    """
    stmt = await conn.prepare(text)
    known = pool.statements.get(conn)
    if known is None or len(known) >= PREPARED_LIMIT:
        known = pool.statements[conn] = {}
    known[text] = stmt
    return stmt


async def _guarded(loop, work, sql: str, in_transaction: bool = False):
    """Await `work` (BEGIN, COMMIT, ROLLBACK) as `_statement` awaits its statement: the
    result or the error it means, `busy` just before the processing limit."""
    task = watch(loop)
    try:
        return await work
    except asyncio.CancelledError:
        if task is not None and gave_up(task):
            return _too_late(sql)
        raise
    except Exception as exc:  # noqa: BLE001 - sorted into busy or database
        return _failure(exc, sql, in_transaction)
    finally:
        if task is not None:
            unwatch(task)


#: How a transaction the database rolled back after a clash is finished (the error of a later
#: statement given its Tx says so; it is not logged as forgotten when its function returns).
CLASHED = "it clashed with another transaction"

#: What a request is told when the database answered nothing before its processing limit
#: (a frozen server, a statement slower than the limit): not "unavailable", which is kept for
#: a server that cannot be reached.
TOO_LATE = "the database did not answer within the processing limit"


def _too_late(sql: str) -> SvcError:
    return SvcError("busy", TOO_LATE, detail=f"busy error: {TOO_LATE} (in SQL: {shorten(sql)})")


def _no_free_connection(pool: Pool, sql: str) -> SvcError:
    """Every connection of the pool stayed lent until the processing limit: the database
    may be fine, the pool is too small for the load (or its transactions too long)."""
    message = "no database connection was free within the processing limit"
    return SvcError("busy", message, detail=f"busy error: {message}: all {pool.max_size} "
                                            f"connections of the pool (SVC_DB_POOL_SIZE) were "
                                            f"in use (in SQL: {shorten(sql)})")


def _failure(exc: Exception, sql: str, in_transaction: bool = False) -> SvcError:
    if _is_unavailable(exc):
        return SvcError("busy", "the database is unavailable",
                        detail=f"busy error: the database is unavailable: {_reason(exc)}")
    return statement_failed(exc, sql, in_transaction)


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


def _prepare(op: str, sql: str, args: tuple):
    """(the text to send, its arguments), or the error of a call that sends nothing."""
    if op is SCRIPT:  # a migration step: the simple protocol runs several statements
        return sql, ()
    typed = sql_text.typed_for_postgres(sql, args)
    if isinstance(typed, SvcError):  # a List argument outside IN (?n)
        return typed
    text, statements, args = typed
    if statements > 1:
        return several_statements(sql)
    return text, args


def _result(op: str, cls: type | None, value):
    """What the builtin returns for asyncpg's answer: rows mapped to `cls`, or a count."""
    try:
        if op is ONE:
            return None if value is None else _map(cls, value)(value)
        if op is ALL:
            if not value:
                return []
            map_row = _map(cls, value[0])
            return [map_row(row) for row in value]
    except RowMismatch as exc:
        return SvcError("database", str(exc))
    return _count(value)


def _count(status: str | None) -> int:
    words = (status or "").split()
    if words and words[0] in _COUNTED and words[-1].isdigit():
        return int(words[-1])
    return 0


def _map(cls: type | None, row: Any) -> RowMapper:
    return mapper(cls, tuple(row.keys()))


async def open_url(url: str) -> Db | SvcError:
    """The pool for `url` (made and tried with one connection on first use)."""
    found = _pools.get(url)
    if found is not None:
        return found
    if not _import_driver():
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


async def _new_pool(url: str) -> Pool | SvcError:
    """A pool for `url`, tried with one connection, or the reason it cannot be made."""
    pool = Pool(url, pool_size(), lambda: asyncpg.connect(
        url, timeout=CONNECT_TIMEOUT_SECONDS, server_settings=lock_waits.SERVER_SETTINGS))
    try:
        conn = await pool.acquire()
        try:
            await conn.fetchval("SELECT 1")
        finally:
            pool.give_back(conn)
        return pool
    except Exception as exc:  # noqa: BLE001 - unreachable, refused, bad URL, bad password
        pool.terminate()
        return SvcError("database", f"cannot open database {_without_password(url)!r}: "
                                    f"{_reason(exc)}")


# The parent's pools, in a worker process: kept referenced so that they are never collected
# (their finalizers would abort the parent's connections through the parent's event loop).
_left_by_parent: list = []


async def reopen_after_fork() -> SvcError | None:
    """In a worker process (svc.runtime.http.workers), on its own event loop: every handle gets a
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


def add_gauges(rows: dict[str, list]) -> None:
    """Each open pool's waiters, size and connections in use."""
    for db in list(_pools.values()):
        pool = db.pool
        if pool is None:
            continue
        label = database_label(db.url)
        rows["svc_db_queue_depth"].append([[label], len(pool.waiters)])
        rows["svc_db_pool_size"].append([[label], pool.max_size])
        rows["svc_db_pool_connections"].append([[label], pool.size])
        rows["svc_db_pool_connections_in_use"].append([[label], pool.size - len(pool.idle)])


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
