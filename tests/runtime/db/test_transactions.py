"""Transactions and migrations in the runtime (svc.runtime.db), on real SQLite files, and
migrations of one database by several processes at once."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import pytest

from svc.rules.contract import DB_QUEUE_SIZE
from svc.runtime.http.context import reset_request_deadline, set_request_deadline
from svc.runtime.db import (
    close_all, db_all, db_begin, db_commit, db_exec, db_migrate, db_open, db_rollback,
)
from svc.runtime.db.sqlite_thread import split_statements
from svc.runtime.lib.support import SvcError
from tests.helpers.migrator import MIGRATION_STEPS
from tests.helpers.svc_process import REPO

# Its subject is compiled (svc.native): `make test` runs it again on the pure-Python modules.
pytestmark = pytest.mark.compiled_path


class Row:
    __svc_fields__ = (("n", "i64", False),)

    def __init__(self, n: int) -> None:
        self.n = n


def run(coro):
    try:
        return asyncio.run(coro)
    finally:
        close_all()


async def _numbers(db) -> list[int]:
    return [row.n for row in await db_all(Row, db, "SELECT n FROM t ORDER BY n")]


def test_a_transaction_holds_the_thread_and_the_queue_bound_still_holds(tmp_path):
    """While a transaction runs (from its first statement), other jobs wait: 64 in the
    queue, the rest give up with busy at their deadline; all queued ones run once it
    commits."""
    async def main():
        db = await db_open(str(tmp_path / "q.db"))
        await db_exec(db, "CREATE TABLE t (n INTEGER PRIMARY KEY)")
        tx = await db_begin(db)
        assert await db_exec(tx, "INSERT INTO t VALUES (1)") == 1
        loop = asyncio.get_running_loop()
        token = set_request_deadline(loop.time() + 0.3)
        try:
            waiting = [asyncio.ensure_future(db_exec(db, "INSERT INTO t VALUES (?1)", 100 + i))
                       for i in range(DB_QUEUE_SIZE + 6)]
        finally:
            reset_request_deadline(token)
        await asyncio.sleep(0.5)
        gave_up = [job.result() for job in waiting if job.done()]
        assert await db_commit(tx) is None
        ran = await asyncio.gather(*[job for job in waiting if not job.cancelled()])
        return gave_up, ran, await _numbers(db)

    gave_up, ran, numbers = run(main())
    assert len(gave_up) == 6 and all(e.kind == "busy" for e in gave_up)
    assert ran.count(1) == DB_QUEUE_SIZE
    assert numbers == [1] + [100 + i for i in range(DB_QUEUE_SIZE)]


def test_reads_inside_see_the_transaction_and_outside_only_after_commit(tmp_path):
    async def main():
        db = await db_open(str(tmp_path / "v.db"))
        await db_exec(db, "CREATE TABLE t (n INTEGER PRIMARY KEY)")
        tx = await db_begin(db)
        await db_exec(tx, "INSERT INTO t VALUES (1)")
        inside = await _numbers(tx)
        outside = asyncio.ensure_future(_numbers(db))  # waits for the transaction
        await asyncio.sleep(0.05)
        assert not outside.done()
        await db_commit(tx)
        return inside, await outside, await db_rollback(tx)

    inside, outside, late = run(main())
    assert inside == [1] and outside == [1]
    assert isinstance(late, SvcError) and late.kind == "database"
    assert late.message == "this transaction is finished: it was committed"


def test_a_failing_statement_leaves_the_transaction_usable(tmp_path):
    async def main():
        db = await db_open(str(tmp_path / "f.db"))
        await db_exec(db, "CREATE TABLE t (n INTEGER PRIMARY KEY)")
        tx = await db_begin(db)
        await db_exec(tx, "INSERT INTO t VALUES (1)")
        clash = await db_exec(tx, "INSERT INTO t VALUES (1)")
        several = await db_exec(tx, "INSERT INTO t VALUES (2); INSERT INTO t VALUES (3)")
        await db_exec(tx, "INSERT INTO t VALUES (4)")
        await db_commit(tx)
        return clash, several, await _numbers(db)

    clash, several, numbers = run(main())
    assert isinstance(clash, SvcError) and isinstance(several, SvcError)
    assert "one statement per call" in several.message
    assert "test_transactions.py:" in several.message  # the caller's line
    assert numbers == [1, 4]


def test_a_task_that_ends_with_its_transaction_open_rolls_it_back(tmp_path):
    async def main():
        db = await db_open(str(tmp_path / "o.db"))
        await db_exec(db, "CREATE TABLE t (n INTEGER PRIMARY KEY)")

        async def forgetful():
            tx = await db_begin(db)
            await db_exec(tx, "INSERT INTO t VALUES (1)")
            return tx

        tx = await asyncio.create_task(forgetful())
        after = await db_exec(db, "INSERT INTO t VALUES (2)")  # the thread is free again
        return tx, after, await _numbers(db), await db_exec(tx, "SELECT 1")

    tx, after, numbers, late = run(main())
    assert after == 1 and numbers == [2]
    assert "rolled back because it was not committed before its request" in late.message


def test_closing_with_a_transaction_open_rolls_it_back_and_does_not_hang(tmp_path):
    path = tmp_path / "c.db"

    async def main():
        db = await db_open(str(path))
        await db_exec(db, "CREATE TABLE t (n INTEGER PRIMARY KEY)")
        tx = await db_begin(db)
        await db_exec(tx, "INSERT INTO t VALUES (1)")
        started = time.monotonic()
        close_all()
        return time.monotonic() - started

    assert run(main()) < 2.0

    async def reopen():
        return await _numbers(await db_open(str(path)))

    assert run(reopen()) == []


def test_a_migration_step_that_fails_is_rolled_back_and_named(tmp_path):
    async def main():
        db = await db_open(str(tmp_path / "m.db"))
        steps = ["CREATE TABLE t (n INTEGER PRIMARY KEY);",
                 "INSERT INTO t VALUES (1); INSERT INTO nowhere VALUES (2);"]
        failed = await db_migrate(db, steps)
        numbers = await _numbers(db)
        steps[1] = "INSERT INTO t VALUES (1);\n-- done\n"
        applied = await db_migrate(db, steps)
        longer = await db_migrate(db, steps[:1])
        return failed, numbers, applied, longer, await _numbers(db)

    failed, numbers, applied, longer, after = run(main())
    assert failed.kind == "database" and failed.message.startswith("migration step 2 failed:")
    assert "no such table: nowhere" in failed.message
    assert numbers == [] and applied == 1 and after == [1]
    assert longer.message.startswith("migration step 2 is applied to this database but the "
                                     "list holds 1 steps")


def test_statements_split_at_semicolons_outside_literals_comments_and_triggers():
    script = ("CREATE TABLE a (s TEXT DEFAULT 'x;y'); -- a; comment\n"
              "CREATE TRIGGER tr AFTER INSERT ON a BEGIN UPDATE a SET s = ';'; END;\n"
              "/* ; */ INSERT INTO a VALUES ('\"'';')\n-- trailing; comment")
    parts = [p.strip() for p in split_statements(script)]
    assert len(parts) == 3, parts
    assert parts[1].startswith("-- a; comment\nCREATE TRIGGER") and parts[1].endswith("END;")
    assert split_statements("SELECT 1; -- only a comment after") == ["SELECT 1;"]


def run_migrators(url: str, count: int) -> list[str]:
    """`count` processes migrating `url` at once; their last output lines."""
    start_at = time.time() + 1.5
    helper = str(REPO / "tests" / "helpers" / "migrator.py")
    processes = [subprocess.Popen([sys.executable, helper, url, str(start_at)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  cwd=REPO, env={"PYTHONPATH": str(REPO)})
                 for _ in range(count)]
    outputs = []
    for process in processes:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        outputs.append(out.strip().splitlines()[-1])
    return outputs


def test_processes_migrating_one_sqlite_file_at_once_apply_each_step_once(tmp_path):
    path = str(tmp_path / "shared.db")
    outputs = run_migrators(path, 3)
    assert all(line.startswith("applied ") for line in outputs), outputs
    assert sum(int(line.split()[1]) for line in outputs) == len(MIGRATION_STEPS)

    async def check():
        db = await db_open(path)
        return [row.n for row in await db_all(
            Row, db, "SELECT step AS n FROM steps_run ORDER BY step")]

    assert run(check()) == [1, 2, 3, 4]
