"""The job and schedule statements (svc.runtime.background.job_store) against each database: claims that
never overlap, even when made at once from several connections; a runner that lost its claim
changes nothing; expired leases taken back; exactly one winner for a due scheduled run.
Also the backoff's doubling, cap and jitter."""

from __future__ import annotations

import asyncio

import pytest

from svc.rules.contract import Job
from svc.runtime.background import job_store as store
from svc.runtime.db import close_all, db_all, db_exec, db_open
from svc.runtime.background.jobs import MAX_BACKOFF_MS, backoff_ms, enqueue
from svc.runtime.lib.support import SvcError
from tests.helpers.jobs_db import run


class Payload:
    __struct_fields__ = ("n",)

    def __init__(self, n: int) -> None:
        self.n = n


async def queue(db, count: int) -> None:
    for n in range(count):
        assert isinstance(await enqueue(db, "work", {"n": n}, 3, 1000), int)


def test_concurrent_claims_from_several_connections_never_share_a_job(url):
    """Four handles (four SQLite connections, four PostgreSQL pools) claim batches at once
    until the queue is empty: every job is claimed exactly once."""
    async def body():
        handles = [await db_open(url) for _ in range(4)]
        assert await store.create_tables(handles[0]) is None
        await queue(handles[0], 300)
        statement = store.claim_statement(handles[0].dialect, ["work"])

        async def claimer(db, who: str) -> list[int]:
            got: list[int] = []
            while True:
                jobs = await store.claim(db, statement, who, 7)
                assert not isinstance(jobs, SvcError), jobs
                if not jobs:
                    return got
                got += [job.id for job in jobs]

        claimed = await asyncio.gather(*(claimer(db, f"r{i}") for i, db in enumerate(handles)))
        every = [job for part in claimed for job in part]
        assert len(every) == len(set(every)) == 300
        return claimed

    run(body)


def test_a_claim_takes_only_due_jobs_of_known_names_oldest_first(url):
    async def body():
        db = await db_open(url)
        await queue(db, 3)
        await enqueue(db, "other", {"n": 9}, 3, 1000)
        await db_exec(db, "UPDATE svc_jobs SET run_at = run_at + 60000 WHERE id = 2")
        jobs = await store.claim(db, store.claim_statement(db.dialect, ["work"]), "me", 10)
        assert [(j.id, j.name, j.attempt, j.max_attempts) for j in jobs] == [
            (1, "work", 1, 3), (3, "work", 1, 3)]
        assert jobs[0].payload == '{"n":0}'

    run(body)


def test_a_runner_that_lost_its_claim_changes_nothing(url):
    async def body():
        db = await db_open(url)
        await queue(db, 1)
        statement = store.claim_statement(db.dialect, ["work"])
        (job,) = await store.claim(db, statement, "first", 1)
        # Its lease runs out; another runner takes the job back and claims it.
        await db_exec(db, "UPDATE svc_jobs SET locked_until = 0")
        assert await store.rescue(db) == 1
        (again,) = await store.claim(db, statement, "second", 1)
        assert again.id == job.id and again.attempt == 2
        assert await store.mark_done(db, job, "first") == 0  # the first runner, too late
        assert await store.mark_retry(db, job, "first", 0, "x") == 0
        assert await store.mark_done(db, again, "second") == 1

    run(body)


def test_an_expired_lease_on_the_last_attempt_makes_the_job_dead(url):
    async def body():
        db = await db_open(url)
        assert isinstance(await enqueue(db, "work", {"n": 1}, 1, 1000), int)
        await store.claim(db, store.claim_statement(db.dialect, ["work"]), "gone", 1)
        await db_exec(db, "UPDATE svc_jobs SET locked_until = 0")
        assert await store.rescue(db) == 1
        return await db_all(StateRow, db, "SELECT state, last_error FROM svc_jobs")

    (row,) = run(body)
    assert row.state == "dead" and "its runner stopped during attempt 1" in row.last_error


def test_exactly_one_of_several_connections_takes_a_due_scheduled_run(url):
    async def body():
        handles = [await db_open(url) for _ in range(4)]
        db = handles[0]
        assert await store.create_tables(db) is None
        assert await store.register_schedule(db, "tick", "every 1000ms", 0) is None
        far = store.now_ms() + 60_000
        taken = await asyncio.gather(*(store.take_schedule(h, "tick", f"r{i}", far, far)
                                       for i, h in enumerate(handles)))
        assert sorted(taken) == [0, 0, 0, 1]
        winner = f"r{taken.index(1)}"
        # Not due again until its next time, even once released.
        assert await store.release_schedule(db, "tick", "someone else") == 0
        assert await store.release_schedule(db, "tick", winner) == 1
        assert await store.take_schedule(db, "tick", "r9", far, far) == 0
        # A changed period starts counting anew; the same one keeps its time.
        assert await store.register_schedule(db, "tick", "every 1000ms", 5) is None
        assert await store.register_schedule(db, "tick", "every 2000ms", 7) is None
        rows = await store.schedule_times(db)
        return [(r.name, r.next_run_at) for r in rows]

    assert run(body) == [("tick", 7)]


def test_enqueue_while_the_callers_own_transaction_is_open_is_refused(url):
    from svc.runtime.db import db_begin, db_rollback

    async def body():
        db = await db_open(url)
        tx = await db_begin(db, "app.svc:3", [])
        refused = await enqueue(db, "work", {"n": 1}, 3, 1000)
        await db_rollback(tx)
        return refused

    refused = run(body)
    assert isinstance(refused, SvcError) and refused.kind == "database"
    assert "app.svc:3" in refused.message


def test_enqueue_in_a_rolled_back_transaction_leaves_no_job(url):
    from svc.runtime.db import db_begin, db_commit, db_rollback

    async def body():
        db = await db_open(url)
        tx = await db_begin(db)
        assert isinstance(await enqueue(tx, "work", {"n": 1}, 3, 1000), int)
        await db_rollback(tx)
        tx = await db_begin(db)
        assert isinstance(await enqueue(tx, "work", {"n": 2}, 3, 1000), int)
        await db_commit(tx)
        return await db_all(StateRow, db, "SELECT state, payload AS last_error FROM svc_jobs")

    rows = run(body)
    assert [(r.state, r.last_error) for r in rows] == [("queued", '{"n":2}')]


class StateRow:
    __svc_fields__ = (("state", "str", False), ("last_error", "str", True))

    def __init__(self, state: str, last_error: str | None) -> None:
        self.state = state
        self.last_error = last_error


def test_backoff_doubles_from_its_base_with_jitter_and_stops_at_an_hour():
    for attempt, middle in [(1, 1000), (2, 2000), (3, 4000), (5, 16000)]:
        waits = [backoff_ms(1000, attempt) for _ in range(200)]
        assert all(0.75 * middle <= w <= 1.25 * middle for w in waits)
        assert len(set(waits)) > 50  # jittered, not one value
    assert all(backoff_ms(1000, 60) <= 1.25 * MAX_BACKOFF_MS for _ in range(50))
    assert min(backoff_ms(1000, 60) for _ in range(50)) >= 0.75 * MAX_BACKOFF_MS


def test_a_job_record_carries_its_defaults():
    job = Job("work", print, Payload)
    assert (job.attempts, job.backoff_ms, job.deadline_ms) == (5, 1000, 60000)


def test_a_payload_that_no_longer_fits_its_class_is_a_failed_run_kept_dead(tmp_path):
    """A queued payload made by an older version of the program (another field) does not
    decode into today's class: the run fails with why, and the job ends dead, not lost."""
    import msgspec

    from svc.runtime.background.jobs import run_jobs

    class Today(msgspec.Struct):
        n: int

    async def handler(db, payload):
        return None

    async def body():
        db = await db_open(str(tmp_path / "old.sqlite"))
        assert isinstance(await enqueue(db, "work", {"old_field": 1}, 1, 1000), int)
        assert await run_jobs(db, [Job("work", handler, Today, attempts=1)]) == 1
        return await db_all(StateRow, db, "SELECT state, last_error FROM svc_jobs")

    (row,) = run(body)
    assert row.state == "dead"
    assert row.last_error.startswith("its payload does not fit Today: invalid JSON value")


def test_a_failure_whose_message_holds_a_nul_is_recorded_on_both_databases(url):
    import msgspec

    from svc.runtime.background.jobs import run_jobs

    class Any_(msgspec.Struct):
        n: int

    async def handler(db, payload):
        return SvcError("invalid", "bad\x00byte")

    async def body():
        db = await db_open(url)
        assert isinstance(await enqueue(db, "work", {"n": 1}, 1, 1000), int)
        assert await run_jobs(db, [Job("work", handler, Any_, attempts=1)]) == 1
        return await db_all(StateRow, db, "SELECT state, last_error FROM svc_jobs")

    (row,) = run(body)
    assert (row.state, row.last_error) == ("dead", "invalid: bad\\u0000byte")
