"""Durable jobs: `enqueue` and the runner that runs `@job` handlers (docs/reference/language.md,
"Jobs and schedules"; the rows and statements are in job_store.py).

`enqueue(db, "name", payload)` writes one row, in the caller's transaction when given a Tx,
so a job exists exactly when the data it is about does. Every serving process (each worker of
`SVC_WORKERS`, each instance on one PostgreSQL) runs one `JobRunner`: it claims due jobs in
batches, runs each as its own task with the job's deadline, and records the outcome. A failed
run (an error result, a fault, the deadline) is retried after an exponential backoff with
jitter until its attempts are used up; then the job is `dead`, kept for someone to look at.

A runner that crashes leaves its jobs `running`; when their lease (deadline plus a grace) has
run out, any runner puts them back in the queue, so a job runs at least once after a crash,
and never twice while its runner is alive. A graceful stop lets running jobs finish within
the grace period, puts the rest back as if they had not begun, and claims nothing more.
"""

from __future__ import annotations

import asyncio
import os
import random
import socket
import time
from collections.abc import Awaitable
from typing import Any

from svc.rules.contract import Job
from svc.process import fault_message
from svc.runtime.background import job_store as store
from svc.runtime.observability import metrics
from svc.rules.settings import JobSettings, Settings
from svc.runtime.http.context import set_request_deadline
from svc.runtime.db import db_one
from svc.runtime.db.transactions import refuse_if_held
from svc.runtime.db.base import Db, Tx
from svc.runtime.observability.serverlog import ServerLog
from svc.runtime.lib.support import SvcError, json_decode, json_encode
from svc.runtime.services import current as current_services

#: Jobs one process runs at once (`SVC_JOB_CONCURRENCY`).
CONCURRENCY_VARIABLE = "SVC_JOB_CONCURRENCY"
DEFAULT_CONCURRENCY = 10
#: How often a runner puts back the jobs of runners that stopped without finishing them.
RESCUE_SECONDS = 1.0
PRUNE_SECONDS = 60.0
#: The longest wait between two attempts, whatever the backoff doubled to.
MAX_BACKOFF_MS = 3_600_000
#: How long a runner waits before trying again after its database refused a statement.
DATABASE_PAUSE_SECONDS = 0.5


async def enqueue(db: Db | Tx, name: str, payload: Any, attempts: int,
                  deadline_ms: int) -> int | SvcError:
    """`enqueue(db, "name", payload)`: queue a run of job `name`; the new job's id. Generated
    code passes the job's attempts and deadline, which are stored with it."""
    if db._holders:  # its own transaction is open: refused before the tables are looked at
        held = refuse_if_held(db)
        if held is not None:
            return held
    made = await store.ensure_tables(db)
    if isinstance(made, SvcError):
        return made
    row = await db_one(store.JobId, db, store.insert_statement(), name, json_encode(payload),
                       attempts, deadline_ms, store.now_ms())
    if isinstance(row, SvcError):
        return SvcError(row.kind, f"cannot enqueue job '{name}': {row.message}")
    current_services().wake_job_runners()  # a runner in this process looks now (after a commit: soon)
    metrics.job_enqueued(name)
    return row.id  # type: ignore[attr-defined]


def concurrency_from_env() -> int | SvcError:
    raw = os.environ.get(CONCURRENCY_VARIABLE)
    if raw is None:
        return DEFAULT_CONCURRENCY
    text = raw.strip()
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= 1000:
        return SvcError("invalid", f"{CONCURRENCY_VARIABLE} must be an integer from 1 to 1000 "
                                   f"(got {raw!r})")
    return int(text)


def runner_id() -> str:
    """Who holds a claim: host, process and a random part (a restarted process is another)."""
    return f"{socket.gethostname()}:{os.getpid()}:{random.getrandbits(32):08x}"


def backoff_ms(base_ms: int, attempt: int) -> int:
    """The wait after failed attempt `attempt` (1-based): base × 2^(attempt-1), at most an
    hour, then ±25% jitter so that jobs failing together do not retry together."""
    delay = min(base_ms * (1 << min(attempt - 1, 40)), MAX_BACKOFF_MS)
    return int(delay * random.uniform(0.75, 1.25))


class JobRunner:
    """Claims and runs this program's jobs in one serving process."""

    def __init__(self, db: Db, jobs: list[Job], log: ServerLog, concurrency: int,
                 timings: JobSettings = JobSettings()) -> None:
        self.db = db
        self.timings = timings  # how often it polls; how long its claims outlive deadlines
        self.jobs = {job.name: job for job in jobs}
        self.log = log
        self.concurrency = concurrency
        #: Claims wait for this many free slots (while runs go on), so that one claim
        #: statement takes several jobs instead of one per finished run.
        self.batch = max(1, concurrency // 2)
        self.runner = runner_id()
        self.claim_sql = store.claim_statement(db.dialect, list(self.jobs))
        self.running: dict[asyncio.Task, store.ClaimedJob] = {}
        self.wake = asyncio.Event()
        self.stopping = False
        self.loop_task: asyncio.Task | None = None
        self.last_rescue = 0.0
        self.last_prune = 0.0

    def start(self) -> None:
        current_services().job_wakers.add(self.wake)
        self.loop_task = asyncio.get_running_loop().create_task(self.claim_loop())

    async def claim_loop(self) -> None:
        while not self.stopping:
            await self.housekeeping()
            free = self.concurrency - len(self.running)
            if free < self.batch and self.running:
                await self.pause(self.timings.poll_seconds)  # until runs free a batch of slots
                continue
            jobs = await store.claim(self.db, self.claim_sql, self.runner, free, self.timings)
            if isinstance(jobs, SvcError):
                self.log.error(f"jobs: cannot claim jobs: {jobs.message}")
                await self.pause(DATABASE_PAUSE_SECONDS)
                continue
            for job in jobs:
                self.start_run(job)
            if len(jobs) < free:
                await self.pause(self.timings.poll_seconds)  # nothing more is due now

    async def pause(self, seconds: float) -> None:
        """Until woken (a job enqueued here, a run finished) or `seconds` passed."""
        self.wake.clear()
        try:
            await asyncio.wait_for(self.wake.wait(), seconds)
        except asyncio.TimeoutError:
            pass

    async def housekeeping(self) -> None:
        now = time.monotonic()
        if now - self.last_rescue >= RESCUE_SECONDS:
            self.last_rescue = now
            rescued = await store.rescue(self.db)
            if isinstance(rescued, int) and rescued:
                self.log.error(f"jobs: {rescued} job(s) of a runner that stopped without "
                               "finishing them put back in the queue (or dead, if that was "
                               "their last attempt)")
        if now - self.last_prune >= PRUNE_SECONDS:
            self.last_prune = now
            await store.prune(self.db)

    def start_run(self, job: store.ClaimedJob) -> None:
        task = asyncio.get_running_loop().create_task(self.run(job))
        self.running[task] = job
        task.add_done_callback(self.run_ended)

    def run_ended(self, task: asyncio.Task) -> None:
        self.running.pop(task, None)
        self.wake.set()  # a slot is free

    async def run(self, job: store.ClaimedJob) -> None:
        definition = self.jobs.get(job.name)
        if definition is None:  # cannot happen: the claim names only this program's jobs
            return
        started = time.perf_counter()
        tracer = current_services().tracer
        if tracer is None:
            outcome = await self.outcome(definition, job)
        else:  # a span per run (svc.runtime.observability.otel), the parent of its statements
            outcome = await tracer.background(job.name, "job", {
                "svc.job.name": job.name, "svc.job.id": job.id, "svc.job.attempt": job.attempt,
            }, self.outcome(definition, job))
        if outcome is None:
            metrics.job_ran(job.name, "done", time.perf_counter() - started)
            done = await store.mark_done(self.db, job, self.runner)
            if isinstance(done, SvcError):
                self.log.error(f"jobs: job {job.name} #{job.id} ran but could not be marked "
                               f"done ({done.message}); it will run again")
            return
        await self.failed(definition, job, outcome, time.perf_counter() - started)

    async def outcome(self, definition: Job, job: store.ClaimedJob) -> str | None:
        """Run the handler once: None when it succeeded, else what went wrong."""
        payload = json_decode(definition.payload, job.payload)
        if isinstance(payload, SvcError):
            return f"its payload does not fit {definition.payload.__name__}: {payload.message}"
        return await run_once(definition.handler(self.db, payload), job.deadline_ms / 1000)

    async def failed(self, definition: Job, job: store.ClaimedJob, why: str,
                     seconds: float) -> None:
        where = f"job {job.name} #{job.id} attempt {job.attempt} of {job.max_attempts}"
        metrics.job_ran(job.name, "dead" if job.attempt >= job.max_attempts else "retry", seconds)
        if job.attempt >= job.max_attempts:
            self.log.error(f"jobs: {where} failed after {seconds * 1000:.0f} ms ({why}); no "
                           "attempts left, it is dead")
            marked = await store.mark_dead(self.db, job, self.runner, why)
        else:
            wait = backoff_ms(definition.backoff_ms, job.attempt)
            self.log.error(f"jobs: {where} failed after {seconds * 1000:.0f} ms ({why}); "
                           f"retrying in {_seconds(wait)}")
            marked = await store.mark_retry(self.db, job, self.runner, store.now_ms() + wait, why)
            if not isinstance(marked, SvcError):  # look again when the retry is due, not at
                # the next poll (a retry "in 0.233s" ran 0.4 s later with polls of 0.2 s)
                asyncio.get_running_loop().call_later(wait / 1000, self.wake.set)
        if isinstance(marked, SvcError):
            self.log.error(f"jobs: {where}: cannot record the failure ({marked.message}); its "
                           "lease will run out and it will run again")

    async def stop(self, grace: float) -> None:
        """Claim nothing more; let running jobs finish within `grace` seconds; put the rest
        back in the queue."""
        self.stopping = True
        self.wake.set()
        current_services().job_wakers.discard(self.wake)
        if self.loop_task is not None:
            await asyncio.gather(self.loop_task, return_exceptions=True)
        if self.running:
            await asyncio.wait(list(self.running), timeout=grace)
        left = list(self.running.items())
        for task, _ in left:
            task.cancel()
        for task, job in left:
            await asyncio.gather(task, return_exceptions=True)
            await store.put_back(self.db, job, self.runner)
        if left:
            self.log.error(f"jobs: {len(left)} running job(s) did not finish within the "
                           "shutdown grace period; put back in the queue")


#: `run_jobs` gives up after this many runs: a job that enqueues itself would never end.
RUN_JOBS_LIMIT = 10_000


async def run_jobs(db: Db, jobs: list[Job], settings: Settings | None = None,
                   due_now: bool = False) -> int | SvcError:
    """`run_jobs(db)` in a test: claim and run the due jobs one at a time, as a server's runner
    would (a failure is recorded and retried later, after its backoff), until none is due.
    `settings`: the program's (svc.toml's `[jobs]`), which generated code hands in.
    `due_now` (`run_jobs_now`): the jobs waiting for a later attempt are due at once first, so
    a test of a retry does not sleep through the backoff."""
    if not isinstance(db, Db):
        name = "run_jobs_now" if due_now else "run_jobs"
        return SvcError("invalid", f"{name} needs a database handle")
    if db._holders:
        held = refuse_if_held(db)
        if held is not None:
            return held
    made = await store.create_tables(db)
    if isinstance(made, SvcError) or not jobs:
        return made if isinstance(made, SvcError) else 0
    if due_now:
        due = await store.make_due(db, [job.name for job in jobs])
        if isinstance(due, SvcError):
            return due
    runner = JobRunner(db, jobs, ServerLog(), concurrency=1,
                       timings=(settings or Settings()).jobs)
    for runs in range(RUN_JOBS_LIMIT + 1):
        claimed = await store.claim(db, runner.claim_sql, runner.runner, 1)
        if isinstance(claimed, SvcError) or not claimed:
            return claimed if isinstance(claimed, SvcError) else runs
        await runner.run(claimed[0])
        runner.log.flush()
    return SvcError("internal", f"run_jobs stopped after {RUN_JOBS_LIMIT} runs: does a job "
                                "enqueue itself?")


async def run_jobs_now(db: Db, jobs: list[Job], settings: Settings | None = None,
                       ) -> int | SvcError:
    """`run_jobs_now(db)` in a test: `run_jobs`, after making every queued job due now (its
    backoff skipped); a run that fails during the call waits its backoff as usual, so each
    call makes at most one more attempt of a failing job."""
    return await run_jobs(db, jobs, settings, due_now=True)


async def run_once(call: Awaitable[Any], deadline_s: float) -> str | None:
    """Await one run of a job or scheduled function, cancelled at its deadline (database calls
    in it give up by then too, as in a request): None when it succeeded, else what went wrong."""
    set_request_deadline(asyncio.get_running_loop().time() + deadline_s)
    try:
        result = await asyncio.wait_for(call, deadline_s)
    except asyncio.TimeoutError:
        return f"it passed its deadline of {deadline_s:g}s"
    except Exception as exc:  # a fault in svc code: logged, and a failed run
        return f"fault: {fault_message(exc)}"
    if result.__class__ is SvcError:  # the cause as the log has it, not the client's text
        return result.detail or f"{result.kind}: {result.message}"
    return None


def _seconds(ms: int) -> str:
    return f"{ms / 1000:g}s"

