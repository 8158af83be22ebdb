"""`svcc test` as a user runs it: real subprocesses over real files, the examples' own svc
tests included (so `make test` runs `svcc test` on every example)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SVCC = [sys.executable, "-m", "svc.cli"]
SUMMARY = re.compile(r"(\d+) passed, (\d+) failed")
RESULT_LINE = re.compile(r"(ok  |FAIL) (test_\w+) +\((\d+ ms|\d+\.\d\d s)\)$")

PROGRAM = '''\
class Item:
    id: i64
    name: str

def double(x: i64) -> i64:
    return x * 2

@get("/items/{id}")
async def get_item(id: i64) -> Result[Item, Error]:
    if id < 1:
        return error("bad id")
    return ok(Item(id=id, name="n" + str(id)))

def main():
    print("main ran")
'''


def svcc(*args: str, cwd: Path = ROOT, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(SVCC + list(args), cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def results(stdout: str) -> dict[str, str]:
    """test name -> "ok" / "FAIL", from the one line per test."""
    found = {}
    for line in stdout.splitlines():
        match = RESULT_LINE.match(line)
        if match:
            found[match.group(2)] = match.group(1).strip()
    return found


def write_program(folder: Path, tests: str, name: str = "app_test.svc") -> Path:
    (folder / "app.svc").write_text(PROGRAM)
    (folder / name).write_text(tests)
    return folder / "app.svc"


# --- the examples -------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [["--project", "examples/tasks"],
                                  ["examples/hello/hello.svc"],
                                  ["examples/workload/workload.svc"]])
def test_every_example_passes_its_own_tests(args: list[str]) -> None:
    result = svcc("test", *args)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    passed, failed = map(int, SUMMARY.fullmatch(lines[-1]).groups())
    assert failed == 0 and passed >= 4
    assert len(results(result.stdout)) == passed == len(lines) - 1
    assert set(results(result.stdout).values()) == {"ok"}


def test_the_task_manager_tests_cover_its_handlers() -> None:
    names = results(svcc("test", "--project", "examples/tasks").stdout)
    for topic in ("create", "list", "100", "update", "delete", "stats", "title", "router",
                  "attachments"):
        assert any(topic in name for name in names), topic


def test_a_broken_task_manager_fails_its_tests(tmp_path: Path) -> None:
    """The tests see what the handlers do: an ORDER BY and a LIMIT changed are caught."""
    folder = tmp_path / "tasks"
    folder.mkdir()
    for name in ("svc.toml", "models.svc", "index.html", "client.js", "tasks_test.svc"):
        (folder / name).write_bytes((ROOT / "examples" / "tasks" / name).read_bytes())
    shutil.copytree(ROOT / "examples" / "tasks" / "migrations", folder / "migrations")
    source = (ROOT / "examples" / "tasks" / "tasks.svc").read_text()
    (folder / "tasks.svc").write_text(source.replace("LIMIT 100", "LIMIT 99")
                                      .replace("ORDER BY id DESC", "ORDER BY id"))
    result = svcc("test", "--project", str(folder))
    assert result.returncode == 1
    outcome = results(result.stdout)
    assert outcome["test_list_is_newest_first"] == "FAIL"
    assert outcome["test_list_returns_the_latest_100"] == "FAIL"
    assert outcome["test_stats_count_done_and_open"] == "ok"
    assert '       left:  ["first", "second", "third"]' in result.stdout
    assert result.stdout.splitlines()[-1] == f"{len(outcome) - 2} passed, 2 failed"


# --- what a test run reports ----------------------------------------------------------------------

def test_passes_failures_and_their_lines(tmp_path: Path) -> None:
    write_program(tmp_path, '''\
from "app.svc" import double, get_item, Item

def test_double():
    assert_eq(double(2), 4)

def test_double_wrong():
    assert_eq(double(2), 5)

async def test_handler() -> Result[unit, Error]:
    item = try await get_item(3)
    assert_eq(item, Item(id=3, name="n3"))
    return ok(())

async def test_handler_err() -> Result[unit, Error]:
    item = try await get_item(0)
    return ok(())

def test_false():
    assert_true(1 > 2)

def test_items_differ():
    assert_eq(Item(id=1, name="a\\nb"), Item(id=1, name="c"))
''')
    result = svcc("test", "app.svc", cwd=tmp_path)
    assert result.returncode == 1
    assert "main ran" not in result.stdout
    assert results(result.stdout) == {
        "test_double": "ok", "test_double_wrong": "FAIL", "test_handler": "ok",
        "test_handler_err": "FAIL", "test_false": "FAIL", "test_items_differ": "FAIL"}
    out = result.stdout
    assert ("     app_test.svc:7: assert_eq failed: the values differ\n"
            "       left:  4\n"
            "       right: 5\n") in out
    assert "     app_test.svc:14: the test returned an error: invalid: bad id\n" in out
    assert "     app_test.svc:19: assert_true failed: the condition is False\n" in out
    assert '       left:  Item(id=1, name="a\\nb")\n' in out
    assert '       right: Item(id=1, name="c")\n' in out
    assert out.splitlines()[-1] == "2 passed, 4 failed"
    assert result.stderr == ""


def test_all_passing_exits_0(tmp_path: Path) -> None:
    write_program(tmp_path, 'from "app.svc" import double\n\ndef test_one():\n'
                            '    assert_eq(double(21), 42)\n')
    result = svcc("test", "app.svc", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "1 passed, 0 failed"


def test_faults_fail_the_test_with_its_line_and_the_run_goes_on(tmp_path: Path) -> None:
    write_program(tmp_path, '''\
from "app.svc" import double

def test_overflow():
    x = double(9223372036854775807)

def test_index():
    xs = [1, 2]
    print(str(xs[5]))

def test_after():
    assert_eq(1, 1)
''')
    result = svcc("test", "app.svc", cwd=tmp_path)
    assert result.returncode == 1
    assert results(result.stdout) == {"test_overflow": "FAIL", "test_index": "FAIL",
                                      "test_after": "ok"}
    assert ("     app_test.svc:4: integer overflow (i64)\n"
            "       at app.svc:6, in double\n") in result.stdout
    assert "     app_test.svc:8: index 5 out of range" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


def test_time_limit_stops_computing_and_awaiting_tests(tmp_path: Path) -> None:
    write_program(tmp_path, '''\
def test_spins():
    while True:
        pass

async def test_spins_async() -> Result[unit, Error]:
    n = 0
    while True:
        n = (n + 1) % 7
    return ok(())

async def test_sleeps() -> Result[unit, Error]:
    await sleep(100000)
    return ok(())

def test_after():
    assert_true(True)
''')
    started = time.monotonic()
    result = svcc("test", "app.svc", "--timeout", "0.5", cwd=tmp_path, timeout=60)
    assert time.monotonic() - started < 20
    assert results(result.stdout) == {"test_spins": "FAIL", "test_spins_async": "FAIL",
                                      "test_sleeps": "FAIL", "test_after": "ok"}
    lines = re.findall(r"app_test\.svc:(\d+): timed out after 0\.5 s \(--timeout SECONDS "
                       r"sets the limit\)\n", result.stdout)
    assert len(lines) == 3
    assert lines[0] in ("2", "3") and lines[1] in ("7", "8") and lines[2] == "12"
    assert result.returncode == 1


def test_each_test_gets_fresh_state(tmp_path: Path) -> None:
    """Two tests write the same named in-memory table: each starts without it."""
    write_program(tmp_path, '''\
async def count_after_insert() -> Result[i64, Error]:
    db = try await db_open(":memory:")
    try await db_exec(db, "CREATE TABLE IF NOT EXISTS t (x INTEGER)")
    try await db_exec(db, "INSERT INTO t (x) VALUES (1)")
    return await db_exec(db, "UPDATE t SET x = 2")

async def test_one() -> Result[unit, Error]:
    assert_eq(try await count_after_insert(), 1)
    return ok(())

async def test_two() -> Result[unit, Error]:
    assert_eq(try await count_after_insert(), 1)
    return ok(())
''')
    result = svcc("test", "app.svc", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == "2 passed, 0 failed"


def test_a_file_database_resolves_against_the_project_folder(tmp_path: Path) -> None:
    (tmp_path / "proj" / "tests").mkdir(parents=True)
    (tmp_path / "proj" / "svc.toml").write_text('entry = "app.svc"\n')
    write_program(tmp_path / "proj", '''\
async def test_file_db() -> Result[unit, Error]:
    db = try await db_open("data.sqlite")
    try await db_exec(db, "CREATE TABLE IF NOT EXISTS t (x INTEGER)")
    return ok(())
''', name="tests/nested_test.svc")
    result = svcc("test", "--project", "proj", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "proj" / "data.sqlite").is_file()
    assert results(result.stdout) == {"test_file_db": "ok"}


# --- bad tests and bad command lines -------------------------------------------------------------

def test_wrong_test_signatures_and_routes_are_diagnostics(tmp_path: Path) -> None:
    write_program(tmp_path, '''\
def test_args(x: i64):
    pass

def test_returns() -> i64:
    return 1

@get("/x")
async def test_route() -> Result[unit, Error]:
    return ok(())

def helper_is_not_a_test(x: i64) -> i64:
    return x
''')
    result = svcc("test", "app.svc", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout == ""
    err = result.stderr
    assert ("error: test function 'test_args' must take no parameters" in err
            and " --> app_test.svc:1:5\n" in err)
    assert ("error: test function 'test_returns' must return nothing or Result[unit, Error], "
            "found i64\n --> app_test.svc:4:5\n") in err
    assert "error: a test file cannot declare routes" in err and " --> app_test.svc:7:1\n" in err
    assert err.rstrip().endswith("error: 3 errors in app_test.svc")


def test_type_errors_in_a_test_file_are_ordinary_diagnostics(tmp_path: Path) -> None:
    write_program(tmp_path, 'from "app.svc" import double\n\ndef test_x():\n'
                            '    assert_eq(double(1), "2")\n    assert_true(1)\n')
    result = svcc("test", "app.svc", cwd=tmp_path)
    assert result.returncode == 1
    assert ("error: argument 2 of assert_eq: expected i64, found str\n"
            " --> app_test.svc:4:26\n") in result.stderr
    assert "error: argument 1 of assert_true: expected bool, found i64\n" in result.stderr


def test_test_files_are_not_part_of_run_check_or_build(tmp_path: Path) -> None:
    write_program(tmp_path, "def test_broken():\n    this is not svc\n")
    result = svcc("check", "app.svc", cwd=tmp_path)
    assert result.returncode == 0 and result.stdout.startswith("ok: app.svc (1 file, 1 route)")
    run = subprocess.run(SVCC + ["run", "app.svc"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0 and run.stdout == "main ran\n"


def test_a_program_cannot_import_a_test_file(tmp_path: Path) -> None:
    (tmp_path / "helpers_test.svc").write_text("def helper() -> i64:\n    return 1\n")
    (tmp_path / "app.svc").write_text('import "helpers_test.svc"\n\ndef main():\n    pass\n')
    result = svcc("check", "app.svc", cwd=tmp_path)
    assert result.returncode == 1
    assert ("error: cannot import the test file 'helpers_test.svc': test files are compiled "
            "only by svcc test, and only test files may import them\n"
            " --> app.svc:1:1\n") in result.stderr


def test_no_test_files(tmp_path: Path) -> None:
    (tmp_path / "app.svc").write_text(PROGRAM)
    result = svcc("test", "app.svc", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout == "0 passed, 0 failed\n"
    assert result.stderr == "no test files (*_test.svc) in .\n"


def test_giving_a_test_file_is_a_usage_error(tmp_path: Path) -> None:
    write_program(tmp_path, "def test_x():\n    pass\n")
    result = svcc("test", "app_test.svc", cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("error: 'app_test.svc' is a test file: give the program's")


@pytest.mark.parametrize("value", ["0", "-1", "abc", "nan", "inf"])
def test_a_bad_timeout_is_a_usage_error(tmp_path: Path, value: str) -> None:
    write_program(tmp_path, "def test_x():\n    pass\n")
    result = svcc("test", "app.svc", "--timeout", value, cwd=tmp_path)
    assert result.returncode == 2
    assert f"expected a number of seconds above 0, got '{value}'" in result.stderr


def test_a_missing_program_is_a_usage_error(tmp_path: Path) -> None:
    result = svcc("test", "nope.svc", cwd=tmp_path)
    assert result.returncode == 2 and result.stderr == "error: cannot find file 'nope.svc'\n"


# --- the test client: test_request, headers_of, status/header/body ----------------------------------

ACCOUNTS = '''\
class Account:
    id: i64
    name: str

@post("/accounts")
async def sign_up(db: Db, h: Headers, a: Account) -> Result[Response[Account], Error]:
    if header(h, "Authorization") != "Bearer admin":
        return unauthorized("admins only")
    try await db_exec(db, "INSERT INTO accounts (id, name) VALUES (?1, ?2)", a.id, a.name)
    r = respond(201, a)
    set_header(r, "Location", f"/accounts/{a.id}")
    return ok(r)

@get("/accounts/{id}")
async def account(db: Db, id: i64) -> Result[Account?, Error]:
    return await db_one[Account](db, "SELECT id, name FROM accounts WHERE id = ?1", id)

@get("/crash")
async def crash() -> Result[i64, Error]:
    let xs: List[i64] = []
    return ok(xs[3])

async def open_db() -> Result[Db, Error]:
    db = try await db_open(":memory:")
    try await db_exec(db, "CREATE TABLE accounts (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
    return ok(db)

def main():
    print("main ran")
'''


def write_accounts(folder: Path, tests: str) -> None:
    (folder / "app.svc").write_text(ACCOUNTS)
    (folder / "app_test.svc").write_text(tests)


def test_test_request_answers_through_the_router_binding_and_rendering(tmp_path: Path) -> None:
    write_accounts(tmp_path, '''\
from "app.svc" import open_db, sign_up, Account

async def test_created() -> Result[unit, Error]:
    db = try await open_db()
    admin = headers_of(["Authorization: Bearer admin", "Content-Type: application/json"])
    r = await test_request(db, "POST", "/accounts", admin, "{\\"id\\": 1, \\"name\\": \\"ada\\"}")
    assert_eq(status(r), 201)
    assert_eq(header(r, "location"), "/accounts/1")
    assert_eq(header(r, "Content-Length"), "21")
    assert_eq(header(r, "X-Missing"), None)
    assert_eq(body(r), "{\\"id\\":1,\\"name\\":\\"ada\\"}")
    got = await test_request(db, "GET", "/accounts/1?unused=1", headers_of([]), "")
    assert_eq(body(got), body(r))
    head = await test_request(db, "HEAD", "/accounts/1", headers_of([]), "")
    assert_eq(status(head), 200)
    assert_eq(body(head), "")
    return ok(())

async def test_refused() -> Result[unit, Error]:
    db = try await open_db()
    none = headers_of([])
    assert_eq(status(await test_request(db, "GET", "/accounts/9", none, "")), 404)
    assert_eq(status(await test_request(db, "GET", "/accounts/x", none, "")), 400)
    assert_eq(status(await test_request(db, "POST", "/nowhere", none, "")), 404)
    wrong = await test_request(db, "DELETE", "/accounts/1", none, "")
    assert_eq(status(wrong), 405)
    assert_eq(header(wrong, "Allow"), "GET, HEAD, OPTIONS")
    nobody = await test_request(db, "POST", "/accounts", none, "{\\"id\\": 1, \\"name\\": \\"a\\"}")
    assert_eq(status(nobody), 401)
    assert_eq(body(nobody), "{\\"error\\":\\"admins only\\"}")
    text = headers_of(["Content-Type: text/plain"])
    assert_eq(status(await test_request(db, "POST", "/accounts", text, "hi")), 415)
    let many: List[str] = []
    for i in range(2000):
        append(many, f"X-Field-{i}: some value to fill the head")
    assert_eq(status(await test_request(db, "GET", "/accounts/1", headers_of(many), "")), 431)
    assert_eq(status(await test_request(db, "GET", "/health", none, "")), 200)
    return ok(())

async def test_a_handler_called_directly() -> Result[unit, Error]:
    db = try await open_db()
    r = try await sign_up(db, headers_of(["authorization:   Bearer admin  "]), Account(id=2, name="bo"))
    assert_eq(status(r), 201)
    assert_eq(body(r), Account(id=2, name="bo"))
    assert_eq(header(r, "LOCATION"), "/accounts/2")
    return ok(())
''')
    result = svcc("test", "app.svc", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert results(result.stdout) == {"test_created": "ok", "test_refused": "ok",
                                      "test_a_handler_called_directly": "ok"}
    assert "main ran" not in result.stdout


def test_a_wrong_status_fails_with_both_values_and_a_fault_is_a_logged_500(tmp_path: Path) -> None:
    write_accounts(tmp_path, '''\
from "app.svc" import open_db

async def test_expects_200() -> Result[unit, Error]:
    db = try await open_db()
    r = await test_request(db, "GET", "/accounts/5", headers_of([]), "")
    assert_eq(status(r), 200)
    return ok(())

async def test_crash_is_500() -> Result[unit, Error]:
    db = try await open_db()
    r = await test_request(db, "GET", "/crash", headers_of([]), "")
    assert_eq(status(r), 500)
    assert_eq(body(r), "{\\"error\\":\\"internal error\\"}")
    return ok(())
''')
    result = svcc("test", "app.svc", cwd=tmp_path)
    assert result.returncode == 1
    assert results(result.stdout) == {"test_expects_200": "FAIL", "test_crash_is_500": "ok"}
    assert ("     app_test.svc:6: assert_eq failed: the values differ\n"
            "       left:  404\n"
            "       right: 200\n") in result.stdout
    # the server's own log line for the fault, with the handler's .svc line
    assert "GET /crash: internal error" in result.stderr
    assert "app.svc\", line 21" in result.stderr


def test_bad_literal_arguments_are_compile_errors(tmp_path: Path) -> None:
    write_accounts(tmp_path, '''\
async def test_bad() -> Result[unit, Error]:
    db = try await db_open(":memory:")
    r = await test_request(db, "GE T", "accounts", headers_of(["Accept json"]), "")
    return ok(())
''')
    result = svcc("test", "app.svc", cwd=tmp_path)
    assert result.returncode == 1 and result.stdout == ""
    err = result.stderr
    assert ("error: test_request: method 'GE T' is not an HTTP method (GET, POST, PUT, DELETE, "
            "...)\n --> app_test.svc:3:32\n") in err
    assert ("error: test_request: path 'accounts' must start with '/' (a path and query: "
            "/api/tasks?limit=5)\n --> app_test.svc:3:40\n") in err
    assert ("error: headers_of: 'Accept json' is not a header field: write it 'Name: value'\n"
            " --> app_test.svc:3:64\n") in err
    assert "error: 3 errors in app_test.svc" in err


def test_bad_computed_arguments_fail_the_test_with_their_line(tmp_path: Path) -> None:
    write_accounts(tmp_path, '''\
async def test_method() -> Result[unit, Error]:
    db = try await db_open(":memory:")
    method = "G T"
    r = await test_request(db, method, "/", headers_of([]), "")
    return ok(())

async def test_path() -> Result[unit, Error]:
    db = try await db_open(":memory:")
    path = "/a b"
    r = await test_request(db, "GET", path, headers_of([]), "")
    return ok(())

async def test_framing() -> Result[unit, Error]:
    db = try await db_open(":memory:")
    r = await test_request(db, "POST", "/", headers_of(["Content-Length: 5"]), "")
    return ok(())

def test_header_line():
    line = "X-Bad\\rInjected: 1"
    h = headers_of([line])
''')
    result = svcc("test", "app.svc", cwd=tmp_path)
    assert result.returncode == 1
    assert set(results(result.stdout).values()) == {"FAIL"}
    out = result.stdout
    assert ("     app_test.svc:4: test_request: method 'G T' is not an HTTP method (GET, POST, "
            "PUT, DELETE, ...)\n") in out
    assert ("     app_test.svc:10: test_request: path '/a b' holds a space or control character "
            "(percent-encode it)\n") in out
    assert ("     app_test.svc:15: test_request: do not give a Content-Length field: "
            "test_request frames the body itself\n") in out
    assert "     app_test.svc:20: headers_of: header name 'X-Bad\\rInjected' (in " in out


def test_the_test_client_is_for_test_files_only(tmp_path: Path) -> None:
    (tmp_path / "app.svc").write_text('''\
async def main() -> Result[unit, Error]:
    db = try await db_open(":memory:")
    r = await test_request(db, "GET", "/health", headers_of([]), "")
    return ok(())
''')
    result = svcc("check", "app.svc", cwd=tmp_path)
    assert result.returncode == 1
    assert ("error: test_request can only be called in a test file (*_test.svc), which `svcc "
            "test` runs\n --> app.svc:3:15\n") in result.stderr
