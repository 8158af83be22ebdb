"""The internal tables' versions (svc.runtime.background.job_store, `create_tables`), on each
database: a fresh database gets version 1 of svc_jobs and svc_schedules and records it; one made
by svc 0.3 (the tables, no versions) counts as version 1 and keeps its rows; a missing step is
applied once, in order, even by several processes starting at once; a database newer than this
svc knows is refused with an error value."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time

import pytest

from svc.runtime.background import job_store as store
from svc.runtime.background.jobs import enqueue
from svc.runtime.db import close_all, db_all, db_exec, db_open
from svc.runtime.db.base import SCRIPT
from svc.runtime.lib.support import SvcError
from tests.helpers.jobs_db import run

#: The tables as svc 0.3 made them (CREATE TABLE IF NOT EXISTS, no version recorded).
OLD_TABLES = {
    "sqlite": """
CREATE TABLE IF NOT EXISTS svc_jobs (
  id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, payload TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'running', 'done', 'dead')),
  attempt INTEGER NOT NULL DEFAULT 0, max_attempts INTEGER NOT NULL,
  deadline_ms INTEGER NOT NULL, run_at INTEGER NOT NULL, locked_by TEXT, locked_until INTEGER,
  last_error TEXT, created_at INTEGER NOT NULL, finished_at INTEGER);
CREATE INDEX IF NOT EXISTS svc_jobs_due ON svc_jobs (state, run_at);
CREATE TABLE IF NOT EXISTS svc_schedules (name TEXT PRIMARY KEY, spec TEXT NOT NULL,
  next_run_at INTEGER NOT NULL, locked_by TEXT, locked_until INTEGER);
""",
    "postgresql": """
CREATE TABLE IF NOT EXISTS svc_jobs (
  id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL, payload TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'running', 'done', 'dead')),
  attempt INTEGER NOT NULL DEFAULT 0, max_attempts INTEGER NOT NULL,
  deadline_ms BIGINT NOT NULL, run_at BIGINT NOT NULL, locked_by TEXT, locked_until BIGINT,
  last_error TEXT, created_at BIGINT NOT NULL, finished_at BIGINT);
CREATE INDEX IF NOT EXISTS svc_jobs_due ON svc_jobs (state, run_at);
CREATE TABLE IF NOT EXISTS svc_schedules (name TEXT PRIMARY KEY, spec TEXT NOT NULL,
  next_run_at BIGINT NOT NULL, locked_by TEXT, locked_until BIGINT);
""",
}

#: A second step of svc_jobs, for the tests: applied twice it would fail (the column exists).
STEP_2 = {"sqlite": "ALTER TABLE svc_jobs ADD COLUMN note TEXT",
          "postgresql": "ALTER TABLE svc_jobs ADD COLUMN note TEXT"}


class Version:
    __svc_fields__ = (("name", "str", False), ("version", "i64", False))

    def __init__(self, name: str, version: int) -> None:
        self.name = name
        self.version = version


class Note:
    __svc_fields__ = (("name", "str", False), ("note", "str", True))

    def __init__(self, name: str, note: str | None) -> None:
        self.name = name
        self.note = note


async def versions(db) -> dict[str, int]:
    rows = await db_all(Version, db, "SELECT name, version FROM svc_internal_schema")
    assert not isinstance(rows, SvcError), rows
    return {row.name: row.version for row in rows}


def test_a_fresh_database_gets_the_tables_and_their_versions(url):
    async def body():
        db = await db_open(url)
        assert await store.create_tables(db) is None
        made = await versions(db)
        store._prepared.discard(db)  # as another process would: finds them current
        assert await store.create_tables(db) is None
        assert await versions(db) == made
        assert isinstance(await enqueue(db, "work", {"n": 1}, 3, 1000), int)
        return made

    assert run(body) == {"svc_jobs": 1, "svc_schedules": 1}


def test_a_database_made_by_svc_03_counts_as_version_1_and_keeps_its_rows(url):
    async def body():
        db = await db_open(url)
        assert not isinstance(await db._submit(SCRIPT, OLD_TABLES[db.dialect], (), None),
                              SvcError)
        assert await db_exec(db, "INSERT INTO svc_jobs (name, payload, max_attempts, "
                                 "deadline_ms, run_at, created_at) VALUES "
                                 "('work', '{\"n\":1}', 3, 1000, 0, 0)") == 1
        assert await db_exec(db, "INSERT INTO svc_schedules (name, spec, next_run_at) "
                                 "VALUES ('tick', 'every 1000ms', 0)") == 1
        assert await store.create_tables(db) is None
        claimed = await store.claim(db, store.claim_statement(db.dialect, ["work"]), "me", 5)
        rows = await store.schedule_times(db)
        return await versions(db), [j.payload for j in claimed], [r.name for r in rows]

    assert run(body) == ({"svc_jobs": 1, "svc_schedules": 1}, ['{"n":1}'], ["tick"])


def test_a_missing_step_is_applied_in_order_and_recorded(url, monkeypatch):
    """A database at version 1 (here one made by svc 0.3) meets an svc whose svc_jobs has a
    second step: the step is applied, the rows stay, and the version says 2."""
    monkeypatch.setitem(store.STEPS, "svc_jobs", [*store.STEPS["svc_jobs"], STEP_2])

    async def body():
        db = await db_open(url)
        assert not isinstance(await db._submit(SCRIPT, OLD_TABLES[db.dialect], (), None),
                              SvcError)
        assert isinstance(await db_exec(db, "INSERT INTO svc_jobs (name, payload, "
                                            "max_attempts, deadline_ms, run_at, created_at) "
                                            "VALUES ('work', '{}', 3, 1000, 0, 0)"), int)
        assert await store.create_tables(db) is None
        store._prepared.discard(db)
        assert await store.create_tables(db) is None  # not applied twice
        notes = await db_all(Note, db, "SELECT name, note FROM svc_jobs")
        return await versions(db), [(n.name, n.note) for n in notes]

    assert run(body) == ({"svc_jobs": 2, "svc_schedules": 1}, [("work", None)])


def test_a_database_newer_than_this_svc_knows_is_refused(url):
    from svc.runtime.background.service import start_background
    from svc.runtime.observability.serverlog import ServerLog
    from svc.rules.contract import Job

    async def body():
        db = await db_open(url)
        assert await store.create_tables(db) is None
        await db_exec(db, "UPDATE svc_internal_schema SET version = 7 WHERE name = 'svc_jobs'")
        store._prepared.discard(db)  # as a process of this older svc starting now would
        refused = await store.create_tables(db)
        enqueued = await enqueue(db, "work", {"n": 1}, 3, 1000)
        started = await start_background(db, [Job("work", print, dict)], [], ServerLog())
        return refused, enqueued, started, await versions(db)

    refused, enqueued, started, after = run(body)
    assert isinstance(refused, SvcError) and refused.kind == "database"
    assert refused.message == (
        "this database's svc_jobs table is at version 7, newer than this svc knows (version "
        "1): a newer svc has used it; run that svc or a newer one against it")
    assert isinstance(enqueued, SvcError) and enqueued.message == refused.message
    assert isinstance(started, SvcError) and started.message == refused.message
    assert after == {"svc_jobs": 7, "svc_schedules": 1}  # nothing changed


#: One process of the concurrency test: opens the database, waits for the common start time,
#: brings the tables up to date (with a second step of svc_jobs when asked) and says how it went.
CHILD = """
import asyncio, sys, time
from svc.runtime.background import job_store
from svc.runtime.db import close_all, db_open

async def main(url, start_at, step_2):
    if step_2:
        job_store.STEPS["svc_jobs"].append({"sqlite": step_2, "postgresql": step_2})
    db = await db_open(url)
    await asyncio.sleep(max(0.0, start_at - time.time()))
    made = await job_store.create_tables(db)
    print("ok" if made is None else f"error: {made.message}", flush=True)
    close_all()

asyncio.run(main(sys.argv[1], float(sys.argv[2]), sys.argv[3]))
"""


def create_at_once(url: str, processes: int, step_2: str = "") -> list[str]:
    """Start `processes` Pythons that call `create_tables` at the same moment; their answers."""
    start_at = time.time() + 3.0  # after every one has imported svc and opened the database
    children = [subprocess.Popen([sys.executable, "-c", CHILD, url, str(start_at), step_2],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env=os.environ.copy())
                for _ in range(processes)]
    answers = []
    for child in children:
        out, err = child.communicate(timeout=120)
        answers.append(out.strip() or err.strip())
    return answers


def test_processes_starting_at_once_each_apply_a_step_once(url):
    """Four processes make the tables of a fresh database at once, then four bring its
    svc_jobs to a version 2 whose step fails when applied twice: every one succeeds."""
    assert create_at_once(url, 4) == ["ok"] * 4
    assert create_at_once(url, 4, STEP_2["sqlite"]) == ["ok"] * 4

    async def after():
        db = await db_open(url)
        notes = await db_all(Note, db, "SELECT name, note FROM svc_jobs")
        return await versions(db), notes

    assert run(after) == ({"svc_jobs": 2, "svc_schedules": 1}, [])
