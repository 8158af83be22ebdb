"""Python functions that tests/runtime/lib/test_python_calls.py declares as `@python`
functions would be: plain ones (run on the pool's threads) and coroutine functions."""

from __future__ import annotations

import asyncio
import threading

#: Set by a test to let `wait_for_release` calls return.
release = threading.Event()
#: How many `wait_for_release` calls run at once now, and the most seen.
running = 0
most_running = 0
_count_lock = threading.Lock()
#: The calls `record` saw, in order.
recorded: list = []

not_callable = 42


def echo(value):
    return value


def python_view(*values):
    """What the Python side was given: each value's type name and the value."""
    return [[type(value).__name__, value] for value in values]


def append_to(items):
    items.append("changed by Python")
    return items


def fail(message):
    raise ValueError(message)


def fail_without_text():
    raise RuntimeError()


def exit_process():
    raise SystemExit(3)


def thread_id():
    return threading.get_ident()


def record(value):
    recorded.append(value)
    return value


def wait_for_release(seconds):
    """Blocks until `release` is set (at most `seconds`): a hanging library call."""
    global running, most_running
    with _count_lock:
        running += 1
        most_running = max(most_running, running)
    try:
        release.wait(seconds)
    finally:
        with _count_lock:
            running -= 1
    return "released"


def nothing():
    return None


async def echo_async(value):
    await asyncio.sleep(0)
    return value


async def thread_id_async():
    return threading.get_ident()


async def fail_async(message):
    await asyncio.sleep(0)
    raise LookupError(message)
