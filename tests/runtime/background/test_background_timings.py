"""The background runners' timings (svc.runtime.background.timings) are the values used: the
lease grace a claim writes (jobs and scheduled runs), how often an idle job runner polls, the
timings `start_background` hands to both runners, and, with a real SQLite file and a killed
process, a crashed job taken back as soon as its short lease ran out."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time

import msgspec

from svc.rules.contract import Job, Schedule
from svc.runtime.background import job_store as store
from svc.runtime.background.jobs import JobRunner, enqueue
from svc.runtime.background.schedules import ScheduleRunner
from svc.runtime.background.service import start_background
from svc.rules.settings import JobSettings
from svc.runtime.db import close_all, db_all, db_exec, db_open
from svc.runtime.observability.serverlog import ServerLog
from tests.helpers.jobs_db import run


class Payload(msgspec.Struct):
    n: int


async def succeed(db, payload):
    return None


class Lease:
    __svc_fields__ = (("locked_until", "i64", False),)

    def __init__(self, locked_until: int) -> None:
        self.locked_until = locked_until


class JobRow:
    __svc_fields__ = (("state", "str", False), ("attempt", "i64", False),
                      ("deadline_ms", "i64", False), ("created_at", "i64", False),
                      ("locked_until", "i64", True), ("finished_at", "i64", True))

    def __init__(self, state: str, attempt: int, deadline_ms: int, created_at: int,
                 locked_until: int | None, finished_at: int | None) -> None:
        self.state = state
        self.attempt = attempt
        self.deadline_ms = deadline_ms
        self.created_at = created_at
        self.locked_until = locked_until
        self.finished_at = finished_at


JOB_ROW = "SELECT state, attempt, deadline_ms, created_at, locked_until, finished_at FROM svc_jobs"


def test_the_defaults_are_the_values_of_03():
    assert JobSettings() == JobSettings(poll_seconds=0.2, lease_grace_seconds=5.0)
    assert JobSettings().lease_grace_ms == 5_000


def test_a_claim_leases_a_job_for_its_deadline_plus_the_grace_it_is_given(tmp_path):
    async def body():
        db = await db_open(str(tmp_path / "jobs.sqlite"))
        statement = store.claim_statement(db.dialect, ["work"])
        leases = []
        for timings in (JobSettings(lease_grace_seconds=0.25), JobSettings()):
            assert isinstance(await enqueue(db, "work", {"n": 1}, 3, 1000), int)
            before = store.now_ms()
            (job,) = await store.claim(db, statement, "me", 1, timings)
            after = store.now_ms()
            (row,) = await db_all(Lease, db, "SELECT locked_until FROM svc_jobs WHERE id = ?1",
                                  job.id)
            leases.append((row.locked_until - before, row.locked_until - after))
        return leases

    short, default = run(body)
    assert short[1] <= 1250 <= short[0]
    assert default[1] <= 6000 <= default[0]


def test_a_scheduled_run_is_leased_for_its_deadline_plus_the_runners_grace(tmp_path):
    async def body():
        db = await db_open(str(tmp_path / "jobs.sqlite"))
        assert await store.create_tables(db) is None
        release = asyncio.Event()

        async def tick(db):
            await release.wait()
            return None

        schedule = Schedule("tick", tick, every_ms=60_000, deadline_ms=2_000)
        runner = ScheduleRunner(db, [schedule], ServerLog(),
                                JobSettings(lease_grace_seconds=0.75))
        assert await runner.register() is None
        await db_exec(db, "UPDATE svc_schedules SET next_run_at = 0")
        before = store.now_ms()
        await runner.try_to_run(schedule)
        after = store.now_ms()
        (row,) = await db_all(Lease, db, "SELECT locked_until FROM svc_schedules")
        release.set()
        await runner.stop(5)
        return row.locked_until - before, row.locked_until - after

    since_before, since_after = run(body)
    assert since_after <= 2750 <= since_before


def test_an_idle_job_runner_looks_for_jobs_every_poll_seconds(tmp_path, monkeypatch):
    """Nothing is due and nothing wakes the runner: it claims once a poll. Counted over the
    same time with a short and a long poll (a generous ratio, not a rate)."""
    claims: list[JobSettings] = []
    real_claim = store.claim

    async def counted(db, statement, runner, count, timings=JobSettings()):
        claims.append(timings)
        return await real_claim(db, statement, runner, count, timings)

    monkeypatch.setattr(store, "claim", counted)

    def claims_while_idle(timings: JobSettings) -> list[JobSettings]:
        async def body():
            db = await db_open(str(tmp_path / "jobs.sqlite"))
            assert await store.create_tables(db) is None
            runner = JobRunner(db, [Job("work", succeed, Payload)], ServerLog(), 1, timings)
            runner.start()
            await asyncio.sleep(1.5)
            await runner.stop(5)
        claims.clear()
        run(body)
        return list(claims)

    short = JobSettings(poll_seconds=0.05)
    often = claims_while_idle(short)
    rarely = claims_while_idle(JobSettings(poll_seconds=60.0))
    assert len(rarely) == 1  # the first look, then a poll that outlasts the test
    assert len(often) >= 5
    assert all(t is short for t in often)


def test_start_background_hands_its_timings_to_both_runners(tmp_path):
    async def body():
        db = await db_open(str(tmp_path / "jobs.sqlite"))
        timings = JobSettings(poll_seconds=0.01, lease_grace_seconds=0.5)
        background = await start_background(
            db, [Job("work", succeed, Payload)],
            [Schedule("tick", lambda db: succeed(db, None), every_ms=60_000)], ServerLog(),
            timings)
        try:
            return [runner.timings is timings for runner in background.runners]
        finally:
            await background.stop(5)

    assert run(body) == [True, True]


#: A serving process that claims the job, starts running it, and is then killed (`kill -9`).
CRASHING_RUNNER = """
import asyncio, sys
import msgspec
from svc.rules.contract import Job
from svc.runtime.background.jobs import JobRunner
from svc.rules.settings import JobSettings
from svc.runtime.db import db_open
from svc.runtime.observability.serverlog import ServerLog

class Payload(msgspec.Struct):
    n: int

async def hang(db, payload):
    print("running", flush=True)
    await asyncio.sleep(3600)

async def main(path, grace):
    db = await db_open(path)
    runner = JobRunner(db, [Job("work", hang, Payload)], ServerLog(), 1,
                       JobSettings(poll_seconds=0.05, lease_grace_seconds=grace))
    runner.start()
    await asyncio.sleep(3600)

asyncio.run(main(sys.argv[1], float(sys.argv[2])))
"""


def test_a_short_lease_grace_gives_a_crashed_jobs_lease_back_sooner(tmp_path):
    """A process claims a job (deadline 1.5 s) with a 0.2 s lease grace and is killed while
    running it. Its lease is the deadline plus 0.2 s, and a runner with the same timings takes
    the job back and runs it to the end before the default grace (5 s) would even have let
    it look."""
    path = str(tmp_path / "jobs.sqlite")
    grace = JobSettings(poll_seconds=0.05, lease_grace_seconds=0.2)

    async def queue():
        db = await db_open(path)
        assert isinstance(await enqueue(db, "work", {"n": 1}, 3, 1500), int)

    run(queue)
    child = subprocess.Popen([sys.executable, "-c", CRASHING_RUNNER, path, "0.2"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=os.environ.copy())
    try:
        line = child.stdout.readline() if child.stdout else ""
        seen_running = store.now_ms()
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        _, err = child.communicate(timeout=30)
    assert line.strip() == "running", err

    async def take_back():
        db = await db_open(path)
        (crashed,) = await db_all(JobRow, db, JOB_ROW)
        runner = JobRunner(db, [Job("work", succeed, Payload)], ServerLog(), 1, grace)
        runner.start()
        give_up = time.monotonic() + 30
        while time.monotonic() < give_up:
            (row,) = await db_all(JobRow, db, JOB_ROW)
            if row.state == "done":
                break
            await asyncio.sleep(0.05)
        await runner.stop(5)
        return crashed, row

    crashed, done = run(take_back)
    assert crashed.state == "running" and crashed.attempt == 1
    claimed_at = crashed.locked_until - crashed.deadline_ms - grace.lease_grace_ms
    assert crashed.created_at <= claimed_at <= seen_running
    assert (done.state, done.attempt) == ("done", 2)
    assert done.finished_at < claimed_at + crashed.deadline_ms + JobSettings().lease_grace_ms
