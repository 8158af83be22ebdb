"""eager.start: a handler's first step inline, a Task only when it suspends."""

from __future__ import annotations

import asyncio

import pytest

from svc.runtime import eager


def _outside_any_task(fn):
    """Run fn(loop) from a plain loop callback, as the server's data_received runs."""
    async def main():
        loop = asyncio.get_running_loop()
        done = loop.create_future()

        def callback():
            try:
                done.set_result(fn(loop))
            except Exception as exc:
                done.set_exception(exc)
        loop.call_soon(callback)
        value = await done
        return await value if asyncio.isfuture(value) else value
    return asyncio.run(main())


def test_finished_first_step_needs_no_task():
    async def handler():
        return 42
    assert _outside_any_task(lambda loop: eager.start(loop, handler())) == (True, 42)


def test_suspending_handler_continues_in_a_task():
    async def handler():
        assert asyncio.current_task() is not None
        await asyncio.sleep(0.01)
        value = await asyncio.sleep(0, result=5)
        return value * 2

    def go(loop):
        finished, task = eager.start(loop, handler())
        assert not finished and isinstance(task, asyncio.Task)
        return task
    assert _outside_any_task(go) == 10


def test_exceptions_of_the_first_step_propagate():
    async def handler():
        raise ValueError("boom")
    with pytest.raises(ValueError):
        _outside_any_task(lambda loop: eager.start(loop, handler()))


def test_cancelling_the_task_reaches_the_handler():
    seen = []

    async def handler():
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    async def main():
        loop = asyncio.get_running_loop()
        holder = loop.create_future()
        loop.call_soon(lambda: holder.set_result(eager.start(loop, handler())[1]))
        task = await holder
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    asyncio.run(main())
    assert seen == ["cancelled"]


def test_task_group_and_timeout_in_the_first_step():
    async def handler():
        async with asyncio.TaskGroup() as group:
            child = group.create_task(asyncio.sleep(0.01, result=3))
        try:
            async with asyncio.timeout(0.01):
                await asyncio.sleep(1)
        except TimeoutError:
            return child.result()

    def go(loop):
        return eager.start(loop, handler())[1]
    assert _outside_any_task(go) == 3


def test_never_suspends_tells_await_free_handlers_apart():
    async def computed():
        return {"id": 1}

    async def awaits():
        await asyncio.sleep(0)
        return 2

    async def with_block():
        async with asyncio.timeout(1):
            return 3

    def plain():
        return 4

    assert eager.never_suspends(computed)
    assert not eager.never_suspends(awaits)
    assert not eager.never_suspends(with_block)
    assert not eager.never_suspends(plain)
    assert eager.run_to_end(computed()) == {"id": 1}


def test_run_to_end_propagates_the_handler_exception():
    async def failing():
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        eager.run_to_end(failing())
