"""The program's services and their lifecycle (svc.runtime.services), and svc.toml reaching
them as one Settings value (svc.rules.settings): who owns what, what a test gets fresh, and
that nothing in src/ finds a service through a module global, `sys.modules` or a patch."""

from __future__ import annotations

import ast
import asyncio
import collections
import subprocess
import textwrap
from pathlib import Path

import pytest

from svc.rules.settings import JobSettings, Settings
from svc.runtime import services
from svc.runtime.services import Component, Services
from tests.helpers.svc_process import svcc

SRC = Path(__file__).resolve().parents[2] / "src" / "svc"


# --- current services -----------------------------------------------------------------------

def test_outside_any_program_run_the_services_are_the_defaults() -> None:
    outside = services.current()
    assert outside.settings == Settings() and outside.log is None and outside.tracer is None


def test_running_scopes_the_services_and_tasks_inherit_them() -> None:
    program = Services(Settings(demo_routes=False))

    async def in_a_task() -> Services:
        return services.current()

    async def scenario() -> tuple[Services, Services]:
        started = asyncio.get_running_loop().create_task(in_a_task())
        return services.current(), await started

    with services.running(program):
        here, there = asyncio.run(scenario())
    assert here is program and there is program
    assert services.current() is not program  # the block is over


def test_a_database_thread_runs_in_the_openers_context(tmp_path) -> None:
    """SQLite's thread runs in a copy of the opener's context, so the callbacks it schedules on
    the loop (a wait counted into the metrics) find the program's services, not the defaults."""
    from svc.runtime.db import close_all, db_open

    program = Services()

    async def scenario():
        return await db_open(str(tmp_path / "t.sqlite"))

    with services.running(program):
        db = asyncio.run(scenario())
    try:
        context = db._thread._target.__self__  # type: ignore[union-attr]  # Context.run
        assert context[services._current] is program
    finally:
        close_all()


# --- the lifecycle registry -----------------------------------------------------------------

@pytest.fixture
def registry(monkeypatch):
    """An empty registry for the test (the modules imported so far joined the real one)."""
    monkeypatch.setattr(services, "_components", {})
    return services


def test_shutdown_reaches_every_component_and_reports_the_first_failure(registry) -> None:
    closed: list[str] = []

    def failing() -> None:
        closed.append("a")
        raise OSError("disk gone")

    registry.join(Component("a", at_shutdown=failing))
    registry.join(Component("b", at_shutdown=lambda: closed.append("b")))
    with pytest.raises(OSError, match="disk gone"):
        registry.shut_down()
    assert closed == ["a", "b"]


def test_joining_again_replaces_and_each_hook_is_optional(registry) -> None:
    calls: list[str] = []
    registry.join(Component("x", between_tests=lambda: calls.append("old")))
    registry.join(Component("x", between_tests=lambda: calls.append("new")))
    registry.join(Component("y"))
    registry.reset_between_tests()
    registry.shut_down()
    asyncio.run(registry.end_loop())
    assert calls == ["new"] and registry.fork_refusal() is None
    assert asyncio.run(registry.after_fork()) is None


def test_gauges_and_fork_refusals_come_from_the_components(registry) -> None:
    registry.join(Component("q", gauges=lambda rows: rows["depth"].append([["q"], 3]),
                            refuses_fork=lambda: "in memory"))
    rows: dict[str, list] = {"depth": []}
    registry.add_gauges(rows)
    assert rows == {"depth": [[["q"], 3]]} and registry.fork_refusal() == "in memory"


def test_the_database_module_joins_with_its_gauges_and_shutdown(tmp_path) -> None:
    from svc.runtime.db import db_open

    names = {c.name for c in services.joined()}
    assert "databases" in names

    async def scenario() -> dict[str, list]:
        await db_open(str(tmp_path / "g.sqlite"))
        # every joined module's gauges (another test may have imported more modules)
        rows: dict[str, list] = collections.defaultdict(list)
        services.add_gauges(rows)
        return rows

    rows = asyncio.run(scenario())
    services.shut_down()
    assert [r[0] for r in rows["svc_db_queue_depth"]] == [[str(tmp_path / "g.sqlite")]]


# --- settings -------------------------------------------------------------------------------

def test_settings_are_built_from_the_checked_tables() -> None:
    built = Settings.from_tables({
        "config": {"port": 1}, "server": {"demo_routes": False},
        "cors": {"allow_origins": ["https://a.example"]},
        "rate_limit": {"requests_per_second": 2, "burst": 4},
        "guard_limits": {"signed_in": {"requests_per_second": 1, "burst": 1}},
        "jobs": {"poll_seconds": 0.05}})
    assert built.config == {"port": 1} and built.demo_routes is False and built.has_gate
    assert built.rate_limit is not None and built.rate_limit.burst == 4
    assert [g for g, _ in built.guard_limits] == ["signed_in"]
    assert built.guard_limits[0][1].client == "peer"
    assert built.jobs == JobSettings(poll_seconds=0.05, lease_grace_seconds=5.0)
    assert Settings.from_tables(built.tables) == built  # what code generation emits
    assert Settings() == Settings(config=None) and not Settings().has_gate


@pytest.mark.parametrize("jobs, message", [
    ("poll = 1", "unknown key 'poll' in svc.toml [jobs] (allowed: poll_seconds, "
                 "lease_grace_seconds)"),
    ("poll_seconds = 0", "'poll_seconds' in svc.toml [jobs] must be a number of seconds from "
                         "0.001 to 60"),
    ("lease_grace_seconds = true", "'lease_grace_seconds' in svc.toml [jobs] must be a number"),
    ('lease_grace_seconds = "5"', "'lease_grace_seconds' in svc.toml [jobs] must be a number"),
])
def test_a_bad_jobs_table_is_one_diagnostic_at_its_key(tmp_path, jobs, message) -> None:
    (tmp_path / "main.svc").write_text("def main():\n    print(\"hi\")\n")
    (tmp_path / "svc.toml").write_text(f'entry = "main.svc"\n\n[jobs]\n{jobs}\n')
    result = subprocess.run([*svcc(), "check", "--project", str(tmp_path)], text=True,
                            capture_output=True, timeout=60)
    assert result.returncode == 1
    assert message in result.stderr and "svc.toml:4:1" in result.stderr
    assert "Traceback" not in result.stderr


# --- svcc test: every test has services of its own ---------------------------------------------

LIMITED = '''
@get("/hi")
async def hi() -> Result[str, Error]:
    return ok("hi")

async def main() -> Result[unit, Error]:
    return await serve(try await db_open(":memory:"), 8080)
'''

LIMITED_TESTS = '''
from "app.svc" import hi

async def test_the_third_request_is_limited() -> Result[unit, Error]:
    db = try await db_open(":memory:")
    for i in range(2):
        r = await test_request(db, "GET", "/hi", headers_of([]), "")
        assert_eq(status(r), 200)
    r = await test_request(db, "GET", "/hi", headers_of([]), "")
    assert_eq(status(r), 429)
    assert_eq(header(r, "retry-after"), "1")
    return ok(())

async def test_the_next_test_starts_with_a_full_bucket() -> Result[unit, Error]:
    db = try await db_open(":memory:")
    r = await test_request(db, "GET", "/hi", headers_of([]), "")
    assert_eq(status(r), 200)
    return ok(())

async def test_cors_answers_a_preflight_as_the_server_does() -> Result[unit, Error]:
    db = try await db_open(":memory:")
    r = await test_request(db, "OPTIONS", "/hi", headers_of([
        "Origin: https://app.example", "Access-Control-Request-Method: GET"]), "")
    assert_eq(status(r), 204)
    assert_eq(header(r, "access-control-allow-origin"), "https://app.example")
    other = await test_request(db, "GET", "/hi", headers_of(["Origin: https://app.example"]), "")
    assert_eq(header(other, "access-control-allow-origin"), "https://app.example")
    return ok(())
'''


def test_test_request_applies_cors_and_rate_limits_with_fresh_buckets_per_test(tmp_path):
    (tmp_path / "app.svc").write_text(textwrap.dedent(LIMITED))
    (tmp_path / "app_test.svc").write_text(textwrap.dedent(LIMITED_TESTS))
    (tmp_path / "svc.toml").write_text(
        'entry = "app.svc"\n\n[rate_limit]\nrequests_per_second = 1\nburst = 2\n\n'
        '[cors]\nallow_origins = ["https://app.example"]\n')
    result = subprocess.run([*svcc(), "test", "--project", str(tmp_path)], text=True,
                            capture_output=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 passed, 0 failed" in result.stdout


# --- the code base: no service found through a global, sys.modules or a patch -----------------

def _modules() -> list[tuple[Path, ast.Module]]:
    return [(path, ast.parse(path.read_text(encoding="utf-8")))
            for path in sorted(SRC.rglob("*.py")) if "built" not in path.parts]


def test_no_module_looks_another_up_in_sys_modules() -> None:
    found = []
    for path, tree in _modules():
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr == "modules"
                    and isinstance(node.value, ast.Name) and node.value.id == "sys"):
                found.append(f"{path.relative_to(SRC)}:{node.lineno}")
    # the runner registers the generated program's module (msgspec resolves its classes there)
    assert [where.partition(":")[0] for where in found] == ["runner.py"], found


def test_no_module_assigns_to_another_modules_attributes() -> None:
    """`other_module.name = value` anywhere: a patch of another module's state."""
    found = []
    for path, tree in _modules():
        imported = {alias.asname or alias.name for node in ast.walk(tree)
                    if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else (
                [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
            for target in targets:
                if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                        and target.value.id in imported):
                    found.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert found == [], found
