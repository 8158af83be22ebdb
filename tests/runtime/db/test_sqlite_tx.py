"""SQLite transactions whose BEGIN travels with their first statement (db/sqlite_tx.py).

`db_begin` on SQLite returns without a round trip to the database thread; the first statement
carries the BEGIN, and a failure to begin comes back as that statement's error. Commit,
rollback, the rollback of a forgotten transaction and durability hold as before.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys

import pytest

from svc.rules.contract import DB_QUEUE_SIZE
from svc.runtime.http import eager
from svc.runtime.http.context import reset_request_deadline, set_request_deadline
from svc.runtime.db import db_all, db_begin, db_commit, db_exec, db_open, db_rollback
from svc.runtime.db import sqlite as sqlite_db
from svc.runtime.db.sqlite_tx import SqliteTx
from svc.runtime.lib.support import SvcError
from tests.runtime.db.test_transactions import Row, run  # the one-column row, a fresh loop

# Its subject is the compiled request path: `make test` runs it again on the pure-Python modules.
pytestmark = pytest.mark.compiled_path


async def table(tmp_path, name: str):
    db = await db_open(str(tmp_path / name))
    await db_exec(db, "CREATE TABLE t (n INTEGER PRIMARY KEY)")
    return db


async def numbers(db) -> list[int]:
    return [row.n for row in await db_all(Row, db, "SELECT n FROM t ORDER BY n")]


class HandOffLoop(asyncio.SelectorEventLoop):
    """A real event loop that records the size of each batch of results the database thread
    hands it (`db._settle_batch(results)`, called from the thread). Counted at the loop, not
    by patching sqlite_thread.py, whose compiled functions call one another directly."""

    def __init__(self) -> None:
        super().__init__()
        self.delivered: list[int] = []

    def call_soon_threadsafe(self, callback, *args, **kwargs):
        if getattr(callback, "__name__", "") == "_settle_batch":
            self.delivered.append(len(args[0]))
        return super().call_soon_threadsafe(callback, *args, **kwargs)


def test_begin_then_two_statements_then_commit_takes_three_hand_offs(tmp_path):
    """BEGIN and the first statement are answered together: 3 deliveries, not 4."""
    loop = HandOffLoop()

    async def main():
        db = await table(tmp_path, "three.db")
        loop.delivered.clear()
        tx = await db_begin(db)
        first = await db_exec(tx, "INSERT INTO t VALUES (1)")
        second = await db_exec(tx, "INSERT INTO t VALUES (2)")
        committed = await db_commit(tx)
        delivered = list(loop.delivered)
        return first, second, committed, await numbers(db), delivered

    try:
        first, second, committed, rows, delivered = loop.run_until_complete(main())
    finally:
        sqlite_db.close_all()
        loop.close()
    assert (first, second, committed, rows) == (1, 1, None, [1, 2])
    assert delivered == [2, 1, 1]


def test_until_its_first_statement_a_transaction_does_not_hold_the_thread(tmp_path):
    async def main():
        db = await table(tmp_path, "free.db")
        tx = await db_begin(db)
        assert isinstance(tx, SqliteTx) and tx.unbegun  # no BEGIN sent yet
        outside = await db_exec(db, "INSERT INTO t VALUES (5)")  # not held: no deadlock
        inside = await numbers(tx)  # the transaction starts here and sees the row
        await db_exec(tx, "INSERT INTO t VALUES (6)")
        waiting = asyncio.ensure_future(numbers(db))  # held now
        await asyncio.sleep(0.05)
        held = not waiting.done()
        await db_rollback(tx)
        return outside, inside, held, await waiting

    assert run(main()) == (1, [5], True, [5])


def test_jobs_reaching_the_thread_with_a_begin_do_not_wait_for_its_transaction(tmp_path):
    """A transaction's BEGIN and a read of another caller hand over together: the read runs
    first (their order is free), instead of waiting until the transaction commits."""
    async def main():
        db = await table(tmp_path, "beside.db")
        await db_exec(db, "INSERT INTO t VALUES (1)")
        tx = await db_begin(db)
        inside = asyncio.ensure_future(db_exec(tx, "INSERT INTO t VALUES (2)"))  # + BEGIN
        beside = asyncio.ensure_future(numbers(db))  # same loop pass: the same batch
        read = await asyncio.wait_for(beside, 5)  # before the commit
        written = await inside
        committed = await db_commit(tx)
        return read, written, committed, await numbers(db)

    assert run(main()) == ([1], 1, None, [1, 2])


def test_a_transaction_without_statements_commits_and_rolls_back_as_nothing(tmp_path):
    async def main():
        db = await table(tmp_path, "empty.db")
        tx, other = await db_begin(db), await db_begin(db)
        results = [await db_commit(tx), await db_rollback(other)]
        results += [await db_exec(tx, "INSERT INTO t VALUES (1)"), await db_commit(other)]
        return results, await numbers(db)

    results, rows = run(main())
    assert results[:2] == [None, None]
    assert results[2] == SvcError("database", "this transaction is finished: it was committed")
    assert results[3] == SvcError("database", "this transaction is finished: it was rolled back")
    assert rows == []


def test_a_begin_that_fails_is_the_first_statements_error(tmp_path, monkeypatch):
    """Another connection holds the write lock past the busy timeout: BEGIN IMMEDIATE fails."""
    monkeypatch.setattr(sqlite_db, "BUSY_TIMEOUT_SECONDS", 0.1)
    path = tmp_path / "locked.db"

    async def main():
        db = await table(tmp_path, "locked.db")
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            tx = await db_begin(db)
            first = await db_exec(tx, "INSERT INTO t VALUES (1)")
            after = await db_exec(tx, "INSERT INTO t VALUES (2)")
            commit = await db_commit(tx)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        return first, after, commit, await numbers(db)

    first, after, commit, rows = run(main())
    assert first.kind == "database" and "BEGIN IMMEDIATE" in first.message
    assert after == commit == SvcError("database", "this transaction is finished: it was never begun")
    assert rows == []


def test_a_begin_that_cannot_get_into_the_full_queue_is_busy_at_the_deadline(tmp_path):
    async def main():
        db = await table(tmp_path, "full.db")
        holding = await db_begin(db)
        await db_exec(holding, "INSERT INTO t VALUES (1)")  # holds the thread
        queued = [asyncio.ensure_future(db_exec(db, "INSERT INTO t VALUES (?1)", 100 + i))
                  for i in range(DB_QUEUE_SIZE)]
        await asyncio.sleep(0.05)  # all submitted: the queue is full
        loop = asyncio.get_running_loop()
        token = set_request_deadline(loop.time() + 0.2)
        try:
            tx = await db_begin(db)
            first = await db_exec(tx, "INSERT INTO t VALUES (2)")
        finally:
            reset_request_deadline(token)
        later = await db_exec(tx, "INSERT INTO t VALUES (3)")
        await db_commit(holding)
        await asyncio.gather(*queued)
        return first, later, await numbers(db)

    first, later, rows = run(main())
    assert first.kind == "busy"
    assert later.kind == "database" and "this transaction is finished" in later.message
    assert rows == [1] + [100 + i for i in range(DB_QUEUE_SIZE)]


def test_a_handler_that_begins_before_suspending_has_its_forgotten_transaction_rolled_back(tmp_path):
    """db_begin in the handler's inline first step (eager.py's stand-in is the current task):
    the transaction is still rolled back when the handler's Task ends."""
    async def handler(db):
        tx = await db_begin(db)
        await db_exec(tx, "INSERT INTO t VALUES (1)")
        return "forgot to commit"

    async def main():
        db = await table(tmp_path, "forgot.db")
        finished, owner = await run_inline(handler(db))
        assert not finished
        answer = await ended(owner)
        return answer, await asyncio.wait_for(numbers(db), 5)

    assert run(main()) == ("forgot to commit", [])


async def run_inline(coro):
    """eager.start from a loop callback, as the server runs a handler (outside any Task)."""
    loop = asyncio.get_running_loop()
    started = loop.create_future()
    loop.call_soon(lambda: started.set_result(eager.start(loop, coro)))
    return await started


async def ended(owner):
    """The result of what drives a suspended handler (a Task, or eager.py's own driver)."""
    done = asyncio.get_running_loop().create_future()
    owner.add_done_callback(lambda o: done.set_result(o.result()))
    return await done


def test_an_inline_transaction_past_the_processing_limit_is_rolled_back(tmp_path):
    async def handler(db):
        tx = await db_begin(db)
        await db_exec(tx, "INSERT INTO t VALUES (1)")
        await asyncio.sleep(0.3)
        return await db_commit(tx)

    async def main():
        db = await table(tmp_path, "late.db")
        loop = asyncio.get_running_loop()
        token = set_request_deadline(loop.time() + 0.1)
        try:
            _finished, owner = await run_inline(handler(db))
        finally:
            reset_request_deadline(token)
        return await ended(owner), await numbers(db)

    committed, rows = run(main())
    assert committed == SvcError(
        "database", "this transaction is finished: it was rolled back because its request "
        "passed the processing limit")
    assert rows == []


def test_statements_and_transactions_do_not_ask_for_the_running_loop(tmp_path, monkeypatch):
    """In Python 3.11 `get_running_loop()` (and `current_task()` without a loop) makes a
    getpid system call: a Db keeps its loop, so no statement asks (once per loop is enough).
    A deadline is set, as in a request, so the rollback timer of db_begin is armed too."""
    asked = []
    real_loop, real_task = asyncio.get_running_loop, asyncio.current_task

    def counting_loop():
        asked.append("get_running_loop")
        return real_loop()

    def counting_task(loop=None):
        if loop is None:
            asked.append("current_task")
        return real_task(loop)

    async def main():
        db = await table(tmp_path, "asked.db")
        await db_exec(db, "INSERT INTO t VALUES (0)")
        token = set_request_deadline(asyncio.get_running_loop().time() + 60)
        monkeypatch.setattr(asyncio, "get_running_loop", counting_loop)
        monkeypatch.setattr(asyncio, "current_task", counting_task)
        try:
            for n in range(1, 20, 2):
                await db_exec(db, "INSERT INTO t VALUES (?1)", n)
                tx = await db_begin(db, "asked.svc:1", [])
                await db_exec(tx, "INSERT INTO t VALUES (?1)", n + 1)
                await db_commit(tx)
        finally:
            monkeypatch.undo()
            reset_request_deadline(token)
        return await numbers(db)

    assert run(main()) == list(range(21))
    assert asked == []


def test_a_db_used_on_one_loop_after_another_follows_the_loop(tmp_path):
    """Tests (and a forked worker) use a Db on a new loop: the first job there finds it."""
    try:
        db = asyncio.run(table(tmp_path, "loops.db"))
        for n in range(3):
            async def insert_and_read(n=n):
                tx = await db_begin(db)
                await db_exec(tx, "INSERT INTO t VALUES (?1)", n)
                await db_commit(tx)
                return await numbers(db)

            assert asyncio.run(insert_and_read()) == list(range(n + 1))
    finally:
        sqlite_db.close_all()


WRITER = """
import asyncio, sys
from svc.runtime.db import db_begin, db_commit, db_exec, db_open
async def main():
    db = await db_open(sys.argv[1])
    await db_exec(db, "CREATE TABLE IF NOT EXISTS t (n INTEGER PRIMARY KEY)")
    print("ready", flush=True)
    for n in range(0, 1000000, 2):
        tx = await db_begin(db)
        await db_exec(tx, "INSERT INTO t VALUES (?1)", n)
        await db_exec(tx, "INSERT INTO t VALUES (?1)", n + 1)
        assert await db_commit(tx) is None
        print("ack", n, flush=True)
asyncio.run(main())
"""


def test_acknowledged_commits_survive_kill_9_whole(tmp_path):
    path = tmp_path / "durable.db"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE,
                            text=True)
    acked = []
    try:
        assert proc.stdout.readline().strip() == "ready"
        while len(acked) < 100:
            line = proc.stdout.readline()
            assert line.startswith("ack "), line
            acked.append(int(line.split()[1]))
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        rest = proc.stdout.read()
        proc.wait()
    acked += [int(line.split()[1]) for line in rest.splitlines() if line.startswith("ack ")]
    with sqlite3.connect(path) as check:
        stored = {row[0] for row in check.execute("SELECT n FROM t")}
    assert {n for a in acked for n in (a, a + 1)} <= stored
    assert all((n ^ 1) in stored for n in stored)  # never half a transaction
