"""The runtime test functions (docs/reference/builtins.md): tasks, scopes, actors, a supervisor,
a job queue.

No svc syntax declares tasks or actors; these builtins exercise the runtime's concurrency on
the one event loop. Each is `async`, returns an i64 count (or an `SvcError`) and finishes
quickly and deterministically: no wall-clock sleeps beyond a few milliseconds of backoff.

What each returns:

- `task_demo(n)` → n: n tasks are all started (each waits at a barrier until the last one has
  started), then joined; the count is the tasks that finished.
- `scope_demo(n)` → n: n children in a structured scope, joined before it returns. When one
  child fails the scope cancels the others and returns `SvcError("internal", ...)`.
- `actor_demo(n)` → n: n `add 1` messages to a counter actor with a 64-message mailbox (a
  sender waits while it is full), then a request for the count.
- `actor_pair_demo(n)` → n: the same n messages through a forwarding actor into a counter;
  the count the counter ends with.
- `supervisor_demo()` → 2: a one-for-one supervisor of three workers, one of which crashes
  twice before succeeding; the count is the restarts made. More than `MAX_RESTARTS` restarts
  within `RESTART_PERIOD` seconds make it give up with `SvcError("internal", ...)`.
- `queue_demo(n)` → n: n jobs through a job queue (64-slot intake, at most 8 workers, up to 3
  attempts with backoff, then a dead letter); every tenth job fails once and is retried. The
  count is the jobs completed (dead letters are not counted).

`n < 0` (or above `MAX_N`, to keep a handler from exhausting memory) is `SvcError("invalid")`.
Keyword-only parameters (`fail_at`, `crash_at`, `crashes`, `fail`) are hooks for the Python
tests to reach the failure paths; svc programs cannot pass them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Generic, TypeVar, cast

from svc.runtime.lib.support import SvcError

Job = TypeVar("Job")

#: Largest n any demo accepts.
MAX_N = 10_000
#: Mailbox size of every actor and intake size of the job queue.
MAILBOX_SIZE = 64
#: Supervisor intensity: more restarts than this within the period and it gives up.
MAX_RESTARTS = 3
RESTART_PERIOD = 1.0
#: Job queue limits.
MAX_WORKERS = 8
MAX_ATTEMPTS = 3
BACKOFF_SECONDS = 0.001


def _check_n(n: int) -> SvcError | None:
    if type(n) is not int or n < 0:
        return SvcError("invalid", f"n must be a non-negative integer, got {n!r}")
    if n > MAX_N:
        return SvcError("invalid", f"n must be at most {MAX_N}, got {n}")
    return None


class DemoFailure(Exception):
    """A failure injected by a demo (a crashing child, worker or job)."""


# --- tasks ----------------------------------------------------------------------------------

async def task_demo(n: int) -> int | SvcError:
    """Start n tasks, all of which must be running before any may finish; join them all."""
    if error := _check_n(n):
        return error
    all_started = asyncio.Event()
    started = 0

    async def work(i: int) -> int:
        nonlocal started
        started += 1
        if started == n:
            all_started.set()
        await all_started.wait()
        return 1

    tasks = [asyncio.create_task(work(i)) for i in range(n)]
    return sum(await asyncio.gather(*tasks))


# --- structured scope -----------------------------------------------------------------------

class ScopeReport:
    """What happened inside one scope: children started, completed and cancelled."""

    __slots__ = ("started", "completed", "cancelled", "error")

    def __init__(self) -> None:
        self.started = self.completed = self.cancelled = 0
        self.error: SvcError | None = None


async def run_scope(n: int, fail_at: int | None = None) -> ScopeReport:
    """n children in an `asyncio.TaskGroup`; child `fail_at` fails as soon as it starts.

    The children wait until the scope body has started them all, so a failure always finds
    its siblings running and the cancellation is observable.
    """
    report = ScopeReport()
    go = asyncio.Event()

    async def child(i: int) -> None:
        report.started += 1
        if i == fail_at:
            raise DemoFailure(f"scope child {i} failed")
        try:
            await go.wait()
            await asyncio.sleep(0)
        except asyncio.CancelledError:
            report.cancelled += 1
            raise
        report.completed += 1

    try:
        async with asyncio.TaskGroup() as scope:
            for i in range(n):
                scope.create_task(child(i))
            await asyncio.sleep(0)  # every child takes its first step
            go.set()
    except* Exception as failures:
        first = failures.exceptions[0]
        report.error = SvcError(
            "internal", f"{first}; the scope cancelled {report.cancelled} other children")
    return report


async def scope_demo(n: int, *, fail_at: int | None = None) -> int | SvcError:
    """A scope of n children: the number completed, or the error that ended the scope."""
    if error := _check_n(n):
        return error
    report = await run_scope(n, fail_at)
    return report.error or report.completed


# --- actors ---------------------------------------------------------------------------------

_STOP = object()


class Actor:
    """A task that owns its state and handles one message at a time from a bounded mailbox.

    `send` waits while the mailbox is full (backpressure); `ask` also waits for the reply.
    A handler that raises an Exception stops the actor: later asks get `SvcError("internal")`,
    and the mailbox keeps draining so no sender is left waiting forever.
    """

    def __init__(self, handle: Callable[[object], Awaitable[object]],
                 mailbox_size: int = MAILBOX_SIZE) -> None:
        self._handle = handle
        self.mailbox: asyncio.Queue = asyncio.Queue(mailbox_size)
        self.failure: SvcError | None = None
        self.sender_waits = 0
        self._task = asyncio.create_task(self._run())

    async def send(self, message: object) -> None:
        if self.mailbox.full():
            self.sender_waits += 1
        await self.mailbox.put((message, None))

    async def ask(self, message: object) -> object:
        reply = asyncio.get_running_loop().create_future()
        if self.mailbox.full():
            self.sender_waits += 1
        await self.mailbox.put((message, reply))
        return await reply

    async def stop(self) -> None:
        """Handle what is already in the mailbox, then end the actor's task."""
        if not self._task.done():
            await self.mailbox.put((_STOP, None))
            await self._task

    def kill(self) -> None:
        """End the actor at once (a demo that was cancelled must not leave tasks behind)."""
        self._task.cancel()

    async def _run(self) -> None:
        while True:
            message, reply = await self.mailbox.get()
            if message is _STOP:
                return
            result: object = self.failure
            if result is None:
                try:
                    result = await self._handle(message)
                except Exception as exc:  # a crash stops this actor, not the program
                    result = self.failure = SvcError("internal", f"actor stopped: {exc}")
            if reply is not None and not reply.done():
                reply.set_result(result)


def counter_actor(crash_at: int | None = None) -> Actor:
    """An actor holding a count: `("add", k)` adds, `("get",)` replies with the count."""
    count = 0

    async def handle(message):
        nonlocal count
        if message[0] == "add":
            count += message[1]
            if count == crash_at:
                raise DemoFailure(f"counter crashed at {count}")
            return None
        return count

    return Actor(handle)


def forwarding_actor(target: Actor) -> Actor:
    """An actor that passes every message on to `target`; `("get",)` asks the target."""

    async def handle(message):
        if message[0] == "get":
            return await target.ask(message)
        await target.send(message)
        return None

    return Actor(handle)


async def actor_demo(n: int, *, crash_at: int | None = None) -> int | SvcError:
    """Send n increments to a counter actor, then ask it for the count."""
    if error := _check_n(n):
        return error
    counter = counter_actor(crash_at)
    try:
        for _ in range(n):
            await counter.send(("add", 1))
        return cast("int | SvcError", await counter.ask(("get",)))  # the count, or its failure
    finally:
        counter.kill()


async def actor_pair_demo(n: int, *, crash_at: int | None = None) -> int | SvcError:
    """Send n increments through a forwarding actor into a counter; the counter's count."""
    if error := _check_n(n):
        return error
    counter = counter_actor(crash_at)
    forwarder = forwarding_actor(counter)
    try:
        for _ in range(n):
            await forwarder.send(("add", 1))
        return cast("int | SvcError", await forwarder.ask(("get",)))  # the counter's answer
    finally:
        forwarder.kill()
        counter.kill()


# --- supervisor -----------------------------------------------------------------------------

#: A supervised child: `factory(attempt)` makes its coroutine, afresh for each restart.
Child = Callable[[int], Coroutine[Any, Any, object]]


class Supervisor:
    """One-for-one supervision: a crashed child is restarted alone; too many restarts within
    `period` seconds (counted over all children) make the supervisor give up.
    """

    def __init__(self, max_restarts: int = MAX_RESTARTS, period: float = RESTART_PERIOD) -> None:
        self.max_restarts = max_restarts
        self.period = period
        self.restarts = 0
        self.starts: dict[str, int] = {}
        self._recent: list[float] = []

    async def run(self, children: dict[str, Child]) -> dict | SvcError:
        """Run every child to completion; a child is `factory(attempt)`. Their results by name."""
        running: dict[asyncio.Task, str] = {}
        results: dict[str, object] = {}
        for name in children:
            running[self._start(name, children[name])] = name
        try:
            while running:
                done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    name = running.pop(task)
                    if task.exception() is None:
                        results[name] = task.result()
                    else:  # any crash (an Exception) is restarted
                        if error := self._note_restart(name):
                            return error
                        running[self._start(name, children[name])] = name
            return results
        finally:
            for task in running:
                task.cancel()
            if running:
                await asyncio.wait(running)

    def _start(self, name: str, factory: Child) -> asyncio.Task:
        attempt = self.starts.get(name, 0)
        self.starts[name] = attempt + 1
        return asyncio.create_task(factory(attempt))

    def _note_restart(self, name: str) -> SvcError | None:
        now = asyncio.get_running_loop().time()
        self._recent = [t for t in self._recent if now - t < self.period] + [now]
        if len(self._recent) > self.max_restarts:
            return SvcError("internal", f"supervisor gave up: {len(self._recent)} crashes within "
                                        f"{self.period:g} s, the last in {name}")
        self.restarts += 1
        return None


def _worker(crashes: int, delay: float = 0.0) -> Callable[[int], Coroutine[Any, Any, int]]:
    """A worker that crashes on its first `crashes` attempts, after `delay` seconds each."""

    async def work(attempt: int) -> int:
        await asyncio.sleep(delay)
        if attempt < crashes:
            raise DemoFailure(f"worker crashed (attempt {attempt + 1})")
        return attempt

    return work


async def supervisor_demo(*, crashes: int = 2) -> int | SvcError:
    """Supervise two steady workers and one that crashes `crashes` times; the restarts made."""
    supervisor = Supervisor()
    outcome = await supervisor.run({"steady-1": _worker(0), "flaky": _worker(crashes),
                                    "steady-2": _worker(0)})
    if isinstance(outcome, SvcError):
        return outcome
    return supervisor.restarts


# --- job queue ------------------------------------------------------------------------------

class JobQueue(Generic[Job]):
    """Jobs through a bounded intake to at most `workers` workers, retried with backoff.

    `submit` waits while the intake is full. A job whose handler raises an Exception is tried
    up to `attempts` times, sleeping `backoff * 2**k` between tries, then becomes a dead letter.
    """

    def __init__(self, handler: Callable[[Job, int], Awaitable[object]],
                 workers: int = MAX_WORKERS, intake: int = MAILBOX_SIZE,
                 attempts: int = MAX_ATTEMPTS, backoff: float = BACKOFF_SECONDS) -> None:
        self._handler = handler
        self._attempts = attempts
        self._backoff = backoff
        self.intake: asyncio.Queue[Job] = asyncio.Queue(intake)
        self.completed = 0
        self.tries = 0
        self.dead_letters: list[tuple[Job, str]] = []
        self.active = self.max_active = 0
        self._workers = [asyncio.create_task(self._work()) for _ in range(workers)]

    async def submit(self, job: Job) -> None:
        await self.intake.put(job)

    async def drain(self) -> None:
        """Wait until every submitted job is done (dead letters included)."""
        await self.intake.join()

    def stop(self) -> None:
        """End the workers; jobs still in the intake are abandoned."""
        for worker in self._workers:
            worker.cancel()

    async def _work(self) -> None:
        while True:
            job = await self.intake.get()
            self.active += 1
            self.max_active = max(self.max_active, self.active)
            try:
                await self._process(job)
            finally:
                self.active -= 1
                self.intake.task_done()

    async def _process(self, job: Job) -> None:
        for attempt in range(1, self._attempts + 1):
            self.tries += 1
            try:
                await self._handler(job, attempt)
            except Exception as exc:  # any failure is retried, then dead-lettered
                if attempt == self._attempts:
                    self.dead_letters.append((job, str(exc)))
                    return
                await asyncio.sleep(self._backoff * 2 ** (attempt - 1))
            else:
                self.completed += 1
                return


def _transient_failures(job: int, attempt: int) -> bool:
    """The default failure pattern: every tenth job fails on its first attempt only."""
    return job % 10 == 3 and attempt == 1


async def queue_demo(n: int, *,
                     fail: Callable[[int, int], bool] = _transient_failures) -> int | SvcError:
    """Push jobs 0..n-1 through a JobQueue; the number completed (not dead-lettered)."""
    if error := _check_n(n):
        return error

    async def handle(job: int, attempt: int) -> None:
        await asyncio.sleep(0)
        if fail(job, attempt):
            raise DemoFailure(f"job {job} failed on attempt {attempt}")

    queue = JobQueue(handle, workers=min(MAX_WORKERS, max(n, 1)))
    try:
        for job in range(n):
            await queue.submit(job)
        await queue.drain()
    finally:
        queue.stop()
    return queue.completed
