"""Group commit on SQLite files (db/group_commit.py): the plain writes of one batch share one
transaction, each answers as it would alone, and an answered write survives kill -9.

Jobs submitted in one loop pass (`asyncio.gather`) reach the database thread as one batch.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
from pathlib import Path

import pytest

from svc.runtime.db import close_all, db_exec, db_one, db_open
from svc.runtime.db import sqlite as sqlite_db
from svc.runtime.db.group_commit import joins_group
from svc.runtime.lib.support import SvcError
from tests.helpers import svc_process

# Its subject is compiled (svc.native): `make test` runs it again on the pure-Python modules.
pytestmark = pytest.mark.compiled_path

ACKED = Path(__file__).with_name("programs") / "acked_writes.svc"


class Num:
    __svc_fields__ = (("n", "i64", False),)

    def __init__(self, n: int) -> None:
        self.n = n


def run(coro):
    try:
        return asyncio.run(coro)
    finally:
        close_all()


def wal_frames(path: Path) -> int:
    """Pages appended to the write-ahead log so far: each commit appends the pages it changed."""
    wal = Path(f"{path}-wal")
    size = wal.stat().st_size if wal.exists() else 0
    return max(0, size - 32) // (24 + 4096)


def test_plain_writes_join_a_group_and_nothing_else_does():
    """By the first word: what cannot run in a transaction (VACUUM), what reads, and what is
    not recognised without parsing (`WITH ... INSERT`) runs alone, as it always did."""
    joining = ["INSERT INTO t VALUES (1)", "  update t SET v = 1", "DELETE FROM t",
               "REPLACE INTO t VALUES (1)", "\nInsert or ignore into t values (2)"]
    alone = ["SELECT 1", "VACUUM", "CREATE TABLE u (n)", "PRAGMA user_version = 3",
             "WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x", "-- note\nINSERT INTO t VALUES (1)",
             "BEGIN", "COMMIT", "DROP TABLE t", "ANALYZE"]
    assert [joins_group(sql) for sql in joining] == [True] * len(joining)
    assert [joins_group(sql) for sql in alone] == [False] * len(alone)


def test_writes_of_one_batch_commit_together(tmp_path):
    """40 UPDATEs of one page, one after another, append at least 40 pages to the log;
    submitted together they share a commit, and the page is written once or twice."""
    path = tmp_path / "group.db"

    async def main():
        db = await db_open(str(path))
        await db_exec(db, "CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
        await db_exec(db, "INSERT INTO t SELECT value, 0 FROM json_each(?1)",
                      str(list(range(40))))
        update = "UPDATE t SET v = v + 1 WHERE id = ?1"
        before = wal_frames(path)
        alone = [await db_exec(db, update, i) for i in range(40)]
        between = wal_frames(path)
        together = await asyncio.gather(*(db_exec(db, update, i) for i in range(40)))
        after = wal_frames(path)
        total = await db_one(Num, db, "SELECT sum(v) AS n FROM t")
        return alone, together, between - before, after - between, total

    alone, together, frames_alone, frames_together, total = run(main())
    assert alone == together == [1] * 40
    assert total.n == 80
    assert frames_alone >= 40
    assert frames_together <= 4


STATEMENTS = [
    ("INSERT INTO t VALUES (?1, 'new')", 10),
    ("INSERT INTO t VALUES (?1, 'taken')", 1),  # the primary key is taken: conflict
    ("UPDATE t SET note = 'seen' WHERE n <= ?1", 2),  # counts two rows
    ("INSERT OR FAIL INTO t SELECT value, 'some' FROM json_each(?1)", "[20, 21, 3, 22]"),
    ("INSERT INTO t SELECT value, 'none' FROM json_each(?1)", "[30, 31, 3, 32]"),
    ("DELETE FROM t WHERE n = ?1", 4),
    ("INSERT OR ROLLBACK INTO t VALUES (?1, 'rolled')", 5),  # taken: ends the transaction
    ("REPLACE INTO t VALUES (?1, 'replaced')", 5),
    ("UPDATE t SET note = ?1 WHERE n = 999", "nothing"),  # counts no row
    ("INSERT INTO t VALUES (?1, 'last')", 11),
]


async def table(path: Path):
    db = await db_open(str(path))
    await db_exec(db, "CREATE TABLE t (n INTEGER PRIMARY KEY, note TEXT NOT NULL)")
    await db_exec(db, "INSERT INTO t SELECT value, 'old' FROM json_each('[1, 2, 3, 4, 5]')")
    return db


def rows(path: Path) -> list[tuple]:
    with sqlite3.connect(path) as check:
        return check.execute("SELECT n, note FROM t ORDER BY n").fetchall()


def test_each_write_of_a_group_answers_and_leaves_what_it_would_alone(tmp_path):
    """A conflict fails alone, `OR FAIL` keeps the rows before its failure, a multi-row
    INSERT that fails keeps none, `OR ROLLBACK` does not take the others with it, and the
    counts are the statements' own."""
    async def alone(db):
        return [await db_exec(db, sql, arg) for sql, arg in STATEMENTS]

    async def together(db):
        return await asyncio.gather(*(db_exec(db, sql, arg) for sql, arg in STATEMENTS))

    answers = {}
    for name, how in (("alone", alone), ("together", together)):
        path = tmp_path / f"{name}.db"

        async def main(how=how, path=path):
            return await how(await table(path))

        answers[name] = (run(main()), rows(path))

    results, stored = answers["together"]
    assert answers["alone"] == answers["together"]
    assert [r if isinstance(r, int) else r.kind for r in results] == \
        [1, "conflict", 2, "conflict", "conflict", 1, "conflict", 1, 0, 1]
    assert (20, "some") in stored and (21, "some") in stored and (22, "some") not in stored
    assert not any(note == "none" for _, note in stored)


def test_a_deferred_constraint_refusing_the_commit_fails_only_its_statement(tmp_path):
    path = tmp_path / "deferred.db"

    async def main():
        db = await db_open(str(path))
        await db_exec(db, "CREATE TABLE parent (id INTEGER PRIMARY KEY)")
        await db_exec(db, "CREATE TABLE child (id INTEGER PRIMARY KEY, parent INTEGER "
                          "REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)")
        await db_exec(db, "INSERT INTO parent VALUES (1)")
        insert = "INSERT INTO child VALUES (?1, ?2)"
        return await asyncio.gather(db_exec(db, insert, 1, 1), db_exec(db, insert, 2, 99),
                                    db_exec(db, insert, 3, 1))

    first, orphan, third = run(main())
    assert (first, third) == (1, 1)
    assert isinstance(orphan, SvcError) and "FOREIGN KEY" in orphan.message
    with sqlite3.connect(path) as check:
        assert check.execute("SELECT id FROM child ORDER BY id").fetchall() == [(1,), (3,)]


def test_the_reads_of_a_batch_run_before_its_writes(tmp_path):
    """A read never sees a write of a group that could still fail: in one batch the reads
    come first (the jobs of one batch come from concurrent callers: their order is free)."""
    async def main():
        db = await db_open(str(tmp_path / "reads.db"))
        await db_exec(db, "CREATE TABLE t (n INTEGER PRIMARY KEY)")
        count = "SELECT count(*) AS n FROM t"
        batch = await asyncio.gather(db_exec(db, "INSERT INTO t VALUES (1)"),
                                     db_exec(db, "INSERT INTO t VALUES (2)"),
                                     db_one(Num, db, count))
        return batch, await db_one(Num, db, count)

    (first, second, during), after = run(main())
    assert (first, second, during.n, after.n) == (1, 1, 0, 2)


def test_statements_that_cannot_run_in_a_transaction_still_run(tmp_path):
    """VACUUM and a schema change in a batch of writes run alone, as they always did."""
    async def main():
        db = await db_open(str(tmp_path / "vacuum.db"))
        await db_exec(db, "CREATE TABLE t (n INTEGER PRIMARY KEY)")
        return await asyncio.gather(db_exec(db, "INSERT INTO t VALUES (1)"),
                                    db_exec(db, "VACUUM"),
                                    db_exec(db, "CREATE TABLE u (n INTEGER)"),
                                    db_exec(db, "INSERT INTO t VALUES (2)"))

    assert run(main()) == [1, 0, 0, 1]


def test_a_group_that_cannot_take_the_write_lock_runs_each_write_alone(tmp_path, monkeypatch):
    """Another process holds the write lock past the busy timeout: each write waits for it
    and fails on its own, as without grouping; nothing is half done."""
    monkeypatch.setattr(sqlite_db, "BUSY_TIMEOUT_SECONDS", 0.1)
    path = tmp_path / "locked.db"

    async def main():
        db = await db_open(str(path))
        await db_exec(db, "CREATE TABLE t (n INTEGER PRIMARY KEY)")
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            locked = await asyncio.gather(*(db_exec(db, "INSERT INTO t VALUES (?1)", n)
                                            for n in range(3)))
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        return locked, await asyncio.gather(*(db_exec(db, "INSERT INTO t VALUES (?1)", n)
                                              for n in range(3)))

    locked, free = run(main())
    assert all(isinstance(r, SvcError) and "locked" in r.message for r in locked)
    assert free == [1, 1, 1]


async def _burst(port: int, connections: int, enough: int, kill) -> set[int]:
    """Concurrent POST /put/{n} on keep-alive connections; `kill()` once `enough` are
    answered, while the others are in flight. Returns the n of every answered one (answers
    read after the kill count too: the server sent them)."""
    answered: set[int] = set()

    async def client(first: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        n = first
        try:
            while True:
                writer.write(f"POST /put/{n} HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n"
                             .encode())
                head = await reader.readuntil(b"\r\n\r\n")
                assert head.startswith(b"HTTP/1.1 204"), head
                answered.add(n)
                if len(answered) == enough:
                    kill()
                n += connections
        except (asyncio.IncompleteReadError, ConnectionError):
            return  # the server is gone
        finally:
            writer.close()

    await asyncio.wait_for(asyncio.gather(*(client(i) for i in range(connections))), 60)
    return answered


def test_every_answered_write_survives_kill_9_during_a_burst(tmp_path):
    """A real server on a file takes writes from 32 connections at once (so they commit in
    groups) and is killed (SIGKILL) while many are in flight. Every write answered 204 is in
    the file, with both of its rows: nothing is lost, nothing half applied."""
    path = tmp_path / "acked.db"
    server = svc_process.start([str(ACKED)], env={"SVC_DB": str(path), "SVC_LOG": "quiet"})
    try:
        answered = asyncio.run(_burst(server.port, 32, 600,
                                      lambda: os.kill(server.process.pid, signal.SIGKILL)))
    finally:
        server.stop()
    assert server.process.returncode == -signal.SIGKILL
    with sqlite3.connect(path) as check:
        stored = {n for (n,) in check.execute("SELECT n FROM acked")}
    low = {n for n in stored if n < 1_000_000_000}
    assert len(answered) >= 600
    assert answered <= low
    assert stored == low | {n + 1_000_000_000 for n in low}
