"""The `@python` boundary in-process (svc.runtime.lib.python_calls): real event loops, real
threads, the real server connection for the processing limit, calling `function(...)` with
the type annotations code generation passes (support aliases, a Struct like a generated
class, an enum as its `Literal`)."""

from __future__ import annotations

import asyncio
import io
import os
import resource
import sys
import threading
import time

import pytest

from svc.rules.contract import Param, Route
from svc.rules.contract import ParamSource as S
from svc.rules.contract import ResultKind as R
from svc.rules.settings import Settings
from svc.runtime import services
from svc.runtime.http import builtin_routes, responses
from svc.runtime.http.connection import App, Connection
from svc.runtime.http.routing import Router
from svc.runtime.lib import python_calls
from svc.runtime.lib.python_calls import function, python_stub
from svc.runtime.lib.support import (
    T_BOOL, T_BYTES, T_F64, T_I64, T_STR, Dict, List, Literal, Optional, Struct, SvcError,
    SvcFault,
)
from svc.runtime.observability.serverlog import ServerLog
from tests.runtime.lib import python_targets as targets

# It drives the compiled request path (connection, responses, routing): `make test` runs it
# again on the pure-Python modules.
pytestmark = pytest.mark.compiled_path

TARGETS = "tests.runtime.lib.python_targets"
WHERE = "notes.svc:3"


# a stand-in for generated code: `class Note(_svc_Struct, forbid_unknown_fields=True)` with
# the support aliases as annotations, an enum as its members' Literal
State = Literal["draft", "published"]


class Note(Struct, forbid_unknown_fields=True):
    title: T_STR
    state: State
    rank: Optional[T_I64]
    tags: List[T_STR]


def declare(attribute, params, result, kind="internal", name="f"):
    return function(name, TARGETS, attribute, kind, params, result, WHERE)


def run(coro_fn, settings=None, testing=False):
    """`coro_fn()` on a fresh loop with its own services, the pool stopped after."""
    async def main():
        with services.running(services.Services(settings or Settings(), testing=testing)):
            return await coro_fn()
    try:
        return asyncio.run(main())
    finally:
        python_calls.stop_pool()


@pytest.fixture(autouse=True)
def fresh_targets():
    targets.release.clear()
    targets.most_running = 0
    targets.recorded.clear()
    yield
    targets.release.set()  # no test leaves a thread waiting


# --- conversions -------------------------------------------------------------------------------

def test_scalars_go_over_as_they_are_and_come_back_checked():
    view = declare("python_view", (T_I64, T_F64, T_STR, T_BOOL, T_BYTES), List[List[object]])
    echo_bytes = declare("echo", (T_BYTES,), T_BYTES)
    echo_float = declare("echo", (T_I64,), T_F64)

    async def calls():
        return (await view(7, 2.5, "é", True, b"\x00\xff"), await echo_bytes(b"\x01"),
                await echo_float(3))
    seen, data, widened = run(calls)
    assert seen == [["int", 7], ["float", 2.5], ["str", "é"], ["bool", True],
                    ["bytes", b"\x00\xff"]]
    assert data == b"\x01"
    assert widened == 3.0 and isinstance(widened, float)  # an int is an f64, as in JSON


def test_an_optional_maps_none_both_ways():
    echo = declare("echo", (Optional[T_STR],), Optional[T_STR])
    nothing = declare("nothing", (), None)

    async def calls():
        return await echo(None), await echo("x"), await nothing()
    assert run(calls) == (None, "x", None)


def test_lists_maps_classes_and_enums_go_over_as_json_shows_them():
    view = declare("python_view", (List[T_I64], Dict[T_STR, T_F64], Note, State),
                   List[List[object]])
    note = Note("hi", "draft", None, ["a"])

    async def call():
        return await view([1, 2], {"k": 1.5}, note, "published")
    assert run(call) == [
        ["list", [1, 2]], ["dict", {"k": 1.5}],
        ["dict", {"title": "hi", "state": "draft", "rank": None, "tags": ["a"]}],
        ["str", "published"]]


def test_classes_enums_and_collections_come_back_as_svc_values():
    note = declare("echo", (Dict[T_STR, object],), Note)
    notes = declare("echo", (List[object],), Dict[T_STR, List[Optional[Note]]])
    state = declare("echo", (T_STR,), State)
    raw = {"title": "t", "state": "published", "rank": 2, "tags": ["x"]}

    async def calls():
        return await note(raw), await notes({"all": [raw, None]}), await state("draft")
    one, many, member = run(calls)
    assert one == Note("t", "published", 2, ["x"])
    assert many == {"all": [Note("t", "published", 2, ["x"]), None]}
    assert member == "draft"


def test_python_gets_copies_and_cannot_change_an_svc_value():
    append = declare("append_to", (List[T_STR],), List[T_STR])
    items = ["svc"]

    async def call():
        return await append(items)
    assert run(call) == ["svc", "changed by Python"]
    assert items == ["svc"]


@pytest.mark.parametrize("result_type, value, why", [
    (T_STR, 42, "Expected `str`, got `int`"),
    (T_STR, None, "Expected `str`, got `null`"),
    (T_BYTES, "AAE=", "Expected `bytes`, got `str`"),  # no base64 read into text
    (T_I64, True, "Expected `int`, got `bool`"),
    (T_I64, 2 ** 64, "Expected `int` <= 9223372036854775807"),
    (T_I64, "5", "Expected `int`, got `str`"),
    (State, "archived", "Invalid enum value 'archived'"),
    (Note, {"title": "t", "state": "draft", "rank": None, "tags": [], "x": 1},
     "Object contains unknown field `x`"),
    (Note, {"title": "t"}, "Object missing required field `state`"),
    (List[T_I64], [1, "2"], "Expected `int`, got `str` - at `$[1]`"),
    (Dict[T_STR, T_I64], {1: 1}, "Expected `str`, got `int` - at `key` in `$`"),
    (None, "x", "expected None (unit)"),
])
def test_a_result_not_of_its_declared_type_is_internal_naming_the_declaration(
        result_type, value, why):
    echo = declare("echo", (object,), result_type, kind="invalid", name="markdown_to_html")

    async def call():
        return await echo(value)
    err = run(call)
    assert isinstance(err, SvcError) and err.kind == "internal", err
    assert err.message.startswith(f"python function markdown_to_html ({WHERE}, {TARGETS}.echo) "
                                  "returned a value that is not of its declared type: ")
    assert why in err.message and f"(got {type(value).__name__} " in err.message
    assert responses.error_for(err)[:2] == (500, b'{"error":"internal error"}')


def test_a_long_wrong_result_is_shown_cut():
    echo = declare("echo", (object,), T_I64)

    async def call():
        return await echo("y" * 1000)
    err = run(call)
    assert err.message.endswith("(got str '" + "y" * 79 + "...)")


# --- exceptions ------------------------------------------------------------------------------------

def test_an_exception_is_internal_by_default_and_its_detail_goes_to_the_log_only():
    fail = declare("fail", (T_STR,), T_STR, name="render")
    fail_async = declare("fail_async", (T_STR,), T_STR, name="render")

    async def calls():
        return await fail("bad\ninput"), await fail_async("gone")
    blocking, awaited = run(calls)
    assert (blocking.kind, blocking.message) == (
        "internal", f"python function render ({WHERE}, {TARGETS}.fail) raised "
                    "ValueError: bad input")
    assert awaited.message.endswith("raised LookupError: gone")
    status, body, logged = responses.error_for(blocking)
    assert (status, body) == (500, b'{"error":"internal error"}') and "bad input" in logged


def test_an_exception_is_the_declared_kind_with_its_first_line_as_the_message():
    fail = declare("fail", (T_STR,), T_STR, kind="invalid")
    bare = declare("fail_without_text", (), T_STR, kind="unprocessable")

    async def calls():
        return await fail("title too long\nsee the docs"), await fail("z" * 500), await bare()
    first, long, empty = run(calls)
    assert (first.kind, first.message) == ("invalid", "title too long")
    assert responses.error_for(first)[:2] == (400, b'{"error":"title too long"}')
    assert long.message == "z" * 200
    assert (empty.kind, empty.message) == ("unprocessable", "RuntimeError")


def test_system_exit_on_a_thread_is_an_error_not_the_end_of_the_process():
    leave = declare("exit_process", (), None)

    async def call():
        return await leave()
    err = run(call)
    assert err.kind == "internal" and err.message.endswith("raised SystemExit: 3")


# --- at the program's start ----------------------------------------------------------------------

def test_a_missing_module_attribute_or_callable_stops_the_start_with_one_line(tmp_path,
                                                                            monkeypatch):
    (tmp_path / "broken_on_import.py").write_text("raise RuntimeError('no config\\nfound')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    cases = [
        ("no_such_module_here", "x", "importing Python module 'no_such_module_here' failed: "
                                     "ModuleNotFoundError: No module named "
                                     "'no_such_module_here'"),
        ("broken_on_import", "x", "importing Python module 'broken_on_import' failed: "
                                  "RuntimeError: no config found"),
        (TARGETS, "no_such_name", f"Python module '{TARGETS}' has no 'no_such_name'"),
        (TARGETS, "not_callable", f"'{TARGETS}.not_callable' is not callable"),
    ]
    for module, attribute, problem in cases:
        with pytest.raises(SvcFault) as caught:
            function("render", module, attribute, "internal", (), T_STR, WHERE)
        assert str(caught.value) == (f"python function render ({WHERE}, {module}.{attribute}): "
                                     f"{problem}")
    sys.modules.pop("broken_on_import", None)


# --- threads -----------------------------------------------------------------------------------------

def test_a_blocking_function_runs_on_a_thread_while_the_loop_goes_on():
    wait = declare("wait_for_release", (T_F64,), T_STR)
    where = declare("thread_id", (), T_I64)
    where_async = declare("thread_id_async", (), T_I64)

    async def scenario():
        ticks = 0
        call = asyncio.ensure_future(wait(5.0))
        while ticks < 5:  # the loop keeps running while the thread blocks
            await asyncio.sleep(0.01)
            ticks += 1
        assert not call.done()
        targets.release.set()
        loop_thread = threading.get_ident()
        return await call, ticks, await where(), await where_async(), loop_thread
    answer, ticks, pool_thread, awaited_thread, loop_thread = run(scenario)
    assert answer == "released" and ticks == 5
    assert pool_thread != loop_thread and awaited_thread == loop_thread


def test_the_pool_has_the_threads_svc_toml_asks_for():
    wait = declare("wait_for_release", (T_F64,), T_STR)

    async def scenario():
        calls = [asyncio.ensure_future(wait(5.0)) for _ in range(3)]
        await asyncio.sleep(0.1)
        running_then = targets.running
        rows = {"svc_python_threads_busy": []}
        python_calls._gauges(rows)
        targets.release.set()
        return running_then, rows, await asyncio.gather(*calls)
    running_then, rows, answers = run(scenario, Settings(python_threads=2))
    assert running_then == 2 and targets.most_running == 2  # the third waited for a thread
    assert rows == {"svc_python_threads_busy": [[[], 2]]}
    assert answers == ["released"] * 3


def test_the_default_pool_size_is_python_s_own_for_blocking_work():
    async def scenario():
        await declare("echo", (T_I64,), T_I64)(1)
        return python_calls._pool.size
    assert run(scenario) == python_calls.default_threads() >= 5


def test_the_threads_see_the_calling_context():
    view = declare("record", (T_STR,), T_STR)

    async def scenario():
        # services.current() from the thread would be the caller's: the context is copied
        return await view("x"), services.current().settings.python_threads
    assert run(scenario, Settings(python_threads=3)) == ("x", 3)


# --- the processing limit -----------------------------------------------------------------------

class _Transport(asyncio.Transport):
    """What the connection writes, nothing more (tests/runtime/http/test_connection.py has the
    full fake)."""

    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()

    def write(self, data) -> None:
        self.written += data

    def is_closing(self) -> bool:
        return False


def _serve(routes, log, limit):
    """A server connection on the running loop with `routes`, its limit `limit` seconds."""
    loop = asyncio.get_running_loop()
    app = App(loop, Router(tuple(builtin_routes.ROUTES) + routes), None, 10, log, limit)
    app.sweeper.tick = 0.01
    app.sweeper.start()
    conn = Connection(app)
    transport = _Transport()
    conn.connection_made(transport)
    return app, conn, transport


def _statuses(written: bytes) -> list[int]:
    return [int(line.split(b" ")[1]) for line in written.split(b"\r\n")
            if line.startswith(b"HTTP/1.1 ")]


def test_a_hanging_call_past_the_limit_is_504_and_its_thread_is_left_to_finish():
    wait = declare("wait_for_release", (T_F64,), T_STR, name="render")

    async def hang():
        return await wait(10.0)

    def hello():
        return {"hello": "world"}
    routes = (Route("GET", "/hang", hang, (), R.JSON), Route("GET", "/hello", hello, (), R.JSON))
    stream = io.StringIO()
    log = ServerLog(stream=stream)

    async def scenario():
        services.current().log = log
        app, conn, transport = _serve(routes, log, limit=0.1)
        other = Connection(app)
        other_transport = _Transport()
        other.connection_made(other_transport)
        conn.data_received(b"GET /hang HTTP/1.1\r\nHost: x\r\n\r\n")
        await asyncio.sleep(0.05)
        other.data_received(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")  # answered meanwhile
        await asyncio.sleep(0.2)
        statuses = _statuses(bytes(transport.written)), _statuses(bytes(other_transport.written))
        busy = python_calls._pool.busy  # the thread still runs
        log.flush()
        at_the_limit = stream.getvalue()
        targets.release.set()
        await asyncio.sleep(0.05)
        app.sweeper.stop()
        log.flush()
        return statuses, busy, at_the_limit, stream.getvalue()[len(at_the_limit):]
    (hung, other), busy, at_the_limit, later = run(scenario)
    assert hung == [504] and other == [200] and busy == 1
    declared = f"python function render ({WHERE}, {TARGETS}.wait_for_release)"
    assert (f"GET /hang: {declared} was still running when its request gave up; its thread is "
            "left to finish request_id=") in at_the_limit
    assert later.startswith(f"GET /hang: {declared} finished after 0.")
    assert "on the thread its request left request_id=" in later


def test_a_call_still_queued_when_its_request_gives_up_never_runs(capsys):
    wait = declare("wait_for_release", (T_F64,), T_STR)
    record = declare("record", (T_STR,), T_STR, name="save")

    async def scenario():
        first = asyncio.ensure_future(wait(5.0))  # takes the one thread
        await asyncio.sleep(0.05)
        queued = asyncio.ensure_future(record("never"))
        await asyncio.sleep(0.05)
        queued.cancel()  # as a job's deadline or the server's 504 cancels it
        await asyncio.sleep(0)
        targets.release.set()
        return await first, queued.cancelled()
    assert run(scenario, Settings(python_threads=1)) == ("released", True)
    time.sleep(0.05)
    assert targets.recorded == []
    assert (f"python function save ({WHERE}, {TARGETS}.record) was still waiting for a thread "
            "when its request gave up; it will not run") in capsys.readouterr().err


# --- stubs ---------------------------------------------------------------------------------------

def test_a_stub_answers_in_a_test_without_calling_python():
    record = declare("record", (T_STR,), T_STR, name="save")
    record_async = declare("echo_async", (T_STR,), Note, name="load")
    note = Note("t", "draft", None, [])

    async def scenario():
        python_stub("save", "stubbed")
        python_stub("load", SvcError("not_found", "no such note"))
        stubbed = await record("x"), await record_async("y")
        python_stub("load", note)
        loaded = await record_async("z")
        loaded.tags.append("changed")  # the stub hands out copies
        return stubbed, await record_async("z")
    (saved, missing), loaded = run(scenario, testing=True)
    assert saved == "stubbed" and missing == SvcError("not_found", "no such note")
    assert loaded == note and targets.recorded == []


def test_python_stub_outside_a_test_is_a_fault_and_stubs_end_with_their_services():
    record = declare("record", (T_STR,), T_STR, name="save")

    async def outside():
        python_stub("save", "stubbed")
    with pytest.raises(SvcFault, match="python_stub: stubs are for `svcc test` only"):
        run(outside)

    async def stubbed():
        python_stub("save", "stubbed")
        return await record("x")

    async def unstubbed():
        return await record("x")
    assert run(stubbed, testing=True) == "stubbed"
    assert run(unstubbed, testing=True) == "x"  # the next test's services: no stub


# --- the pool's life and memory ---------------------------------------------------------------

def test_stopping_the_pool_ends_its_threads_and_a_later_call_makes_a_new_one():
    echo = declare("echo", (T_I64,), T_I64)

    async def scenario():
        return await echo(1)
    run(scenario, Settings(python_threads=1))  # stops the pool after
    deadline = time.monotonic() + 2
    while any(t.name.startswith("svc-python-") for t in threading.enumerate()):
        assert time.monotonic() < deadline, "the pool's threads did not end"
        time.sleep(0.01)
    assert python_calls._pool is None
    assert run(scenario, Settings(python_threads=4)) == 1


def _rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
@pytest.mark.skipif(os.environ.get("SVC_NATIVE") == "0",
                    reason="the boundary is pure Python either way: once is enough")
def test_100_000_calls_keep_the_memory_they_started_with():
    blocking = declare("echo", (Note,), Note)
    awaited = declare("echo_async", (Note,), Note)
    note = Note("t", "draft", 1, ["a", "b"])

    async def loop(f):
        """100 calls at a time (one at a time, a thread's wake-up is most of a call's time)."""
        for _ in range(10):  # warmed up: the pool, msgspec's caches
            await asyncio.gather(*[f(note) for _ in range(100)])
        before = _rss_bytes()
        for _ in range(1_000):
            answers = await asyncio.gather(*[f(note) for _ in range(100)])
            assert answers[-1].rank == 1
        return _rss_bytes() - before
    assert run(lambda: loop(blocking)) < 20 * 2 ** 20
    assert run(lambda: loop(awaited)) < 20 * 2 ** 20
