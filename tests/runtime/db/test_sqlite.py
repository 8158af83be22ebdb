"""The database layer against real SQLite files: binding, row mapping, the job queue, durability."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import ClassVar, Optional

import msgspec
import pytest

from svc.rules.contract import DB_QUEUE_SIZE
from svc.runtime import db as dbmod
from svc.runtime.http.context import reset_request_deadline, set_request_deadline
from svc.runtime.db import close_all, db_all, db_exec, db_one, db_open, set_base_directory
from svc.runtime.lib.support import SvcError

try:
    import uvloop
except ImportError:  # pragma: no cover - Windows
    uvloop = None

# Its subject is compiled (svc.native): `make test` runs it again on the pure-Python modules.
pytestmark = pytest.mark.compiled_path

HELPERS = Path(__file__).parents[2] / "helpers"


def run(coro):
    """Run a coroutine on the loop svc programs use (uvloop where present)."""
    return uvloop.run(coro) if uvloop is not None else asyncio.run(coro)


@pytest.fixture(autouse=True)
def _clean_state():
    yield
    close_all()
    set_base_directory(None)


# --- classes shaped like the code generator's output (docs/internals.md) --------------------

class Row(msgspec.Struct):
    id: int
    small: int
    ratio: float
    flag: bool
    name: str
    data: bytes
    note: Optional[str]
    __svc_fields__: ClassVar = (("id", "i64", False), ("small", "i32", False),
                                ("ratio", "f64", False), ("flag", "bool", False),
                                ("name", "str", False), ("data", "bytes", False),
                                ("note", "str", True))


class Num(msgspec.Struct):
    n: int
    __svc_fields__: ClassVar = (("n", "i64", False),)


def one_field(type_name: str, optional: bool = False) -> type:
    """A one-field class `V` with field `v` of the given svc type."""
    class V(msgspec.Struct):
        v: object
        __svc_fields__: ClassVar = (("v", type_name, optional),)
    return V


async def fresh(tmp_path, name="t.db"):
    db = await db_open(str(tmp_path / name))
    assert not isinstance(db, SvcError), db
    return db


ROW_TABLE = ("CREATE TABLE rows (id INTEGER PRIMARY KEY, small INTEGER, ratio REAL, flag INTEGER,"
             " name TEXT, data BLOB, note TEXT)")


# --- opening --------------------------------------------------------------------------------

def test_file_database_uses_wal_and_full_sync(tmp_path):
    class Sync(msgspec.Struct):
        synchronous: int
        __svc_fields__: ClassVar = (("synchronous", "i64", False),)

    async def main():
        db = await fresh(tmp_path)
        assert await db_exec(db, "CREATE TABLE t (x INTEGER)") == 0
        return await db_one(Sync, db, "PRAGMA synchronous")

    assert run(main()) == Sync(synchronous=2)  # FULL
    with sqlite3.connect(tmp_path / "t.db") as other:
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_memory_database(tmp_path):
    async def main():
        db = await db_open(":memory:")
        await db_exec(db, "CREATE TABLE t (n INTEGER)")
        await db_exec(db, "INSERT INTO t VALUES (41), (42)")
        return await db_all(Num, db, "SELECT n FROM t ORDER BY n")

    assert run(main()) == [Num(n=41), Num(n=42)]


def test_relative_path_resolves_against_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    async def main():
        db = await db_open("rel.db")
        return await db_exec(db, "CREATE TABLE t (n INTEGER)")

    assert run(main()) == 0
    assert (tmp_path / "rel.db").exists()


def test_relative_path_resolves_against_project_folder(tmp_path, monkeypatch):
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(tmp_path)
    set_base_directory(str(project))

    async def main():
        db = await db_open("data/app.db")
        return db

    (project / "data").mkdir()
    db = run(main())
    assert db.path == str(project / "data" / "app.db")
    assert (project / "data" / "app.db").exists()
    assert not (tmp_path / "data").exists()


def test_one_handle_per_file_but_every_memory_database_is_new(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    async def main():
        first, second = await asyncio.gather(db_open("same.db"), db_open("same.db"))
        again = await db_open(str(tmp_path / "sub" / ".." / "same.db"))
        m1, m2 = await db_open(":memory:"), await db_open(":memory:")
        await db_exec(m1, "CREATE TABLE only_in_m1 (n INTEGER)")
        in_m2 = await db_exec(m2, "SELECT * FROM only_in_m1")
        close_all()
        reopened = await db_open("same.db")
        return first, second, again, m1, m2, in_m2, reopened

    first, second, again, m1, m2, in_m2, reopened = run(main())
    assert first is second is again
    assert m1 is not m2
    assert isinstance(in_m2, SvcError) and "no such table" in in_m2.message
    assert reopened is not first and isinstance(reopened, dbmod.Db)


def test_a_failed_open_is_not_remembered(tmp_path):
    async def main():
        failed = await db_open(str(tmp_path / "later" / "x.db"))
        (tmp_path / "later").mkdir()
        return failed, await db_open(str(tmp_path / "later" / "x.db"))

    failed, opened = run(main())
    assert isinstance(failed, SvcError) and isinstance(opened, dbmod.Db)


@pytest.mark.parametrize("bad", ["no/such/dir/x.db", "", "dir", "garbage.db"])
def test_unopenable_path_is_a_database_error(tmp_path, bad):
    (tmp_path / "dir").mkdir()
    (tmp_path / "garbage.db").write_bytes(b"this is not a database file, not at all" * 100)
    path = str(tmp_path / bad) if bad else ""
    result = run(db_open(path))
    assert isinstance(result, SvcError)
    assert result.kind == "database"
    assert "cannot open database" in result.message


# --- statements, placeholders and arguments -------------------------------------------------

def test_exec_counts_changed_rows(tmp_path):
    async def main():
        db = await fresh(tmp_path)
        created = await db_exec(db, "CREATE TABLE t (n INTEGER)")
        inserted = await db_exec(db, "INSERT INTO t VALUES (1), (2), (3)")
        updated = await db_exec(db, "UPDATE t SET n = n + 10 WHERE n >= ?", 2)
        deleted = await db_exec(db, "DELETE FROM t WHERE n = ?1", 99)
        return created, inserted, updated, deleted

    assert run(main()) == (0, 3, 2, 0)


def test_exec_counts_rows_of_with_and_returning_statements(tmp_path):
    """sqlite3's rowcount says -1 or 0 for these; the count must still be the rows changed."""
    async def main():
        db = await fresh(tmp_path)
        await db_exec(db, "CREATE TABLE t (n INTEGER)")
        return (
            await db_exec(db, "WITH c(x) AS (SELECT 1 UNION ALL SELECT 2) INSERT INTO t SELECT x FROM c"),
            await db_exec(db, "INSERT INTO t VALUES (3), (4), (5) RETURNING n"),
            await db_exec(db, "WITH d(x) AS (SELECT 2) DELETE FROM t WHERE n > (SELECT x FROM d)"),
            await db_exec(db, "UPDATE t SET n = n + 1 RETURNING n"),
            await db_exec(db, "CREATE INDEX t_n ON t (n)"),
        )

    assert run(main()) == (2, 3, 3, 2, 0)


def test_numbered_and_anonymous_placeholders(tmp_path):
    class Pair(msgspec.Struct):
        a: str
        b: str
        __svc_fields__: ClassVar = (("a", "str", False), ("b", "str", False))

    async def main():
        db = await fresh(tmp_path)
        numbered = await db_one(Pair, db, "SELECT ?2 AS a, ?1 AS b", "first", "second")
        repeated = await db_one(Pair, db, "SELECT ?1 AS a, ?1 AS b", "same")
        anonymous = await db_one(Pair, db, "SELECT ? AS a, ? AS b", "x", "y")
        too_few = await db_one(Pair, db, "SELECT ? AS a, ? AS b", "x")
        too_many = await db_exec(db, "SELECT ?1", 1, 2)
        return numbered, repeated, anonymous, too_few, too_many

    numbered, repeated, anonymous, too_few, too_many = run(main())
    assert numbered == Pair(a="second", b="first")
    assert repeated == Pair(a="same", b="same")
    assert anonymous == Pair(a="x", b="y")
    for err in (too_few, too_many):
        assert isinstance(err, SvcError) and err.kind == "database"
        assert "bindings" in err.message


def test_every_argument_type_round_trips(tmp_path):
    big, small = 2**63 - 1, -(2**31)
    async def main():
        db = await fresh(tmp_path)
        await db_exec(db, ROW_TABLE)
        args = [(big, small, 2.5, True, "héllo ☃", b"\x00\xff", None),
                (-(2**63), 2**31 - 1, -0.0, False, "", memoryview(b"view"), "a note")]
        for a in args:
            assert await db_exec(db, "INSERT INTO rows VALUES (?, ?, ?, ?, ?, ?, ?)", *a) == 1
        rows = await db_all(Row, db, "SELECT * FROM rows ORDER BY id DESC")
        raw = await db_all(one_field("i64"), db, "SELECT flag AS v FROM rows ORDER BY id DESC")
        return rows, raw

    rows, raw = run(main())
    assert rows == [
        Row(id=big, small=small, ratio=2.5, flag=True, name="héllo ☃", data=b"\x00\xff", note=None),
        Row(id=-(2**63), small=2**31 - 1, ratio=-0.0, flag=False, name="", data=b"view",
            note="a note"),
    ]
    assert [r.v for r in raw] == [1, 0]  # bool binds as 1/0


@pytest.mark.parametrize("arg", [2**63, [1, 2], {"a": 1}, object()])
def test_unsupported_argument_is_a_database_error(tmp_path, arg):
    async def main():
        db = await fresh(tmp_path)
        return await db_exec(db, "SELECT ?1", arg)

    err = run(main())
    assert isinstance(err, SvcError) and err.kind == "database", err


def test_sql_problems_are_database_errors_naming_the_problem(tmp_path):
    async def main():
        db = await fresh(tmp_path)
        await db_exec(db, "CREATE TABLE u (id INTEGER PRIMARY KEY, email TEXT UNIQUE NOT NULL)")
        await db_exec(db, "CREATE TABLE p (id INTEGER PRIMARY KEY, u INTEGER REFERENCES u(id))")
        await db_exec(db, "INSERT INTO u (email) VALUES ('a@x')")
        return [
            await db_exec(db, "SELEKT 1"),
            await db_exec(db, "INSERT INTO u (email) VALUES ('a@x')"),
            await db_exec(db, "INSERT INTO u (email) VALUES (NULL)"),
            await db_exec(db, "INSERT INTO p (u) VALUES (999)"),
            await db_all(Num, db, "SELECT n FROM missing_table"),
            await db_exec(db, "INSERT INTO u (email) VALUES ('b'); INSERT INTO u (email) VALUES ('c')"),
        ]

    errors = run(main())
    # constraint violations are conflict/invalid with SQLite's message as the logged detail
    expected = [("database", "syntax error"), ("conflict", "UNIQUE constraint failed: u.email"),
                ("invalid", "NOT NULL constraint failed: u.email"),
                ("conflict", "FOREIGN KEY constraint failed"),
                ("database", "no such table: missing_table"),
                ("database", "one statement per call")]
    for err, (kind, text) in zip(errors, expected):
        assert isinstance(err, SvcError) and err.kind == kind, err
        assert text in (err.detail or err.message), (err.message, err.detail)


def test_locked_database_is_a_database_error(tmp_path, monkeypatch):
    monkeypatch.setattr(dbmod, "BUSY_TIMEOUT_SECONDS", 0.1)
    path = tmp_path / "t.db"

    async def main():
        db = await fresh(tmp_path)
        await db_exec(db, "CREATE TABLE t (n INTEGER)")
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            return await db_exec(db, "INSERT INTO t VALUES (1)")
        finally:
            holder.execute("ROLLBACK")
            holder.close()

    err = run(main())
    assert isinstance(err, SvcError) and err.kind == "database"
    assert "locked" in err.message


# --- row mapping (docs/reference/language.md) ----------------------------------------------

@pytest.mark.parametrize("type_name, sql, expected", [
    ("i64", "SELECT 9223372036854775807 AS v", 2**63 - 1),
    ("i32", "SELECT -2147483648 AS v", -(2**31)),
    ("f64", "SELECT 1.5 AS v", 1.5),
    ("f64", "SELECT 3 AS v", 3.0),  # INTEGER into f64 is converted
    ("bool", "SELECT 1 AS v", True),
    ("bool", "SELECT 0 AS v", False),
    ("str", "SELECT 'ünïcode' AS v", "ünïcode"),
    ("bytes", "SELECT x'00ff' AS v", b"\x00\xff"),
])
def test_values_that_fit(tmp_path, type_name, sql, expected):
    cls = one_field(type_name)

    async def main():
        return await db_one(cls, await fresh(tmp_path), sql)

    value = run(main()).v
    assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize("type_name, sql, words", [
    ("i64", "SELECT 'seven' AS v", ["TEXT", "v", "V.v", "i64"]),
    ("i64", "SELECT 1.5 AS v", ["REAL", "i64"]),
    ("i64", "SELECT NULL AS v", ["NULL", "V.v", "i64"]),
    ("i32", "SELECT 2147483648 AS v", ["outside the i32 range"]),
    ("i32", "SELECT -2147483649 AS v", ["outside the i32 range"]),
    ("bool", "SELECT 2 AS v", ["not 0 or 1", "bool"]),
    ("bool", "SELECT 'true' AS v", ["TEXT", "bool"]),
    ("bool", "SELECT 1.0 AS v", ["REAL", "bool"]),
    ("f64", "SELECT '1.5' AS v", ["TEXT", "f64"]),
    ("str", "SELECT 12 AS v", ["INTEGER", "str"]),
    ("str", "SELECT x'00' AS v", ["BLOB", "str"]),
    ("bytes", "SELECT 'text' AS v", ["TEXT", "bytes"]),
    ("List[i64]", "SELECT 1 AS v", ["List[i64]", "V.v"]),
])
def test_values_that_do_not_fit_are_database_errors(tmp_path, type_name, sql, words):
    cls = one_field(type_name)

    async def main():
        db = await fresh(tmp_path)
        return await db_one(cls, db, sql), await db_all(cls, db, sql)

    for err in run(main()):
        assert isinstance(err, SvcError) and err.kind == "database", err
        for word in words:
            assert word in err.message, err.message


def test_fields_listed_in_another_order_than_the_struct_are_filled_by_name(tmp_path):
    class Odd(msgspec.Struct):
        lambda_: int
        flag: bool
        __svc_fields__: ClassVar = (("flag", "bool", False), ("lambda_", "i32", True))

    async def main():
        db = await fresh(tmp_path)
        sql = "SELECT 7 AS lambda_, 1 AS flag UNION ALL SELECT NULL, 0"
        return await db_all(Odd, db, sql)

    assert run(main()) == [Odd(lambda_=7, flag=True), Odd(lambda_=None, flag=False)]


class Pair(msgspec.Struct):
    a: int
    b: int
    __svc_fields__: ClassVar = (("a", "i64", False), ("b", "i64", False))


def test_a_query_whose_columns_change_maps_by_its_new_columns(tmp_path):
    """The row mapper kept for a query is checked against each result's column names: after
    another connection changes the schema, the same `SELECT *` maps by its new columns."""
    async def main():
        db = await fresh(tmp_path)
        await db_exec(db, "CREATE TABLE t (a INTEGER, b INTEGER)")
        await db_exec(db, "INSERT INTO t VALUES (1, 2)")
        before = await db_one(Pair, db, "SELECT * FROM t")
        other = sqlite3.connect(tmp_path / "t.db", isolation_level=None)
        other.execute("ALTER TABLE t RENAME COLUMN b TO c")
        other.execute("ALTER TABLE t ADD COLUMN b INTEGER NOT NULL DEFAULT 7")
        other.close()
        return before, await db_one(Pair, db, "SELECT * FROM t")

    assert run(main()) == (Pair(a=1, b=2), Pair(a=1, b=7))


def test_null_into_optional_field_is_none(tmp_path):
    async def main():
        return await db_one(one_field("i64", optional=True), await fresh(tmp_path), "SELECT NULL AS v")

    assert run(main()).v is None


def test_missing_column_names_column_and_class(tmp_path):
    async def main():
        db = await fresh(tmp_path)
        await db_exec(db, ROW_TABLE)
        await db_exec(db, "INSERT INTO rows (id, small) VALUES (1, 2)")
        return await db_all(Row, db, "SELECT id, small FROM rows")

    err = run(main())
    assert isinstance(err, SvcError) and err.kind == "database"
    assert "'ratio'" in err.message and "Row" in err.message


def test_extra_columns_are_ignored_and_first_duplicate_wins(tmp_path):
    async def main():
        db = await fresh(tmp_path)
        return await db_all(Num, db, "SELECT 1 AS n, 'extra' AS other, 2 AS n")

    assert run(main()) == [Num(n=1)]


def test_a_class_without_svc_fields_is_a_database_error(tmp_path):
    class Plain:
        pass

    async def main():
        return await db_one(Plain, await fresh(tmp_path), "SELECT 1 AS n")

    err = run(main())
    assert isinstance(err, SvcError) and err.kind == "database" and "Plain" in err.message


def test_no_rows(tmp_path):
    async def main():
        db = await fresh(tmp_path)
        await db_exec(db, "CREATE TABLE t (n INTEGER)")
        return (await db_one(Num, db, "SELECT n FROM t WHERE n = ?", 1),
                await db_all(Num, db, "SELECT n FROM t"))

    assert run(main()) == (None, [])


def test_mismatch_in_a_later_row_fails_the_whole_result(tmp_path):
    async def main():
        db = await fresh(tmp_path)
        await db_exec(db, "CREATE TABLE t (n)")
        await db_exec(db, "INSERT INTO t VALUES (1), (2), ('three')")
        return await db_all(Num, db, "SELECT n FROM t ORDER BY rowid")

    err = run(main())
    assert isinstance(err, SvcError) and "'three'" in err.message


# --- the job queue --------------------------------------------------------------------------

async def blocked_db(tmp_path):
    """A Db whose thread is stuck in an INSERT waiting for a lock the test holds."""
    db = await fresh(tmp_path)
    await db_exec(db, "CREATE TABLE t (n INTEGER)")
    holder = sqlite3.connect(tmp_path / "t.db", isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    slow = asyncio.ensure_future(db_exec(db, "INSERT INTO t VALUES (-1)"))
    await asyncio.sleep(0)
    while db.queued:  # until the thread has taken the job (it then waits for the lock)
        await asyncio.sleep(0.01)
    return db, holder, slow


def test_full_queue_makes_callers_wait_without_blocking_the_loop(tmp_path):
    callers = 200

    async def main():
        db, holder, slow = await blocked_db(tmp_path)
        tasks = [asyncio.ensure_future(db_one(Num, db, "SELECT ?1 AS n", i)) for i in range(callers)]
        await asyncio.sleep(0.05)
        queued, waiting = db.queued, len(db._overflow)
        ticks = 0
        started = time.monotonic()
        while time.monotonic() - started < 0.5:  # the loop keeps running while the db is stuck
            await asyncio.sleep(0.01)
            ticks += 1
        holder.execute("COMMIT")
        holder.close()
        results = await asyncio.gather(*tasks)
        return queued, waiting, ticks, await slow, results

    queued, waiting, ticks, slow_result, results = run(main())
    assert queued == DB_QUEUE_SIZE
    assert waiting == callers - DB_QUEUE_SIZE
    assert ticks >= 3  # a blocked loop would tick once
    assert slow_result == 1
    assert results == [Num(n=i) for i in range(callers)]


def test_waiting_caller_gets_busy_at_the_request_deadline(tmp_path):
    async def main():
        db, holder, slow = await blocked_db(tmp_path)
        fillers = [asyncio.ensure_future(db_exec(db, "SELECT 1")) for _ in range(DB_QUEUE_SIZE)]
        await asyncio.sleep(0)
        assert db.queued == DB_QUEUE_SIZE
        loop = asyncio.get_running_loop()

        async def in_request(deadline):
            token = set_request_deadline(deadline)
            try:
                return await db_exec(db, "INSERT INTO t VALUES (?)", 7)
            finally:
                reset_request_deadline(token)

        started = loop.time()
        late = await in_request(started + 0.3)
        already_past = await in_request(started - 1)
        waited = loop.time() - started
        holder.execute("COMMIT")
        holder.close()
        await asyncio.gather(slow, *fillers)
        after = await in_request(loop.time() + 5)  # room again: accepted
        count = await db_one(Num, db, "SELECT count(*) AS n FROM t WHERE n = 7")
        return late, already_past, waited, after, count

    late, already_past, waited, after, count = run(main())
    for err in (late, already_past):
        assert isinstance(err, SvcError) and err.kind == "busy", err
    assert 0.25 <= waited < 1.5
    assert after == 1 and count == Num(n=1)


def test_cancelled_callers_do_not_lose_room_and_accepted_jobs_still_run(tmp_path):
    async def main():
        db, holder, slow = await blocked_db(tmp_path)
        queued = [asyncio.ensure_future(db_exec(db, "INSERT INTO t VALUES (?)", i)) for i in range(64)]
        waiting = [asyncio.ensure_future(db_exec(db, "INSERT INTO t VALUES (?)", 1000 + i))
                   for i in range(20)]
        await asyncio.sleep(0.05)
        slow.cancel()  # taken by the thread: still runs
        for task in queued[:10] + waiting[:10]:  # queued ones still run; waiting ones never do
            task.cancel()
        await asyncio.sleep(0.05)
        holder.execute("COMMIT")
        holder.close()
        done = await asyncio.gather(*queued[10:], *waiting[10:])
        rows = await db_all(Num, db, "SELECT n FROM t ORDER BY n")
        return done, [r.n for r in rows], len(db._overflow)

    done, values, overflow = run(main())
    assert done == [1] * 64
    assert values == [-1] + list(range(64)) + list(range(1010, 1020))
    assert overflow == 0


def test_a_view_argument_is_copied_when_the_job_is_queued(tmp_path):
    """A request body view may be reused once the handler is gone; a queued job must not see it."""
    async def main():
        db, holder, slow = await blocked_db(tmp_path)
        buffer = bytearray(b"original")
        task = asyncio.ensure_future(db_exec(db, "INSERT INTO t VALUES (?)", memoryview(buffer)))
        await asyncio.sleep(0)
        buffer[:] = b"reused!!"
        holder.execute("COMMIT")
        holder.close()
        await asyncio.gather(slow, task)
        return await db_one(one_field("bytes"), db, "SELECT n AS v FROM t WHERE n != -1")

    assert run(main()).v == b"original"


class CountingLoop(asyncio.SelectorEventLoop):
    """A real event loop that records each wake-up from another thread."""

    def __init__(self) -> None:
        super().__init__()
        self.wakeups: list = []

    def call_soon_threadsafe(self, callback, *args, **kwargs):
        self.wakeups.append(callback)
        return super().call_soon_threadsafe(callback, *args, **kwargs)

    def run(self, coro):
        try:
            return self.run_until_complete(coro)
        finally:
            self.close()


def test_results_come_back_in_batches(tmp_path):
    """64 jobs stuck behind one slow job reach the loop in a couple of wake-ups, not 65."""
    loop = CountingLoop()

    async def main():
        db, holder, slow = await blocked_db(tmp_path)
        tasks = [asyncio.ensure_future(db_one(Num, db, "SELECT ?1 AS n", i)) for i in range(64)]
        await asyncio.sleep(0.05)
        loop.wakeups.clear()
        holder.execute("COMMIT")
        holder.close()
        return await asyncio.gather(slow, *tasks)

    results = loop.run(main())
    assert results[1:] == [Num(n=i) for i in range(64)]
    assert 1 <= len(loop.wakeups) <= 2, loop.wakeups


def test_jobs_from_one_loop_iteration_reach_the_thread_together(tmp_path):
    """Handlers that query in the same loop turn hand their jobs over at once: one batch."""
    loop = CountingLoop()

    async def main():
        db = await fresh(tmp_path)
        await db_exec(db, "CREATE TABLE t (n INTEGER)")
        loop.wakeups.clear()
        results = await asyncio.gather(*(db_one(Num, db, "SELECT ?1 AS n", i) for i in range(30)))
        return results, list(loop.wakeups)

    results, wakeups = loop.run(main())
    assert results == [Num(n=i) for i in range(30)]
    assert len(wakeups) == 1, wakeups


def test_jobs_left_behind_by_a_stopped_loop_do_not_block_the_next_one(tmp_path):
    db = run(fresh(tmp_path))
    stopped = asyncio.new_event_loop()
    left = (stopped.create_future(), "exec", "CREATE TABLE t (n INTEGER)", (), None)
    db._accept(stopped, left)  # its hand-over was scheduled on a loop that never runs again
    stopped.close()

    async def main():
        return await db_exec(db, "INSERT INTO t VALUES (1)")

    assert run(main()) == 1


# --- shutdown and durability ----------------------------------------------------------------

def test_close_all_finishes_queued_jobs_then_refuses_new_ones(tmp_path):
    async def main():
        db, holder, slow = await blocked_db(tmp_path)
        queued = [asyncio.ensure_future(db_exec(db, "INSERT INTO t VALUES (?)", i)) for i in range(64)]
        waiting = asyncio.ensure_future(db_exec(db, "INSERT INTO t VALUES (1000)"))
        await asyncio.sleep(0.05)
        loop = asyncio.get_running_loop()
        loop.call_later(0.2, lambda: (holder.execute("COMMIT"), holder.close()))
        await loop.run_in_executor(None, close_all)
        results = await asyncio.gather(slow, *queued, waiting)
        after = await db_exec(db, "INSERT INTO t VALUES (2000)")
        return results, after

    results, after = run(main())
    assert results[:65] == [1] * 65
    assert results[65] == SvcError("busy", "shutting down")
    assert after == SvcError("busy", "shutting down")
    with sqlite3.connect(tmp_path / "t.db") as check:
        assert check.execute("SELECT count(*) FROM t").fetchone()[0] == 65
    wal = tmp_path / "t.db-wal"
    assert not wal.exists() or wal.stat().st_size == 0  # checkpointed


def test_close_all_on_the_loop_answers_waiting_callers_at_once(tmp_path):
    async def main():
        db, holder, slow = await blocked_db(tmp_path)
        queued = [asyncio.ensure_future(db_exec(db, "INSERT INTO t VALUES (?)", i)) for i in range(64)]
        waiting = [asyncio.ensure_future(db_exec(db, "INSERT INTO t VALUES (?)", i)) for i in range(5)]
        await asyncio.sleep(0.05)
        threading.Timer(0.2, holder.execute, ["COMMIT"]).start()  # the loop is blocked meanwhile
        close_all()
        assert not db._overflow  # answered without waiting for the thread
        return await asyncio.gather(slow, *queued, *waiting)

    results = run(main())
    assert results[:65] == [1] * 65
    assert results[65:] == [SvcError("busy", "shutting down")] * 5


def test_close_all_from_the_loop_then_reopen(tmp_path):
    async def main():
        db = await fresh(tmp_path)
        await db_exec(db, "CREATE TABLE t (n INTEGER)")
        await db_exec(db, "INSERT INTO t VALUES (5)")
        close_all()
        refused = await db_one(Num, db, "SELECT n FROM t")
        again = await fresh(tmp_path)
        return refused, await db_one(Num, again, "SELECT n FROM t")

    refused, row = run(main())
    assert refused == SvcError("busy", "shutting down")
    assert row == Num(n=5)


def test_a_program_that_exits_closes_its_databases(tmp_path):
    script = (
        "import asyncio, sys\n"
        "from svc.runtime.db import db_exec, db_open\n"
        "async def main():\n"
        "    db = await db_open(sys.argv[1])\n"
        "    await db_exec(db, 'CREATE TABLE t (n INTEGER)')\n"
        "    await db_exec(db, 'INSERT INTO t VALUES (42)')\n"
        "asyncio.run(main())\n")
    path = tmp_path / "exit.db"
    subprocess.run([sys.executable, "-c", script, str(path)], check=True, timeout=60)
    assert not (tmp_path / "exit.db-wal").exists()  # checkpointed and closed at exit
    with sqlite3.connect(path) as check:
        assert check.execute("SELECT n FROM t").fetchall() == [(42,)]


def test_acknowledged_writes_survive_kill_9(tmp_path):
    path = tmp_path / "durable.db"
    proc = subprocess.Popen([sys.executable, str(HELPERS / "ack_writer.py"), str(path), "100000"],
                            stdout=subprocess.PIPE, text=True)
    acked = []
    try:
        assert proc.stdout.readline().strip() == "ready"
        while len(acked) < 300:
            line = proc.stdout.readline()
            assert line.startswith("ack "), line
            acked.append(int(line.split()[1]))
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        rest = proc.stdout.read()  # acks printed before the kill count too
        proc.wait()
    acked += [int(line.split()[1]) for line in rest.splitlines() if line.startswith("ack ")]
    assert proc.returncode == -signal.SIGKILL
    with sqlite3.connect(path) as check:
        stored = {row[0] for row in check.execute("SELECT id FROM acked")}
    assert set(acked) <= stored
    assert len(acked) >= 300
