"""Schedules: `@every("5m")` and `@cron("0 3 * * *")` functions, run once per period across
every process that shares the database (docs/reference/language.md, "Jobs and schedules").

Each scheduled function has a row in svc_schedules: when it is next due and who holds its
lease. Every serving process runs one `ScheduleRunner`; when a run is due, each tries to take
it with one conditional UPDATE (due, and no live lease), so exactly one process wins the run;
the winner sets the next due time in the same statement and holds the lease until the run
ends (or its deadline and a grace pass, if the process dies), so a run never overlaps the one
before. Runs missed while every process was down, or while a long run held the lease, are
not caught up one by one: the function runs once, then keeps its period. Cron expressions are
read in UTC by croniter.
"""

from __future__ import annotations

import asyncio
import time

from svc.rules.contract import Schedule, TriggerKind
from svc.runtime.background import job_store as store
from svc.runtime.observability import serverlog
from svc.rules.settings import JobSettings
from svc.runtime.db.base import Db
from svc.runtime.background.jobs import DATABASE_PAUSE_SECONDS, run_once, runner_id
from svc.runtime.observability.serverlog import ServerLog
from svc.runtime.lib.support import SvcError
from svc.runtime.services import current as current_services

#: How often a runner looks whether a run is due (and so how late a run may start).
TICK_SECONDS = 0.25


def spec_of(schedule: Schedule) -> str:
    """What the row remembers of the attribute, so a changed one starts counting anew:
    `every 300000ms` or `cron 0 3 * * *` (the text rows of 0.3 hold, so keep it)."""
    what = f"{schedule.every_ms}ms" if schedule.kind is TriggerKind.EVERY else schedule.cron
    return f"{schedule.kind.value} {what}"


def next_run_ms(schedule: Schedule, after_ms: int) -> int:
    """The first due time after `after_ms`: one period later, or the cron expression's next
    match (UTC)."""
    if schedule.kind is TriggerKind.EVERY:
        return after_ms + schedule.every_ms
    from croniter import croniter  # only programs with @cron pay for the import

    return int(croniter(schedule.cron, after_ms / 1000).get_next(float) * 1000)


class ScheduleRunner:
    """Takes and runs this program's scheduled functions in one serving process."""

    def __init__(self, db: Db, schedules: list[Schedule], log: ServerLog,
                 timings: JobSettings = JobSettings()) -> None:
        self.db = db
        self.timings = timings  # how long its leases outlive a run's deadline
        self.schedules = {s.name: s for s in schedules}
        self.log = log
        self.runner = runner_id()
        self.running: dict[str, asyncio.Task] = {}
        self.stopping = asyncio.Event()
        self.loop_task: asyncio.Task | None = None

    async def register(self) -> None | SvcError:
        """Give each scheduled function its row (a new one is first due one period from now)."""
        now = store.now_ms()
        for schedule in self.schedules.values():
            made = await store.register_schedule(self.db, schedule.name, spec_of(schedule),
                                                 next_run_ms(schedule, now))
            if isinstance(made, SvcError):
                return made
        return None

    def start(self) -> None:
        self.loop_task = asyncio.get_running_loop().create_task(self.tick_loop())

    async def tick_loop(self) -> None:
        while not self.stopping.is_set():
            pause = TICK_SECONDS
            rows = await store.schedule_times(self.db)
            if isinstance(rows, SvcError):
                self.log.error(f"schedules: cannot read svc_schedules: {rows.message}")
                pause = DATABASE_PAUSE_SECONDS
            else:
                now = store.now_ms()
                for row in rows:
                    if row.next_run_at <= now and row.name in self.schedules \
                            and row.name not in self.running:
                        await self.try_to_run(self.schedules[row.name])
            try:
                await asyncio.wait_for(self.stopping.wait(), pause)
            except asyncio.TimeoutError:
                pass

    async def try_to_run(self, schedule: Schedule) -> None:
        now = store.now_ms()
        lease_end = now + schedule.deadline_ms + self.timings.lease_grace_ms
        taken = await store.take_schedule(self.db, schedule.name, self.runner, lease_end,
                                          next_run_ms(schedule, now))
        if taken == 1:  # this process won the run; any other process's UPDATE changed nothing
            task = asyncio.get_running_loop().create_task(self.run(schedule))
            self.running[schedule.name] = task
            task.add_done_callback(lambda _: self.running.pop(schedule.name, None))
        elif isinstance(taken, SvcError):
            self.log.error(f"schedules: cannot take {schedule.name}: {taken.message}")

    async def run(self, schedule: Schedule) -> None:
        started = time.perf_counter()
        try:
            run = run_once(schedule.handler(self.db), schedule.deadline_ms / 1000)
            tracer = current_services().tracer
            why = await (run if tracer is None else tracer.background(
                schedule.name, "schedule", {"svc.schedule.name": schedule.name}, run))
        except asyncio.CancelledError:  # stopped by the server's shutdown: the lease still goes
            why = "the server stopped before it finished"
        took = (time.perf_counter() - started) * 1000
        if why is None:
            serverlog.standalone(self.log, "info",
                                 f"schedule {schedule.name} ran in {took:.0f} ms")
        else:
            self.log.error(f"schedule {schedule.name} failed after {took:.0f} ms ({why})")
        released = await store.release_schedule(self.db, schedule.name, self.runner)
        if isinstance(released, SvcError):
            self.log.error(f"schedules: cannot release {schedule.name} ({released.message}); "
                           "its lease will run out")

    async def stop(self, grace: float) -> None:
        """Start no more runs; let running ones finish within `grace` seconds, then cancel them
        (each still releases its lease)."""
        self.stopping.set()
        if self.loop_task is not None:
            await asyncio.gather(self.loop_task, return_exceptions=True)
        tasks = list(self.running.values())
        if tasks:
            _, late = await asyncio.wait(tasks, timeout=grace)
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)
