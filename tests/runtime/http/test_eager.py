"""eager.start: a handler's first step inline; if it suspends, its Resumer steps it on (no Task)."""

from __future__ import annotations

import asyncio
import contextvars

import pytest

from svc.runtime.http import eager

# Its subject is the compiled request path: `make test` runs it again on the pure-Python modules.
pytestmark = pytest.mark.compiled_path


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


async def _started(coro):
    """eager.start from a plain loop callback (as data_received), for a handler that suspends.

    Returns its Resumer once the first step ran, and a future that `on_done` sets to the
    Resumer when the handler ends.
    """
    loop = asyncio.get_running_loop()
    ended = loop.create_future()
    holder = []

    def callback():
        finished, resumer = eager.start(loop, coro)
        assert not finished, "the handler was meant to suspend"
        resumer.on_done(ended.set_result)
        holder.append(resumer)
    loop.call_soon(callback)
    await asyncio.sleep(0)
    return holder[0], ended


def test_finished_first_step_needs_no_task():
    async def handler():
        return 42
    assert _outside_any_task(lambda loop: eager.start(loop, handler())) == (True, 42)


def test_suspending_handler_continues_without_a_task():
    seen = []

    async def handler():
        first = asyncio.current_task()
        await asyncio.sleep(0.01)
        value = await asyncio.sleep(0, result=5)
        seen.append((first, asyncio.current_task(), len(asyncio.all_tasks())))
        return value * 2

    async def main():
        resumer, ended = await _started(handler())
        assert isinstance(resumer, eager.Resumer) and not resumer.done()
        assert await ended is resumer
        return resumer

    resumer = asyncio.run(main())
    assert resumer.result() == 10 and resumer.exception() is None
    [(first, later, tasks)] = seen
    assert first is later is resumer  # one current task for every step, the inline one too
    assert tasks == 1  # only main(): no Task was made for the handler


def test_exceptions_of_the_first_step_propagate():
    async def handler():
        raise ValueError("boom")
    with pytest.raises(ValueError):
        _outside_any_task(lambda loop: eager.start(loop, handler()))


def test_task_group_and_timeout_in_the_first_step():
    async def handler():
        async with asyncio.TaskGroup() as group:
            child = group.create_task(asyncio.sleep(0.01, result=3))
        try:
            async with asyncio.timeout(0.01):
                await asyncio.sleep(1)
        except TimeoutError:
            return child.result()

    async def main():
        resumer, ended = await _started(handler())
        return (await ended).result()
    assert asyncio.run(main()) == 3


# --- the Resumer: what a Task did for a handler that suspends ----------------------------------


def test_an_exception_after_a_suspension_ends_the_handler_with_it():
    async def handler():
        await asyncio.sleep(0)
        raise ValueError("late")

    async def main():
        resumer, ended = await _started(handler())
        await ended
        return resumer
    resumer = asyncio.run(main())
    assert resumer.done() and not resumer.cancelled()
    assert isinstance(resumer.exception(), ValueError)
    with pytest.raises(ValueError, match="late"):
        resumer.result()


def test_cancel_reaches_the_handler_at_the_future_it_awaits():
    seen = []

    async def handler():
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError as exc:
            seen.append(exc.args)
            raise

    async def main():
        resumer, ended = await _started(handler())
        assert resumer.cancel("deadline") and resumer.cancelling() == 1
        await ended
        assert not resumer.cancel()  # over: nothing left to cancel
        return resumer
    resumer = asyncio.run(main())
    assert seen == [("deadline",)] and resumer.cancelled()
    with pytest.raises(asyncio.CancelledError):
        resumer.result()
    with pytest.raises(asyncio.CancelledError):
        resumer.exception()


def test_a_handler_that_swallows_its_cancellation_finishes_with_its_value():
    async def handler():
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            return "kept"

    async def main():
        resumer, ended = await _started(handler())
        resumer.cancel()
        await ended
        return resumer
    resumer = asyncio.run(main())
    assert resumer.result() == "kept" and resumer.cancelling() == 1


def test_cancel_with_no_future_to_cancel_is_thrown_at_the_next_step():
    seen = []

    async def cancels_itself():
        await asyncio.sleep(0)
        asyncio.current_task().cancel()  # no future awaited during a step: must_cancel
        try:
            await asyncio.sleep(10)  # cancelled as soon as it is awaited
        except asyncio.CancelledError:
            seen.append("at the future")
            raise

    async def bare_yield():
        try:
            await asyncio.sleep(0)  # a bare yield: no future to cancel
        except asyncio.CancelledError:
            seen.append("at the next step")
            raise

    async def main():
        first, first_ended = await _started(cancels_itself())
        await first_ended
        second, second_ended = await _started(bare_yield())
        second.cancel()
        await second_ended
        return first, second
    first, second = asyncio.run(main())
    assert seen == ["at the future", "at the next step"]
    assert first.cancelled() and second.cancelled()


def test_a_cancel_during_the_last_step_cancels_the_result():
    async def handler():
        await asyncio.sleep(0)
        asyncio.current_task().cancel()
        return "too late"

    async def main():
        resumer, ended = await _started(handler())
        await ended
        return resumer
    assert asyncio.run(main()).cancelled()  # as a Task: cancel() before the end wins


def test_task_group_and_timeout_after_a_suspension():
    async def handler():
        await asyncio.sleep(0)
        async with asyncio.TaskGroup() as group:
            child = group.create_task(asyncio.sleep(0.01, result=3))
        try:
            async with asyncio.timeout(0.01):
                await asyncio.sleep(1)
        except TimeoutError:
            return child.result(), asyncio.current_task().cancelling()

    async def main():
        resumer, ended = await _started(handler())
        return (await ended).result()
    assert asyncio.run(main()) == (3, 0)  # the timeout's cancel was taken back (uncancel)


def test_a_failing_child_of_a_task_group_cancels_the_handler_and_its_siblings():
    seen = []

    async def sibling():
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            seen.append("sibling cancelled")
            raise

    async def failing():
        await asyncio.sleep(0.01)
        raise ValueError("child")

    async def handler():
        await asyncio.sleep(0)
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(sibling())
                group.create_task(failing())
                await asyncio.sleep(10)  # cancelled by the group when the child fails
        except ExceptionGroup as group_error:
            return [type(e).__name__ for e in group_error.exceptions], \
                asyncio.current_task().cancelling()

    async def main():
        resumer, ended = await _started(handler())
        return (await ended).result()
    assert asyncio.run(main()) == (["ValueError"], 0)
    assert seen == ["sibling cancelled"]


def test_every_step_runs_in_the_request_context_and_the_end_in_the_caller_s():
    var = contextvars.ContextVar("probe", default="unset")
    seen = []

    async def handler():
        seen.append(("first step", var.get()))
        await asyncio.sleep(0)
        seen.append(("second step", var.get()))
        var.set("set by the handler")
        await asyncio.sleep(0.001)
        seen.append(("third step", var.get()))

    async def main():
        loop = asyncio.get_running_loop()
        ended = loop.create_future()

        def callback():
            token = var.set("request")  # as the server sets the request deadline
            try:
                _finished, resumer = eager.start(loop, handler())
            finally:
                var.reset(token)
            resumer.on_done(lambda _r: ended.set_result(var.get()))
        loop.call_soon(callback)
        seen.append(("on_done", await ended))
        seen.append(("outside", var.get()))
    asyncio.run(main())
    assert seen == [("first step", "request"), ("second step", "request"),
                    ("third step", "set by the handler"), ("on_done", "unset"),
                    ("outside", "unset")]


def test_done_callbacks_are_scheduled_with_the_resumer_however_it_ends():
    calls = []

    def watching(outcome):
        async def handler():
            await asyncio.sleep(0)
            asyncio.current_task().add_done_callback(lambda r: calls.append((outcome, r)))
            await asyncio.sleep(0)
            if outcome == "failed":
                raise ValueError(outcome)
            if outcome == "cancelled":
                await asyncio.sleep(10)
            return outcome
        return handler()

    async def main():
        resumers = []
        for outcome in ("finished", "failed", "cancelled"):
            resumer, ended = await _started(watching(outcome))
            await asyncio.sleep(0.001)
            if outcome == "cancelled":
                resumer.cancel()
            await ended
            await asyncio.sleep(0)
            resumers.append(resumer)
        return resumers
    resumers = asyncio.run(main())
    assert calls == list(zip(("finished", "failed", "cancelled"), resumers))


def test_a_done_callback_added_in_a_first_step_that_finishes_is_still_called():
    calls = []

    async def handler():
        asyncio.current_task().add_done_callback(calls.append)
        return 1

    async def main():
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        loop.call_soon(lambda: done.set_result(eager.start(loop, handler())))
        assert await done == (True, 1)
        await asyncio.sleep(0)
    asyncio.run(main())
    [resumer] = calls
    assert resumer.result() == 1


def test_wrong_yields_are_thrown_back_into_the_handler_as_a_task_does():
    seen = []

    class BadAwaitable:
        def __await__(self):
            yield "not a future"

    class OtherLoopFuture:
        def __await__(self):
            other = asyncio.new_event_loop()
            future = other.create_future()
            other.close()
            future._asyncio_future_blocking = True
            yield future

    async def handler(awaitable):
        await asyncio.sleep(0)
        try:
            await awaitable
        except RuntimeError as exc:
            seen.append(str(exc))
        return len(seen)

    async def main():
        for awaitable in (BadAwaitable(), OtherLoopFuture()):
            _resumer, ended = await _started(handler(awaitable))
            await ended
    asyncio.run(main())
    assert len(seen) == 2 and "not a future" in seen[0] and "wrongly" in seen[1]


def test_a_first_step_that_was_cancelled_or_watched_does_not_lend_its_resumer():
    async def touches():
        asyncio.current_task().cancel()
        return asyncio.current_task()

    async def cancels_and_takes_it_back():
        asyncio.current_task().cancel()
        asyncio.current_task().uncancel()
        return asyncio.current_task()

    async def plain():
        return asyncio.current_task()

    async def main():
        loop = asyncio.get_running_loop()
        out = loop.create_future()

        def callback():
            touched = eager.start(loop, touches())[1]
            first, second = eager.start(loop, plain())[1], eager.start(loop, plain())[1]
            taken_back = eager.start(loop, cancels_and_takes_it_back())[1]
            third = eager.start(loop, plain())[1]
            out.set_result((touched, first, second, taken_back, third))
        loop.call_soon(callback)
        return await out
    touched, first, second, taken_back, third = asyncio.run(main())
    assert first is second  # an untouched one is reused for the next request
    assert touched is not first
    assert taken_back is second and third is not taken_back  # its pending cancel stays with it


def test_a_done_callback_added_in_the_first_step_is_called_when_the_resumed_handler_ends():
    calls = []

    async def handler():  # as db_begin watching its owner before the first suspension
        asyncio.current_task().add_done_callback(calls.append)
        await asyncio.sleep(0.001)
        return 2

    async def main():
        resumer, ended = await _started(handler())
        await ended
        await asyncio.sleep(0)
        return resumer
    resumer = asyncio.run(main())
    assert calls == [resumer] and resumer.result() == 2
