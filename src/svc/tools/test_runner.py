"""`svcc test`: run the `test_*` functions of a program's `*_test.svc` files.

The test files are compiled WITH the program, on the one pipeline (`Target.tests`): they may
import the program's files and call its handlers as the async functions they are. The
program's `main` is compiled but never called.

Each test runs on its own: the code objects are executed again into a fresh namespace (fresh
module state), on a fresh event loop, with services of its own (svc.runtime.services: its
`http_stub` table, test_request's router, traffic gate and rate-limit buckets), and every
database it opened is closed after it (the lifecycle registry's shutdown and reset). A
failed assertion, an `Err` returned, a run-time fault or running past the time limit fails
the test with the line it happened at, and the run goes on with the next test.

The time limit (why in-process, and how): a test that awaits is stopped by `asyncio.timeout`
at its limit. A test that computes without awaiting never gives the loop a chance, so a
watchdog thread (`svc.process.Watchdog`, the server's kind) raises `TimeLimitExceeded` inside it
shortly after the limit. Running the tests in this process keeps a run fast (one
compile, no interpreter start per test); only a test stuck inside one long C call (a huge
string operation) cannot be interrupted before that call returns.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import sys
import time
import traceback
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

from svc import process
from svc.compiler.front import syntax
from svc.compiler.codegen.generator import global_name
from svc.compiler.diagnostics import Diagnostic, escape_controls
from svc.compiler.front.imports import TEST_SUFFIX
from svc.compiler.program import CheckedProgram
from svc.compiler.svctypes import UNIT, UNKNOWN, ResultOf, format_type
from svc.runtime.lib.support import SvcFault

DEFAULT_TIMEOUT = 10.0
#: How long after its limit a test that never awaits is interrupted by the watchdog thread
#: (a test that awaits is stopped by asyncio at the limit itself).
WATCHDOG_GRACE = 0.25
_SKIPPED_FOLDERS = {"node_modules", "__pycache__"}


@dataclass(frozen=True)
class SvcTest:
    name: str
    file: str
    line: int


@dataclass(frozen=True)
class Outcome:
    passed: bool
    seconds: float
    lines: tuple[str, ...] = ()  # what went wrong, shown under the FAIL line


class TimeLimitExceeded(SvcFault):
    """Raised inside a test that ran past its time limit."""


# --- finding the tests ------------------------------------------------------------------------

def find_test_files(file: str | None, project: str | None) -> tuple[str, ...]:
    """The `*_test.svc` files next to the program's file, or anywhere in the project folder
    (hidden folders, node_modules and __pycache__ left out), sorted by path."""
    if project is None:
        folder = os.path.dirname(file or "") or "."
        names = sorted(n for n in os.listdir(folder) if n.endswith(TEST_SUFFIX))
        return tuple(os.path.normpath(os.path.join(folder, n)) for n in names
                     if os.path.isfile(os.path.join(folder, n)))
    found = []
    for root, dirs, files in os.walk(project):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED_FOLDERS)
        found += [os.path.normpath(os.path.join(root, n)) for n in files if n.endswith(TEST_SUFFIX)]
    return tuple(sorted(found))


def collect_tests(program: CheckedProgram, test_files: tuple[str, ...]) -> tuple[
        list[SvcTest], list[Diagnostic]]:
    """The test functions of the test files, in file and declaration order, and what is wrong
    with them: a `test_*` function with parameters or another return type, a route in a test
    file (test files are never served)."""
    tests: list[SvcTest] = []
    diagnostics: list[Diagnostic] = []
    wanted = set(test_files)
    for module in program.modules:
        if module.path not in wanted:
            continue
        for item in module.items:
            if not isinstance(item, syntax.FunctionDef):
                continue
            for route in item.routes:
                diagnostics.append(Diagnostic(
                    "a test file cannot declare routes: put the handler in the program and "
                    "call it from the test", route.span))
            if item.name.startswith("test_"):
                problem = _signature_problem(program, item)
                if problem:
                    diagnostics.append(Diagnostic(problem, item.name_span))
                else:
                    tests.append(SvcTest(item.name, module.path, item.name_span.line))
    return tests, diagnostics


def _signature_problem(program: CheckedProgram, decl: syntax.FunctionDef) -> str | None:
    info = program.functions.get(decl.name)
    if info is None or info.decl is not decl:  # defined twice: already reported
        return None
    if decl.params:
        return (f"test function '{decl.name}' must take no parameters (a test sets up what it "
                "needs itself)")
    if info.returns not in (UNIT, ResultOf(UNIT), UNKNOWN):
        return (f"test function '{decl.name}' must return nothing or Result[unit, Error], "
                f"found {format_type(info.returns)}")
    return None


# --- running them -----------------------------------------------------------------------------

def run_tests(code: list[tuple[str, types.CodeType]], tests: list[SvcTest],
              timeout: float, base_dir: str | None, out: TextIO) -> int:
    """Run each test, print one line per test and the summary line; 1 if any failed."""
    from svc.dependencies.environment import python_path
    from svc.runner import use_packages
    from svc.runtime.db import set_base_directory

    process.raise_recursion_limit()
    set_base_directory(base_dir)
    use_packages(python_path(base_dir))  # as `svcc run` does: the project's packages first
    passed = failed = 0
    width = max((len(t.name) for t in tests), default=0)
    for test in tests:
        outcome = run_one(code, test, timeout)
        passed, failed = passed + outcome.passed, failed + (not outcome.passed)
        status = "ok  " if outcome.passed else "FAIL"
        print(f"{status} {test.name:<{width}}  ({_duration(outcome.seconds)})", file=out)
        for line in outcome.lines:
            print(f"     {escape_controls(line)}", file=out)
        out.flush()
    print(f"{passed} passed, {failed} failed", file=out)
    return 1 if failed else 0


def run_one(code: list[tuple[str, types.CodeType]], test: SvcTest, timeout: float) -> Outcome:
    """Run one test in a fresh namespace; never raises for anything the test does."""
    from svc.runner import load_namespace, read_configuration, settings_of
    from svc.runtime import services
    from svc.runtime.lib.support import SvcError

    started = time.monotonic()
    try:
        namespace = load_namespace(code)  # fresh module state for every test
        problems = read_configuration(namespace)
        if problems:
            return Outcome(False, time.monotonic() - started, tuple(problems))
        fresh = services.Services(settings_of(namespace), testing=True)
        with services.running(fresh):  # stubs only, calls to local hosts otherwise
            result = _call_with_limit(namespace[global_name(test.name)], timeout)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - whatever the test did, the run goes on
        return Outcome(False, time.monotonic() - started, _failure_lines(exc, test, timeout))
    finally:
        process.close_databases()
        services.reset_between_tests()
    seconds = time.monotonic() - started
    if isinstance(result, SvcError):
        return Outcome(False, seconds, (
            f"{test.file}:{test.line}: the test returned an error: {result.kind}: "
            f"{result.message}",))
    return Outcome(True, seconds)


def _call_with_limit(function: Callable[[], Any], timeout: float) -> Any:
    """Call the test (awaiting an async one on a fresh loop), stopped after `timeout`."""
    with process.Watchdog(TimeLimitExceeded, timeout + WATCHDOG_GRACE, "svc-test-watchdog"):
        if not inspect.iscoroutinefunction(function):
            return function()
        return process.run(_bounded(function, timeout))


async def _bounded(function: Callable[[], Any], timeout: float) -> Any:
    limit = asyncio.timeout(timeout)
    try:
        async with limit:
            return await function()
    except TimeoutError as exc:
        if limit.expired():
            raise TimeLimitExceeded() from exc
        raise


# --- reporting --------------------------------------------------------------------------------

def _failure_lines(exc: BaseException, test: SvcTest, timeout: float) -> tuple[str, ...]:
    """What failed and where: the assertion's line; for a fault or a time-out, the innermost
    line of the test's file (and the innermost svc line when that is elsewhere)."""
    from svc.runtime.lib.assertions import AssertionFailed

    if isinstance(exc, AssertionFailed):
        return (f"{exc.where}: {exc.headline}", *(f"  {d}" for d in exc.details))
    if isinstance(exc, TimeLimitExceeded):
        text = f"timed out after {_seconds(timeout)} (--timeout SECONDS sets the limit)"
    else:
        text = process.fault_text(exc)
    frames = _svc_frames(exc)
    in_test = [f for f in frames if f.filename == test.file]
    where = in_test[-1] if in_test else None
    head = f"{where.filename}:{where.lineno}" if where else f"{test.file}:{test.line}"
    lines = [f"{head}: {text}"]
    if frames and frames[-1] is not where:
        lines.append(f"  at {frames[-1].filename}:{frames[-1].lineno}, in {frames[-1].name}")
    return tuple(lines)


def _svc_frames(exc: BaseException) -> list[traceback.FrameSummary]:
    """The frames in svc code where `exc` was raised, outermost first; for a time-out raised
    by asyncio, those of the cancelled test (the exception it was raised from)."""
    seen: BaseException | None = exc
    while seen is not None:
        frames = [f for f in traceback.extract_tb(seen.__traceback__)
                  if f.filename.endswith(".svc")]
        if frames:
            return frames
        seen = seen.__cause__ or seen.__context__
    return []


def _seconds(value: float) -> str:
    return f"{value:g} s"


def _duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    return f"{seconds:.2f} s"


# --- the command ------------------------------------------------------------------------------

def test_command(file: str | None, project: str | None, timeout: float) -> int:
    """Find the test files, compile them with the program, check the test functions, run
    them. Diagnostics (in the program or its tests) are shown as `svcc check` shows them."""
    from svc import pipeline
    from svc.compiler.diagnostics import render_all

    if file is not None and file.endswith(TEST_SUFFIX):
        print(f"error: '{file}' is a test file: give the program's entry file (its tests are "
              "the *_test.svc files next to it)", file=sys.stderr)
        return 2
    test_files = find_test_files(file, project)
    checked = pipeline.check(pipeline.Target(file=file, project=project, tests=test_files))
    tests: list[SvcTest] = []
    diagnostics: list[Diagnostic] = []
    if not isinstance(checked, pipeline.Failed):
        tests, diagnostics = collect_tests(checked.program, test_files)
    if isinstance(checked, pipeline.Failed) or diagnostics:
        print(render_all(getattr(checked, "diagnostics", diagnostics), checked.sources),
              file=sys.stderr)
        return 1
    if not test_files:
        where = project if project is not None else (os.path.dirname(file or "") or ".")
        print(f"no test files (*{TEST_SUFFIX}) in {where}", file=sys.stderr)
    compiled = pipeline.compile_checked(checked)
    return run_tests(compiled.code, tests, timeout, compiled.project_dir, sys.stdout)
