"""The database builtins: `db_open`, `db_exec`, `db_all`, `db_one`, on any database.

    base.py          what every database handle offers (`Db`, `Tx`), whichever is behind it
    sqlite.py        the embedded SQLite database: one thread per `Db`, a bounded job queue
    sqlite_thread.py the database thread's side: batches of jobs run, results handed back
    sqlite_tx.py     transactions on SQLite: the transaction holds the database thread
    group_commit.py  the plain writes of one batch on an SQLite file share one fsync
    postgres.py      PostgreSQL through asyncpg: a `Db` backed by a pool, on the event loop
    pg_pool.py       that pool: asyncpg connections handed out one caller at a time
    pg_deadline.py   giving up on a PostgreSQL statement just before its request's limit
    lock_waits.py    how long a PostgreSQL statement may wait for another transaction's lock
    transactions.py  `db_begin`, `db_commit`, `db_rollback`, and who rolls back a forgotten one
    migrations.py    `db_migrate`: a schema brought up to date with the program's steps
    args.py          a call's arguments looked at first, so SQLite and PostgreSQL behave alike
    sql_text.py      SQL text read without parsing it: statements and placeholders
    regexp.py        `x REGEXP pattern` on both databases, with RE2's patterns
    rows.py          a row's values into an svc class's fields, for every database
    errors.py        the errors every backend returns (values, never raised to svc code)
    constraints.py   constraint violations as the errors a client should see

Generated code calls these functions; they pick nothing themselves but hand the work to the
handle they are given (a `Db` of sqlite.py or postgres.py, or a `Tx`). Every coroutine
returns its value or an `SvcError` (docs/internals.md, "Database API"), never raises for
database problems.

Nothing is opened at import: a worker process that forks after import opens its own
connections when the program calls `db_open`.
"""

from __future__ import annotations

import atexit
import sys

from svc.runtime import services
from svc.runtime.services import current as current_services
from svc.runtime.db import postgres, sql_text, sqlite
from svc.runtime.db.args import (BoolList, FloatList, IntList, Json, JsonList, TextList,
                                 nul_refused, optional, usual, with_json, without_views)
from svc.runtime.db.base import ALL, EXEC, ONE, Db, Tx
from svc.runtime.db.errors import SEVERAL_STATEMENTS, at_svc_line
from svc.runtime.db.migrations import db_migrate, db_migrate_declared
from svc.runtime.db.rows import RowMismatch
from svc.runtime.db.sqlite import BUSY_TIMEOUT_SECONDS, resolve_path, set_base_directory
from svc.runtime.db.transactions import (db_begin, db_commit, db_rollback, end_transactions,
                                         refuse_if_held)
from svc.runtime.lib.support import SvcError

__all__ = ["BUSY_TIMEOUT_SECONDS", "BoolList", "Db", "FloatList", "IntList", "Json", "JsonList",
           "RowMismatch", "TextList", "Tx", "close_all", "db_all", "db_begin", "db_commit",
           "db_dialect", "db_exec", "db_migrate", "db_migrate_declared", "db_one", "db_open", "db_rollback",
           "end_transactions", "optional", "resolve_path", "set_base_directory"]

#: The errors of a call's own making, to which the builtins add the .svc line of the call.
_AT_SVC_LINE = (SEVERAL_STATEMENTS, sql_text.NOT_VALUES)


async def db_open(path: str) -> Db | SvcError:
    """Open a database: a PostgreSQL URL, an SQLite file (created if needed) or `:memory:`."""
    if isinstance(path, str) and postgres.is_postgres_url(path):
        return await postgres.open_url(path)
    return await sqlite.open_file(path)


def db_dialect(db: Db | Tx) -> str:
    """"sqlite" or "postgresql", so one program can carry a schema for each."""
    return db.dialect


# `db` may be a Db or a Tx (the statement then runs inside the transaction). A result that
# is a several-statements error, or a List of other values in `IN (?n)`, gets the .svc line
# of the call (the caller's frame). A Db whose `_holders` is not empty may be held by the
# caller's own open transaction (transactions.py); a Tx's `_holders` is None. Arguments with
# a NUL, a view, a List or a JSON value are made ready first (`_ready`, args.py); others go as
# they are.

def _ready(db: Db | Tx, sql: str, args: tuple) -> tuple[str, tuple] | SvcError:
    """The text and arguments of a call with a NUL in a str, a view, a List or a JSON
    argument: the NUL refused on every database, the view copied, the JSON value encoded, the
    List and JSON written for SQLite (postgres.py writes its own)."""
    encoded = with_json(sql, without_views(args))
    if isinstance(encoded, SvcError):
        return encoded
    args = encoded
    refused = nul_refused(sql, args)
    if refused is not None:
        return refused
    if db.dialect == "sqlite":
        return sql_text.for_sqlite(sql, args)
    return sql, args


async def db_exec(db: Db | Tx, sql: str, *args) -> int | SvcError:
    """Run one statement; the number of rows it changed (0 for statements that change none)."""
    if db._holders:
        held = refuse_if_held(db)
        if held is not None:
            return held
    if args and not usual(args):
        ready = _ready(db, sql, args)
        if isinstance(ready, SvcError):
            return _at_line(ready)
        sql, args = ready
    tracer = current_services().tracer
    if tracer is None:
        result = await db._submit(EXEC, sql, args, None)
    else:  # a client span around it (svc.runtime.observability.otel)
        result = await tracer.statement(db, EXEC, sql, args, None)
    if result.__class__ is SvcError and result.message.startswith(_AT_SVC_LINE):
        return at_svc_line(result, sys._getframe(1))
    return result


async def db_all(cls: type, db: Db | Tx, sql: str, *args) -> list | SvcError:
    """Every row of a query, each mapped to an instance of `cls`."""
    if db._holders:
        held = refuse_if_held(db)
        if held is not None:
            return held
    if args and not usual(args):
        ready = _ready(db, sql, args)
        if isinstance(ready, SvcError):
            return _at_line(ready)
        sql, args = ready
    tracer = current_services().tracer
    if tracer is None:
        result = await db._submit(ALL, sql, args, cls)
    else:  # a client span around it (svc.runtime.observability.otel)
        result = await tracer.statement(db, ALL, sql, args, cls)
    if result.__class__ is SvcError and result.message.startswith(_AT_SVC_LINE):
        return at_svc_line(result, sys._getframe(1))
    return result


async def db_one(cls: type, db: Db | Tx, sql: str, *args) -> object | None | SvcError:
    """The first row of a query mapped to `cls`, or None when there is no row."""
    if db._holders:
        held = refuse_if_held(db)
        if held is not None:
            return held
    if args and not usual(args):
        ready = _ready(db, sql, args)
        if isinstance(ready, SvcError):
            return _at_line(ready)
        sql, args = ready
    tracer = current_services().tracer
    if tracer is None:
        result = await db._submit(ONE, sql, args, cls)
    else:  # a client span around it (svc.runtime.observability.otel)
        result = await tracer.statement(db, ONE, sql, args, cls)
    if result.__class__ is SvcError and result.message.startswith(_AT_SVC_LINE):
        return at_svc_line(result, sys._getframe(1))
    return result


def _at_line(error: SvcError) -> SvcError:
    """`error`, with the .svc line of the call when it is one of the call's own making (the
    builtin's caller: two frames up)."""
    if error.message.startswith(_AT_SVC_LINE):
        return at_svc_line(error, sys._getframe(2))
    return error


def close_all() -> None:
    """Close every open database (server shutdown, end of the program)."""
    sqlite.close_all()
    postgres.close_all()


def _refuses_fork() -> str | None:
    """The worker supervisor (svc.runtime.http.workers) refuses more than one worker while an
    in-memory database is open (each worker would see its own)."""
    if ":memory:" not in sqlite.open_paths():
        return None
    return ("SVC_WORKERS above 1 cannot serve an in-memory database (:memory:): each worker "
            "would see a different one; use a database file")


async def _reopen_after_fork() -> str | None:
    """First thing in each worker process (svc.runtime.http.workers), on the worker's event
    loop: every handle `main` opened gets fresh connections of the worker's own (an SQLite
    thread, a PostgreSQL pool); nothing is shared across a fork. A database that cannot be
    reopened is the message returned."""
    sqlite.reopen_after_fork()
    problem = await postgres.reopen_after_fork()
    return None if problem is None else problem.message


def _gauges(rows: dict[str, list]) -> None:
    """The queues of the open SQLite databases and the pools of the PostgreSQL ones, now."""
    sqlite.add_gauges(rows)
    postgres.add_gauges(rows)


services.join(services.Component(
    "databases", at_shutdown=close_all, gauges=_gauges, refuses_fork=_refuses_fork,
    after_fork=_reopen_after_fork))


# A program whose `main` returns without serving still closes its databases cleanly (the WAL
# checkpointed into the file, no -wal/-shm files left behind). Daemon threads are still alive
# while atexit handlers run.
atexit.register(close_all)
