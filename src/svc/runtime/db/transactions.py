"""`db_begin`, `db_commit`, `db_rollback`: transactions, and who rolls back a forgotten one.

A transaction ends with the function that began it. Generated code gives each function that
calls `db_begin` a list of the transactions it begins (its *scope*, `_svc_txs`) and calls
`end_transactions(scope)` when the function returns or fails: a transaction still open then
is rolled back, and logged once with the .svc line of its `db_begin`. So a helper that
returns early without `db_commit` cannot leave the database held for its caller.

While such a transaction is open, the task that began it may not use the `Db` itself
(`refuse_if_held`, called by every database builtin given a `Db`): on SQLite the statement
would wait for the transaction, which waits for the statement (the same task), until the
request's processing limit, or forever in `main` and in a test. It is an immediate
`database` error naming the `db_begin` line instead, on every database, so that a program
behaves alike on SQLite and PostgreSQL. The owner is the current task: the handler's
eager.Resumer (even in its first step), a test's, or `main`'s Task.

In a request the processing limit also rolls an open transaction back directly (a timer), in
case the handler outlives it. A transaction begun by the runtime's own callers (no scope:
tests of the runtime) is rolled back when its owner task ends.

On SQLite `db_begin` returns at once, without a round trip to the database thread: the BEGIN
goes with the transaction's first statement (sqlite_tx.py), whose result then carries a
failure to begin.
"""

from __future__ import annotations

import asyncio
import sys

from svc.runtime.observability import serverlog
from svc.runtime.services import current as current_services
from svc.runtime.http.context import request_deadline
from svc.runtime.db.base import COMMIT, OPEN, ROLLBACK, Db, Tx
from svc.runtime.db.sqlite import SqliteDb
from svc.runtime.db.sqlite_tx import SqliteTx
from svc.runtime.lib.support import SvcError

_RETURNED = "the function that began it returned without db_commit"
_FAILED = "the function that began it failed before db_commit"
_ENDED = "it was not committed before its request (or main) ended"
_TIMED_OUT = "its request passed the processing limit"
#: A scope longer than this (a function beginning transactions in a loop) drops its
#: finished ones at the next db_begin, so it stays short.
_SCOPE_PRUNE_AT = 8


async def db_begin(db: Db, site: str = "", scope: list[Tx] | None = None) -> Tx | SvcError:
    """Start a transaction; db_exec, db_all and db_one given the Tx run inside it.

    Generated code passes the call's .svc `site` ("file:line") and its function's `scope`."""
    if db._holders:
        held = refuse_if_held(db)
        if held is not None:
            return held
    tx: Tx | SvcError
    if db.__class__ is SqliteDb and not db._closing:
        tx = SqliteTx(db, unbegun=True)
    else:
        tx = await db._begin()
    if isinstance(tx, Tx):
        loop = _running_loop(db)
        if scope is None:
            _watch_owner(tx, loop)
        else:
            _hold(tx, site, scope, loop)
        deadline = request_deadline()
        if deadline is not None:
            loop.call_at(deadline, _roll_back_forgotten, tx, _TIMED_OUT)
    return tx


async def db_commit(tx: Tx) -> None | SvcError:
    """Make the transaction's changes permanent. The Tx is finished afterwards."""
    tracer = current_services().tracer
    if tracer is None:
        return await tx._end(COMMIT)
    return await tracer.transaction_end(tx, "COMMIT", tx._end(COMMIT))


async def db_rollback(tx: Tx) -> None | SvcError:
    """Undo the transaction's changes. The Tx is finished afterwards."""
    tracer = current_services().tracer
    if tracer is None:
        return await tx._end(ROLLBACK)
    return await tracer.transaction_end(tx, "ROLLBACK", tx._end(ROLLBACK))


def end_transactions(scope: list[Tx]) -> None:
    """The function that began `scope`'s transactions returns or fails (generated code calls
    this in its `finally`): roll back and log those still open; its task may use their
    `Db`s again."""
    for tx in scope:
        _release(tx)
        if tx.state is OPEN:
            _roll_back_forgotten(tx, _RETURNED if sys.exc_info()[0] is None else _FAILED)


def refuse_if_held(db: Db | Tx) -> SvcError | None:
    """The error for a statement (or db_begin, db_migrate) on `db` while the current task
    holds an open transaction on it; None when it holds none (and always for a Tx)."""
    holders = db._holders
    tx = holders.get(asyncio.current_task(_running_loop(db))) if holders else None
    if tx is None:
        return None
    if tx.state is not OPEN:  # committed or rolled back; its function has not returned yet
        _release(tx)
        return None
    return SvcError("database", f"this task's transaction (db_begin at {tx.site}) is still "
                                "open: give the statement its Tx, or end the transaction "
                                "(db_commit, db_rollback) before using the Db")


def _running_loop(db: Db | Tx) -> asyncio.AbstractEventLoop:
    """The running loop, known to an SQLite `Db` without asking (`get_running_loop` costs a
    getpid system call in Python 3.11; `current_task(loop)` does not ask)."""
    if db.__class__ is SqliteTx:
        return db.loop  # type: ignore[union-attr]
    if db.__class__ is SqliteDb:
        return db._current_loop()  # type: ignore[union-attr]
    return asyncio.get_running_loop()


def _hold(tx: Tx, site: str, scope: list[Tx], loop: asyncio.AbstractEventLoop) -> None:
    """Record `tx` in its function's scope and as held by the current task on its Db."""
    tx.site = site
    if len(scope) >= _SCOPE_PRUNE_AT:
        _prune(scope)
    scope.append(tx)
    owner = asyncio.current_task(loop)
    if owner is not None:
        tx.owner = owner
        tx.db._holders[owner] = tx


def _release(tx: Tx) -> None:
    """Its task no longer holds `tx`'s Db (it ended, or its function returned)."""
    owner = tx.owner
    if owner is not None:
        tx.owner = None
        holders = tx.db._holders
        if holders.get(owner) is tx:
            del holders[owner]


def _prune(scope: list[Tx]) -> None:
    kept = []
    for tx in scope:
        if tx.state is OPEN:
            kept.append(tx)
        else:
            _release(tx)
    scope[:] = kept


def _roll_back_forgotten(tx: Tx, why: str) -> None:
    """Roll back, without waiting, a transaction nobody ended; say so once, with its line."""
    if tx.state is not OPEN:
        return
    tx._abandon(why)
    if not tx.site:
        return
    message = f"the transaction begun at {tx.site} was rolled back: {why}"
    serverlog.report(message, outside=f"svc: {message}")


def _watch_owner(tx: Tx, loop: asyncio.AbstractEventLoop) -> None:
    """A transaction without a scope: rolled back when its owner task ends."""
    owner = asyncio.current_task(loop)
    if owner is not None:
        owner.add_done_callback(lambda _task: _roll_back_forgotten(tx, _ENDED))
