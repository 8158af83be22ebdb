"""The work a serving process does outside requests: its job runner and its schedule runner.

`serve` starts them once it listens (`start_background`) and stops them after the requests in
flight are answered, before the database closes (`Background.stop`). A program without
`@job`, `@every` or `@cron` starts nothing and pays nothing.
"""

from __future__ import annotations

import asyncio

from svc.rules.contract import Job, Schedule
from svc.runtime.background import job_store
from svc.runtime.services import current as current_services
from svc.rules.settings import JobSettings
from svc.runtime.db.base import Db
from svc.runtime.observability.serverlog import ServerLog
from svc.runtime.lib.support import SvcError


class Background:
    """The runners of one serving process (either may be absent)."""

    def __init__(self, runners: list) -> None:
        self.runners = runners

    async def stop(self, grace: float) -> None:
        """Both runners at once, so the grace period is spent once, not once each."""
        await asyncio.gather(*(runner.stop(grace) for runner in self.runners))


def runs_jobs_here(db: Db) -> bool:
    """Whether this process runs jobs: on PostgreSQL every process does (claims skip each
    other's rows); on SQLite, which has one writer at a time, only the first worker (or the one
    server) does: a second runner in another process only waits on the first one's locks
    (measured with bench/jobs.svc and two workers: 200 jobs/s, against 1,500 with one runner)."""
    return db.dialect != "sqlite" or current_services().worker_slot in (None, 0)


async def start_background(db: Db, jobs: list[Job], schedules: list[Schedule], log: ServerLog,
                           timings: JobSettings = JobSettings()) -> Background | SvcError:
    """Make the tables where missing (or bring them up to date) and start a runner for the
    jobs and one for the schedules (the program has one or the other), both with `timings`."""
    if not isinstance(db, Db):
        return SvcError("invalid", "serve needs a database handle to run jobs and schedules")
    from svc.runtime.background import jobs as job_runtime
    from svc.runtime.background import schedules as schedule_runtime

    made = await job_store.create_tables(db)
    if isinstance(made, SvcError):
        return made
    runners: list = []
    if jobs and runs_jobs_here(db):
        concurrency = job_runtime.concurrency_from_env()
        if isinstance(concurrency, SvcError):
            return concurrency
        runners.append(job_runtime.JobRunner(db, jobs, log, concurrency, timings))
    if schedules:
        schedule_runner = schedule_runtime.ScheduleRunner(db, schedules, log, timings)
        registered = await schedule_runner.register()
        if isinstance(registered, SvcError):
            return SvcError(registered.kind, f"cannot register the schedules: "
                                             f"{registered.message}")
        runners.append(schedule_runner)
    for runner in runners:
        runner.start()
    return Background(runners)
