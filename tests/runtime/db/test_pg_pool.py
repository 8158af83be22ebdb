"""svc's PostgreSQL pool (db/pg_pool.py) and the request deadline of a PostgreSQL statement
(db/pg_deadline.py): connections lent in arrival order, never leaked or lost, and a statement
the server does not answer in time is `busy` on the handler's own task, whose connection
settles and is used again."""

from __future__ import annotations

import asyncio
from typing import ClassVar

import msgspec
import pytest

from svc.runtime.http import eager
from svc.runtime.http.context import reset_request_deadline, set_request_deadline
from svc.runtime.db import (close_all, db_begin, db_exec, db_one, db_open, db_rollback,
                            pg_deadline, postgres)
from svc.runtime.db.pg_pool import Pool, PoolClosed
from svc.runtime.lib.support import SvcError

# Its subject is the compiled request path: `make test` runs it again on the pure-Python modules.
pytestmark = pytest.mark.compiled_path


class Pid(msgspec.Struct):
    pid: int
    __svc_fields__: ClassVar = (("pid", "i64", False),)


class Count(msgspec.Struct):
    n: int
    __svc_fields__: ClassVar = (("n", "i64", False),)


# --- the pool alone, with stand-in connections ----------------------------------------------

class FakeConn:
    """What the pool asks of an asyncpg connection."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.closed = False
        self.in_transaction = False
        self.ran: list[str] = []

    def is_closed(self) -> bool:
        return self.closed

    def is_in_transaction(self) -> bool:
        return self.in_transaction

    def terminate(self) -> None:
        self.closed = True

    async def execute(self, sql: str) -> str:
        self.ran.append(sql)
        self.in_transaction = False
        return "ROLLBACK"

    async def fetchval(self, sql: str):
        self.ran.append(sql)
        return 1

    def __repr__(self) -> str:
        return self.name


def fake_pool(size: int) -> tuple[Pool, list[FakeConn]]:
    made: list[FakeConn] = []

    async def connect():
        made.append(FakeConn(f"c{len(made) + 1}"))
        return made[-1]

    return Pool("postgresql://x", size, connect), made


def test_connections_are_made_up_to_the_size_then_lent_in_arrival_order():
    async def main():
        pool, made = fake_pool(2)
        first, second = await pool.acquire(), await pool.acquire()
        order = []

        async def wait(name):
            conn = await pool.acquire()
            order.append((name, conn.name))
            return conn

        waiting = [asyncio.create_task(wait(n)) for n in ("a", "b", "c")]
        await asyncio.sleep(0)
        assert len(made) == 2 and pool.take() is None  # no third connection
        pool.give_back(second)
        pool.give_back(first)
        await asyncio.sleep(0)
        assert order == [("a", "c2"), ("b", "c1")]
        pool.give_back(waiting[0].result())
        await asyncio.sleep(0)
        assert order[-1] == ("c", "c2")
        return pool.size

    assert asyncio.run(main()) == 2


def test_a_cancelled_waiter_passes_its_connection_on():
    async def main():
        pool, _ = fake_pool(1)
        conn = await pool.acquire()
        cancelled = asyncio.create_task(pool.acquire())
        later = asyncio.create_task(pool.acquire())
        await asyncio.sleep(0)
        pool.give_back(conn)  # handed to `cancelled`, which is cancelled before it wakes
        cancelled.cancel()
        got = await later
        return got is conn, cancelled.cancelled()

    assert asyncio.run(main()) == (True, True)


def test_a_closed_connection_is_dropped_and_its_place_opens_a_new_one():
    async def main():
        pool, made = fake_pool(1)
        conn = await pool.acquire()
        waiter = asyncio.create_task(pool.acquire())
        await asyncio.sleep(0)
        conn.closed = True  # the server went away
        pool.give_back(conn)
        fresh = await waiter
        return fresh is made[1], pool.size

    assert asyncio.run(main()) == (True, 1)


def test_a_connection_left_in_a_transaction_is_rolled_back_before_reuse():
    async def main():
        pool, made = fake_pool(1)
        conn = await pool.acquire()
        conn.in_transaction = True
        pool.give_back(conn)
        again = await pool.acquire()
        return again is conn, conn.ran, conn.in_transaction

    assert asyncio.run(main()) == (True, ["ROLLBACK"], False)


def test_a_connection_given_back_later_settles_first():
    async def main():
        pool, _ = fake_pool(1)
        conn = await pool.acquire()
        pool.give_back_later(conn)
        assert pool.take() is None  # still settling
        again = await pool.acquire()
        return again is conn, conn.ran

    assert asyncio.run(main()) == (True, ["SELECT 1"])


def test_idle_connections_unused_for_a_whole_sweep_are_closed():
    async def main():
        pool, made = fake_pool(3)
        conns = [await pool.acquire() for _ in range(3)]
        assert pool._sweep is not None  # armed while connections are open
        for conn in conns:
            pool.give_back(conn)
        pool._sweep_idle()  # idle for less than a period: all kept
        kept = pool.take()  # the most recent one is used, the other two are not
        pool._sweep_idle()  # a whole period untouched: those two are closed
        pool.give_back(kept)
        pool._sweep_idle()
        return [c.closed for c in made], pool.size, pool._sweep is not None

    assert asyncio.run(main()) == ([True, True, False], 1, True)


def test_terminate_closes_lent_connections_and_fails_waiters():
    async def main():
        pool, made = fake_pool(1)
        conn = await pool.acquire()
        waiter = asyncio.create_task(pool.acquire())
        await asyncio.sleep(0)
        pool.terminate()
        with pytest.raises(PoolClosed):
            await waiter
        pool.give_back(conn)
        return conn.closed, pool.idle, pool.size

    assert asyncio.run(main()) == (True, [], 0)


# --- on a real server -----------------------------------------------------------------------

@pytest.fixture
def one_connection(postgres_cluster, monkeypatch) -> str:
    """A database URL whose pool holds a single connection."""
    monkeypatch.setenv("SVC_DB_POOL_SIZE", "1")
    return postgres_cluster.create_database()


async def _in_request(coro_fn, limit: float):
    """Run `coro_fn()` as the server runs a handler: its first step inline under eager.py's
    stand-in (no Task), with the request deadline `limit` seconds ahead."""
    loop = asyncio.get_running_loop()
    answer = loop.create_future()

    def kick():
        token = set_request_deadline(loop.time() + limit)
        try:
            done, value = eager.start(loop, coro_fn())
        finally:
            reset_request_deadline(token)
        if done:
            answer.set_result(value)
        else:
            value.on_done(lambda resumer: answer.set_result(resumer.result()))

    loop.call_soon(kick)
    return await answer


def test_a_statement_past_the_deadline_is_busy_and_its_connection_is_used_again(one_connection):
    async def main():
        db = await db_open(one_connection)
        before = await db_one(Pid, db, "SELECT pg_backend_pid() AS pid")
        loop = asyncio.get_running_loop()
        started = loop.time()
        slow = await _in_request(lambda: db_exec(db, "SELECT pg_sleep(5)"), limit=0.5)
        took = loop.time() - started
        after = await db_one(Pid, db, "SELECT pg_backend_pid() AS pid")  # waits for the settle
        size = db.pool.size
        watched = pg_deadline._sweep.times, pg_deadline._sweep.expired
        close_all()
        return slow, took, before.pid == after.pid, size, watched

    slow, took, same, size, watched = asyncio.run(main())
    assert watched == ({}, {})  # nothing left behind in the sweep
    assert isinstance(slow, SvcError) and slow.kind == "busy", slow
    assert "did not answer within the processing limit" in slow.detail
    assert 0.3 < took < 0.5, took  # just before the limit, not after it
    assert same and size == 1  # cancelled on the server, then lent again: nothing leaked


def test_a_cancelled_statement_raises_and_leaks_no_connection(one_connection):
    """Cancelled by someone else (the server at the limit, a test): not the deadline's busy."""
    async def main():
        db = await db_open(one_connection)
        loop = asyncio.get_running_loop()
        token = set_request_deadline(loop.time() + 10)
        try:
            task = asyncio.create_task(db_exec(db, "SELECT pg_sleep(5)"))
        finally:
            reset_request_deadline(token)
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        n = await db_one(Count, db, "SELECT 7 AS n")
        size = db.pool.size
        close_all()
        return n.n, size

    assert asyncio.run(main()) == (7, 1)


def test_a_begin_past_the_deadline_is_busy_and_frees_its_place(one_connection):
    async def main():
        db = await db_open(one_connection)
        conn = await db.pool.acquire()  # the only connection is busy elsewhere
        tx = await _in_request(lambda: db_begin(db), limit=0.3)
        db.pool.give_back(conn)
        n = await db_one(Count, db, "SELECT 3 AS n")
        close_all()
        return tx, n.n

    tx, n = asyncio.run(main())
    assert isinstance(tx, SvcError) and tx.kind == "busy", tx
    # it waited for the pool, not for the database: said so, and how to make room
    assert tx.message == "no database connection was free within the processing limit"
    assert "all 1 connections of the pool (SVC_DB_POOL_SIZE) were in use" in tx.detail
    assert n == 3


def test_a_statement_that_waits_for_a_connection_past_the_deadline_says_so(one_connection):
    async def main():
        db = await db_open(one_connection)
        conn = await db.pool.acquire()  # the only connection is busy elsewhere
        waited = await _in_request(lambda: db_exec(db, "SELECT 1"), limit=0.3)
        db.pool.give_back(conn)
        close_all()
        return waited

    waited = asyncio.run(main())
    assert isinstance(waited, SvcError) and waited.kind == "busy", waited
    assert waited.message == "no database connection was free within the processing limit"


def test_a_transaction_left_open_through_db_exec_is_rolled_back(one_connection):
    async def main():
        db = await db_open(one_connection)
        await db_exec(db, "BEGIN")
        await db_exec(db, "SELECT pg_advisory_xact_lock(42)")  # held until its transaction ends
        n = await db_one(Count, db, "SELECT count(*) AS n FROM pg_locks "
                                    "WHERE locktype = 'advisory' AND pid = pg_backend_pid()")
        close_all()
        return n.n

    assert asyncio.run(main()) == 0


# --- prepared statements kept per connection ------------------------------------------------

class Item(msgspec.Struct):
    id: int
    name: str
    __svc_fields__: ClassVar = (("id", "i64", False), ("name", "str", False))


def test_a_kept_statement_whose_table_changed_is_prepared_again(one_connection):
    """`SELECT *` kept from before an ALTER TABLE: the server refuses it before running it;
    outside a transaction it is prepared again and run (as asyncpg's own cache does), inside
    one the transaction is spoiled and the call is a `database` error, as with asyncpg."""
    async def main():
        db = await db_open(one_connection)
        await db_exec(db, "CREATE TABLE t (id BIGINT PRIMARY KEY, name TEXT NOT NULL)")
        await db_exec(db, "INSERT INTO t VALUES (1, 'a')")
        sql = "SELECT * FROM t WHERE id = ?1"
        before = await db_one(Item, db, sql, 1)
        await db_exec(db, "ALTER TABLE t ADD COLUMN extra TEXT")
        after = await db_one(Item, db, sql, 1)
        await db_exec(db, "ALTER TABLE t DROP COLUMN extra")
        tx = await db_begin(db)
        inside = await db_one(Item, tx, sql, 1)
        await db_rollback(tx)
        again = await db_one(Item, db, sql, 1)
        close_all()
        return before, after, inside, again

    before, after, inside, again = asyncio.run(main())
    assert before.name == after.name == again.name == "a"
    assert isinstance(inside, SvcError) and inside.kind == "database", inside


def test_the_statements_kept_per_connection_are_bounded(one_connection, monkeypatch):
    monkeypatch.setattr(postgres, "PREPARED_LIMIT", 5)

    async def main():
        db = await db_open(one_connection)
        sizes = []
        for n in range(12):
            found = await db_one(Count, db, f"SELECT {n} AS n")
            assert found.n == n
            sizes.extend(len(kept) for kept in db.pool.statements.values())
        close_all()
        return max(sizes)

    assert asyncio.run(main()) <= 5
