"""How long a PostgreSQL statement waits for another transaction's lock (db/lock_waits.py),
and what it answers when the wait ends: a real server, the lock held by a session of the
test's own."""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager

import asyncpg
import pytest

from svc.runtime.db import close_all, db_begin, db_exec, db_migrate, db_open, lock_waits
from svc.runtime.db.errors import statement_failed
from svc.runtime.db.migrations import _PG_LOCK_KEY
from svc.runtime.db.postgres import CLASHED, TOO_LATE
from svc.runtime.http.context import reset_request_deadline, set_request_deadline
from svc.runtime.lib.support import SvcError
from tests.runtime.db.test_pg_pool import _in_request

# Its subject is the compiled request path: `make test` runs it again on the pure-Python modules.
pytestmark = pytest.mark.compiled_path

#: `db_all[str]`'s row description: one text column.
SHOWN = ("db_all[str]", "str", False)
LOCK_WAIT = "a lock held by another transaction was not released in time; retry it"
CANCELLED = "the database cancelled the statement; retry it"


@pytest.fixture
def url(postgres_cluster) -> str:
    return postgres_cluster.create_database()


@asynccontextmanager
async def row_locked(url: str):
    """Account 1's row locked by another session until the block ends."""
    holder = await asyncpg.connect(url)
    try:
        async with holder.transaction():
            await holder.execute("SELECT * FROM accounts WHERE id = 1 FOR UPDATE")
            yield
    finally:
        await holder.close()


async def ledger(url: str):
    db = await db_open(url)
    await db_exec(db, "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL)")
    await db_exec(db, "INSERT INTO accounts VALUES (1, 10)")
    return db


async def update_in_transaction(db):
    tx = await db_begin(db)
    result = await db_exec(tx, "UPDATE accounts SET balance = 0 WHERE id = 1")
    return tx, result


def test_a_transaction_s_lock_wait_ends_at_its_bound_with_an_honest_busy(url):
    async def main():
        db = await ledger(url)
        loop = asyncio.get_running_loop()
        async with row_locked(url):
            started = loop.time()
            tx, result = await _in_request(lambda: update_in_transaction(db), limit=2.0)
            took = loop.time() - started
        close_all()
        return tx, result, took

    tx, result, took = asyncio.run(main())
    assert isinstance(result, SvcError) and (result.kind, result.message) == ("busy", LOCK_WAIT)
    assert "canceling statement due to lock timeout" in result.detail  # the log says why
    assert result.retry  # its transaction was rolled back whole
    assert tx.state == f"rolled back because {CLASHED}"  # not logged as forgotten
    bound = lock_waits.LOCK_WAIT_MS / 1000
    assert bound - 0.05 < took < bound + 0.7, took  # its bound, well inside the 2 s limit


def test_a_statement_of_its_own_is_bounded_too_but_not_marked_for_a_run_again(url):
    async def main():
        db = await ledger(url)
        async with row_locked(url):
            result = await _in_request(
                lambda: db_exec(db, "UPDATE accounts SET balance = 0 WHERE id = 1"), limit=2.0)
        close_all()
        return result

    result = asyncio.run(main())
    assert isinstance(result, SvcError) and result.message == LOCK_WAIT
    assert not result.retry  # only a transaction's clash runs a handler again


def test_a_wait_that_starts_near_the_limit_still_ends_before_it_and_says_why(url):
    """With 0.6 s left, the bound is lowered for the statement: the wait ends as a lock wait,
    not as a statement the database did not answer in time."""
    async def main():
        db = await ledger(url)
        loop = asyncio.get_running_loop()
        async with row_locked(url):
            started = loop.time()
            _tx, result = await _in_request(lambda: update_in_transaction(db), limit=0.6)
            took = loop.time() - started
        close_all()
        return result, took

    result, took = asyncio.run(main())
    assert isinstance(result, SvcError) and result.message == LOCK_WAIT, result
    assert result.message != TOO_LATE
    assert took < 0.45, took


def test_a_statement_the_server_cancels_is_an_honest_busy_that_may_run_again(url):
    """A cancellation svc did not ask for (an administrator's pg_cancel_backend here; under
    contention, PostgreSQL's race between a lock wait's timer and the lock being granted)
    rolls the transaction back like a clash: a 503 to retry, never a 500."""
    async def main():
        db = await ledger(url)
        admin = await asyncpg.connect(url)

        async def cancel_the_waiter():
            while not await admin.fetchval(
                    "SELECT pg_cancel_backend(pid) FROM pg_stat_activity "
                    "WHERE wait_event_type = 'Lock' AND query LIKE 'UPDATE accounts%'"):
                await asyncio.sleep(0.01)

        async def wait_for_the_row():  # outside a request, bound at 10 s: only the cancel ends it
            tx = await db_begin(db)
            await db_exec(tx, "SET LOCAL lock_timeout = '10s'")
            return tx, await db_exec(tx, "UPDATE accounts SET balance = 0 WHERE id = 1")

        async with row_locked(url):
            (tx, result), _ = await asyncio.gather(wait_for_the_row(), cancel_the_waiter())
        await admin.close()
        after = await db_exec(db, "UPDATE accounts SET balance = 5 WHERE id = 1")
        close_all()
        return tx, result, after

    tx, result, after = asyncio.run(main())
    assert isinstance(result, SvcError) and (result.kind, result.message) == ("busy", CANCELLED)
    assert "canceling statement due to user request" in result.detail  # the log says why
    assert result.retry and tx.state == f"rolled back because {CLASHED}"
    assert after == 1  # the connection went back to the pool clean


def test_a_retried_handler_s_transaction_waits_only_briefly(url):
    async def main():
        db = await ledger(url)

        async def retried_run():
            lock_waits.retried_var.set(True)
            tx = await db_begin(db)
            shown = await tx._submit("all", "SHOW lock_timeout", (), SHOWN)
            return tx, shown

        tx, shown = await _in_request(retried_run, limit=2.0)
        plain, plain_shown = await _in_request(
            lambda: _shown_in_transaction(db), limit=2.0)
        close_all()
        return tx.lock_wait_ms, shown, plain.lock_wait_ms, plain_shown

    retried_ms, shown, plain_ms, plain_shown = asyncio.run(main())
    assert (retried_ms, shown) == (lock_waits.RETRIED_LOCK_WAIT_MS, ["10ms"])
    assert (plain_ms, plain_shown) == (lock_waits.LOCK_WAIT_MS, ["300ms"])


async def _shown_in_transaction(db):
    tx = await db_begin(db)
    return tx, await tx._submit("all", "SHOW lock_timeout", (), SHOWN)


def test_a_migration_waits_for_another_process_s_migration_as_long_as_it_takes(url):
    """Another process holds the migrations' lock for 1 s, past every lock wait's bound: the
    migration waits for it, then applies its step."""
    async def main():
        db = await db_open(url)
        holder = await asyncpg.connect(url)
        await holder.execute("SELECT pg_advisory_lock($1)", _PG_LOCK_KEY)
        loop = asyncio.get_running_loop()
        loop.call_later(1.0, lambda: asyncio.ensure_future(
            holder.execute("SELECT pg_advisory_unlock($1)", _PG_LOCK_KEY)))
        started = loop.time()
        applied = await db_migrate(db, ["CREATE TABLE t (id BIGINT)"])
        took = loop.time() - started
        await holder.close()
        close_all()
        return applied, took

    applied, took = asyncio.run(main())
    assert applied == 1
    assert took >= 0.9, took


class Refused(Exception):
    """A server's refusal as asyncpg raises it: the message, and its SQLSTATE."""

    def __init__(self, message: str, sqlstate: str) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


@pytest.mark.parametrize("sqlstate, message", [
    ("55P03", LOCK_WAIT),
    ("40P01", "the transaction clashed with another one and was rolled back; retry it"),
    ("40001", "the transaction clashed with another one and was rolled back; retry it"),
    ("57014", CANCELLED),
])
def test_a_clash_is_busy_and_marked_for_a_run_again_only_inside_a_transaction(sqlstate, message):
    for in_transaction in (True, False):
        error = statement_failed(Refused("it clashed", sqlstate), "UPDATE t SET n = 1",
                                 in_transaction)
        assert (error.kind, error.message, error.retry) == ("busy", message, in_transaction)
        assert error.detail == "busy error: it clashed (in SQL: UPDATE t SET n = 1)"
    other = statement_failed(Refused("syntax error", "42601"), "SELEC 1", True)
    assert (other.kind, other.retry) == ("database", False)


def test_the_bound_is_lowered_only_when_the_time_left_cannot_hold_its_waits():
    async def main():
        loop = asyncio.get_running_loop()
        now = loop.time()
        token = set_request_deadline(now + 2.0)  # 1.75 s left before giving up: 3 waits fit
        try:
            keep = lock_waits.wait_to_set(now, lock_waits.LOCK_WAIT_MS)
            lowered = lock_waits.wait_to_set(now + 1.0, lock_waits.LOCK_WAIT_MS)
            past = lock_waits.wait_to_set(now + 3.0, lock_waits.LOCK_WAIT_MS)
        finally:
            reset_request_deadline(token)
        outside = lock_waits.wait_to_set(now, lock_waits.LOCK_WAIT_MS)  # no request
        return keep, lowered, past, outside

    keep, lowered, past, outside = asyncio.run(main())
    assert keep is None and outside is None
    assert lowered == (1000 - 250) // 3  # a third of what is left before giving up
    assert past == 1
