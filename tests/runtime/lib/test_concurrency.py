"""The runtime test functions: counts on success, and each failure path."""

from __future__ import annotations

import asyncio

import pytest

from svc.runtime.lib import concurrency as cc
from svc.runtime.lib.support import SvcError

try:
    import uvloop
except ImportError:  # pragma: no cover - Windows
    uvloop = None

DEMOS_WITH_N = [cc.task_demo, cc.scope_demo, cc.actor_demo, cc.actor_pair_demo, cc.queue_demo]


def run(coro, limit: float = 10.0):
    """Run on the loop svc programs use; fail (not hang) on a deadlock; check no task leaks."""
    async def guarded():
        result = await asyncio.wait_for(coro, limit)
        await asyncio.sleep(0)  # let cancelled helpers finish
        leaked = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        assert not leaked, leaked
        return result
    return uvloop.run(guarded()) if uvloop is not None else asyncio.run(guarded())


def assert_error(value, kind: str, *words: str) -> None:
    assert isinstance(value, SvcError) and value.kind == kind, value
    for word in words:
        assert word in value.message, value.message


@pytest.mark.parametrize("demo", DEMOS_WITH_N)
@pytest.mark.parametrize("n", [0, 1, 63, 64, 65, 1000])
def test_demo_counts(demo, n):
    assert run(demo(n)) == n


@pytest.mark.parametrize("demo", DEMOS_WITH_N)
@pytest.mark.parametrize("n", [-1, -(2**63), cc.MAX_N + 1, True])
def test_bad_n_is_invalid(demo, n):
    assert_error(run(demo(n)), "invalid", "n must be")


def test_cancelling_a_demo_leaves_no_tasks_behind():
    async def main():
        for demo in DEMOS_WITH_N:
            task = asyncio.ensure_future(demo(cc.MAX_N))
            for _ in range(2):  # two loop turns: every demo is under way, none is done
                await asyncio.sleep(0)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        await asyncio.sleep(0)

    run(main())


# --- tasks and scopes -----------------------------------------------------------------------

def test_task_demo_needs_every_task_running_at_once():
    # Each task waits at a barrier for the last one to start, so a runtime that ran tasks
    # one after another would deadlock here (and hit the time limit).
    assert run(cc.task_demo(cc.MAX_N)) == cc.MAX_N


def test_scope_joins_all_children():
    report = run(cc.run_scope(50))
    assert (report.started, report.completed, report.cancelled, report.error) == (50, 50, 0, None)


@pytest.mark.parametrize("n, fail_at", [(1, 0), (10, 0), (10, 3), (10, 9)])
def test_failing_child_cancels_its_siblings(n, fail_at):
    report = run(cc.run_scope(n, fail_at))
    assert report.started == n
    assert report.completed == 0
    assert report.cancelled == n - 1
    assert_error(report.error, "internal", f"child {fail_at} failed", f"cancelled {n - 1}")
    assert_error(run(cc.scope_demo(n, fail_at=fail_at)), "internal", f"child {fail_at} failed")


# --- actors ---------------------------------------------------------------------------------

def test_senders_wait_while_the_mailbox_is_full():
    async def main():
        counter = cc.counter_actor()
        sizes = []
        for _ in range(500):
            await counter.send(("add", 1))
            sizes.append(counter.mailbox.qsize())
        count = await counter.ask(("get",))
        await counter.stop()
        return counter, max(sizes), count

    counter, biggest, count = run(main())
    assert counter.mailbox.maxsize == cc.MAILBOX_SIZE == 64
    assert biggest == 64
    assert counter.sender_waits > 0
    assert count == 500


@pytest.mark.parametrize("demo", [cc.actor_demo, cc.actor_pair_demo])
@pytest.mark.parametrize("crash_at", [1, 50, 999])
def test_crashed_actor_answers_an_error_and_never_strands_senders(demo, crash_at):
    assert_error(run(demo(1000, crash_at=crash_at)), "internal",
                 f"actor stopped: counter crashed at {crash_at}")


def test_actor_past_its_crash_point_is_unaffected():
    assert run(cc.actor_demo(10, crash_at=11)) == 10


def test_forwarding_pair_keeps_message_order():
    async def main():
        seen = []

        async def record(message):
            seen.append(message)

        sink = cc.Actor(record)
        forwarder = cc.forwarding_actor(sink)
        for i in range(300):
            await forwarder.send(("item", i))
        await forwarder.stop()
        await sink.stop()
        return seen

    assert run(main()) == [("item", i) for i in range(300)]


# --- supervisor -----------------------------------------------------------------------------

@pytest.mark.parametrize("crashes", [0, 1, 2, cc.MAX_RESTARTS])
def test_supervisor_restarts_a_crashing_worker(crashes):
    assert run(cc.supervisor_demo(crashes=crashes)) == crashes


def test_supervisor_demo_default():
    assert run(cc.supervisor_demo()) == 2


def test_supervisor_restarts_one_for_one():
    async def main():
        supervisor = cc.Supervisor()
        results = await supervisor.run({"a": cc._worker(0), "b": cc._worker(3), "c": cc._worker(0)})
        return supervisor, results

    supervisor, results = run(main())
    assert supervisor.starts == {"a": 1, "b": 4, "c": 1}
    assert results == {"a": 0, "b": 3, "c": 0}


@pytest.mark.parametrize("crashes", [cc.MAX_RESTARTS + 1, 1000])
def test_supervisor_gives_up_after_too_many_restarts_in_a_second(crashes):
    assert_error(run(cc.supervisor_demo(crashes=crashes)), "internal",
                 "supervisor gave up", f"{cc.MAX_RESTARTS + 1} crashes within 1 s")


def test_supervisor_giving_up_cancels_the_other_workers():
    async def main():
        never_done = asyncio.Event()

        async def steady(attempt):
            await never_done.wait()

        supervisor = cc.Supervisor()
        return await supervisor.run({"steady": steady, "bad": cc._worker(100)})

    assert_error(run(main()), "internal", "gave up")  # and run() checks nothing leaked


def test_restarts_spread_beyond_the_period_do_not_count_together():
    async def main():
        # Crashes are at least 0.1 s apart, the period is 0.05 s: never two in one period.
        spread = cc.Supervisor(max_restarts=1, period=0.05)
        ok = await spread.run({"w": cc._worker(3, delay=0.1)})
        strict = cc.Supervisor(max_restarts=1, period=60)
        gave_up = await strict.run({"w": cc._worker(3, delay=0.1)})
        return spread.restarts, ok, gave_up

    restarts, ok, gave_up = run(main())
    assert (restarts, ok) == (3, {"w": 3})
    assert_error(gave_up, "internal", "2 crashes within 60 s")


# --- job queue ------------------------------------------------------------------------------

def test_always_failing_jobs_end_as_dead_letters():
    async def main():
        async def handle(job, attempt):
            if job % 4 == 0:
                raise cc.DemoFailure(f"job {job} is poison")

        queue = cc.JobQueue(handle)
        for job in range(40):
            await queue.submit(job)
        await queue.drain()
        queue.stop()
        return queue

    queue = run(main())
    assert sorted(job for job, _ in queue.dead_letters) == list(range(0, 40, 4))
    assert queue.dead_letters[0][1].startswith("job ")
    assert queue.completed == 30
    assert queue.tries == 30 + 10 * cc.MAX_ATTEMPTS
    assert run(cc.queue_demo(40, fail=lambda job, attempt: job % 4 == 0)) == 30


def test_failing_jobs_are_retried_with_backoff():
    async def main():
        attempts_at: dict[int, list[float]] = {}
        loop = asyncio.get_running_loop()

        async def handle(job, attempt):
            attempts_at.setdefault(job, []).append(loop.time())
            if attempt < 3:
                raise ValueError("not yet")

        queue = cc.JobQueue(handle, backoff=0.05)
        await queue.submit("j")
        await queue.drain()
        queue.stop()
        return queue, attempts_at["j"]

    queue, times = run(main())
    assert (queue.completed, queue.dead_letters, queue.tries) == (1, [], 3)
    assert times[1] - times[0] >= 0.05 * 0.9
    assert times[2] - times[1] >= 0.1 * 0.9  # doubled


def test_transient_failures_in_the_default_demo_are_retried():
    assert run(cc.queue_demo(100)) == 100  # jobs 3, 13, ... fail once and succeed on retry


def test_queue_runs_at_most_eight_workers_and_bounds_its_intake():
    async def main():
        release = asyncio.Event()

        async def handle(job, attempt):
            await release.wait()

        queue = cc.JobQueue(handle)
        submitted = 0

        async def producer():
            nonlocal submitted
            for job in range(200):
                await queue.submit(job)
                submitted += 1

        task = asyncio.ensure_future(producer())
        await asyncio.sleep(0.05)
        stuck = (submitted, queue.active, queue.intake.qsize(), task.done())
        release.set()
        await task
        await queue.drain()
        queue.stop()
        return stuck, queue

    (submitted, active, queued, producer_done), queue = run(main())
    assert active == cc.MAX_WORKERS == 8
    assert queued == cc.MAILBOX_SIZE == 64
    assert submitted == 8 + 64 and not producer_done  # the producer waits for room
    assert queue.max_active == 8
    assert queue.completed == 200
