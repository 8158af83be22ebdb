"""`db_begin`, `db_commit`, `db_rollback`: transactions, and who rolls back a forgotten one.

A transaction belongs to the asyncio Task that began it: the request's handler, or `main`.
When that Task ends (the handler returned, failed, or was cancelled at the processing limit;
`main` returned) a transaction it left open is rolled back, so a forgotten `db_commit` can
neither hold SQLite's database thread nor a PostgreSQL connection of the pool. In a request
the processing limit also rolls it back directly (a timer), in case the Task outlives it.

On SQLite `db_begin` returns at once, without a round trip to the database thread: the BEGIN
goes with the transaction's first statement (sqlite_tx.py), whose result then carries a
failure to begin. The owner is watched from `db_begin` on, even in a handler's first step:
its eager.Resumer is the current task from that step on.
"""

from __future__ import annotations

import asyncio

from svc.runtime.context import request_deadline
from svc.runtime.db.base import COMMIT, ROLLBACK, Db, Tx
from svc.runtime.db.sqlite import SqliteDb
from svc.runtime.db.sqlite_tx import SqliteTx
from svc.runtime.support import SvcError

_ENDED = "it was not committed before its request (or main) ended"
_TIMED_OUT = "its request passed the processing limit"


async def db_begin(db: Db) -> Tx | SvcError:
    """Start a transaction; db_exec, db_all and db_one given the Tx run inside it."""
    tx: Tx | SvcError
    if db.__class__ is SqliteDb and not db._closing:
        tx = SqliteTx(db, unbegun=True)
    else:
        tx = await db._begin()
    if isinstance(tx, Tx):
        _watch(tx)
    return tx


async def db_commit(tx: Tx) -> None | SvcError:
    """Make the transaction's changes permanent. The Tx is finished afterwards."""
    return await tx._end(COMMIT)


async def db_rollback(tx: Tx) -> None | SvcError:
    """Undo the transaction's changes. The Tx is finished afterwards."""
    return await tx._end(ROLLBACK)


def _watch(tx: Tx) -> None:
    """Roll `tx` back if its owner (the handler's eager.Resumer, or `main`'s Task) ends, or
    its request's processing limit passes, first."""
    owner = asyncio.current_task()
    if owner is not None:
        owner.add_done_callback(lambda _task: tx._abandon(_ENDED))
    deadline = request_deadline()
    if deadline is not None:
        asyncio.get_running_loop().call_at(deadline, tx._abandon, _TIMED_OUT)
