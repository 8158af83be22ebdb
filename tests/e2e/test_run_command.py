"""`svcc run`: compile errors stop everything, main's outcome is the exit status, project mode
resolves the database next to svc.toml, and nothing ever shows a Python traceback."""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import textwrap
import time

from tests.helpers.svc_process import REPO, free_port, run_to_end, start, svcc


def _write(path, text: str):
    path.write_text(textwrap.dedent(text))
    return path


def test_compile_error_prints_diagnostics_and_starts_nothing(tmp_path):
    prog = _write(tmp_path / "bad.svc", """
        async def main() -> Result[unit, Error]:
            x = 1 + "a"
            return ok(())
    """)
    result = run_to_end(["run", str(prog)])
    assert result.returncode == 1
    assert "error:" in result.stderr and "bad.svc:3" in result.stderr and "^" in result.stderr
    assert result.stdout == "" and "Traceback" not in result.stderr


def test_sync_main_prints_and_exits_0(tmp_path):
    prog = _write(tmp_path / "hi.svc", """
        def main():
            print("hi " + str(6 * 7))
    """)
    result = run_to_end(["run", str(prog)])
    assert (result.returncode, result.stdout, result.stderr) == (0, "hi 42\n", "")


def test_what_check_accepts_runs_even_at_the_operator_limit(tmp_path):
    """The longest expression the parser accepts (1,000 operators, nested in calls) must also
    get through code generation and Python's compiler; one more operator is a diagnostic."""
    call_chain = "1"
    for _ in range(90):
        call_chain = f"f({call_chain} + {' + '.join(['1'] * 5)})"
    longest = call_chain + " + " + " + ".join(["1"] * 550)  # 90 * 5 + 550 = 1,000 operators
    program = "def f(x: i64) -> i64:\n    return x\n\ndef main():\n    print(str({}))\n"
    (tmp_path / "long.svc").write_text(program.format(longest))
    (tmp_path / "too_long.svc").write_text(program.format(longest + " + 1"))
    result = run_to_end(["run", str(tmp_path / "long.svc")])
    assert (result.returncode, result.stdout, result.stderr) == (0, "1001\n", "")
    result = run_to_end(["check", str(tmp_path / "too_long.svc")])
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "expression too long (more than 1000 operators)" in result.stderr


def _nested_loops(depth: int) -> str:
    """A main whose `depth` while loops enclose each other, in a function that uses try."""
    lines = ["def count() -> Result[i64, Error]:", "    n = try parse_i64(\"0\")"]
    for level in range(depth):
        lines.append("    " * (level + 1) + "while n < 1:")
    lines.append("    " * (depth + 1) + "n += 1")
    lines += ["    return ok(n)", "", "def main():", "    match count():",
              "        case Ok(n): print(str(n))", "        case Err(e): print(error_message(e))", ""]
    return "\n".join(lines)


def test_what_check_accepts_runs_even_at_the_loop_nesting_limit(tmp_path):
    """Python compiles at most 20 nested blocks (loops, and the try a `try` makes): check
    stops at 19 loops, and 19 loops inside a function that uses try still run."""
    (tmp_path / "deep.svc").write_text(_nested_loops(19))
    (tmp_path / "too_deep.svc").write_text(_nested_loops(20))
    result = run_to_end(["run", str(tmp_path / "deep.svc")])
    assert (result.returncode, result.stdout, result.stderr) == (0, "1\n", "")
    result = run_to_end(["check", str(tmp_path / "too_deep.svc")])
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "too_deep.svc:22:" in result.stderr and "loops nested too deeply: at most 19" in result.stderr


def test_ok_and_error_make_an_optional_result(tmp_path):
    prog = _write(tmp_path / "opt.svc", """
        def pick(good: bool) -> Result[i64, Error]?:
            if good:
                return ok(1)
            return error("bad")

        def main():
            let none: Result[i64, Error]? = None
            for r in [pick(True), pick(False), none]:
                match r:
                    case Some(v):
                        match v:
                            case Ok(n): print("ok " + str(n))
                            case Err(e): print("err " + error_message(e))
                    case None: print("none")
    """)
    result = run_to_end(["run", str(prog)])
    assert (result.returncode, result.stdout, result.stderr) == (0, "ok 1\nerr bad\nnone\n", "")


def test_a_server_started_with_its_standard_streams_closed_stops_with_exit_0(tmp_path):
    """`svcc run prog <&- >&-`: the listening socket must not take descriptor 0 or 1, which
    libuv refuses to close (an assertion that aborts the process at shutdown)."""
    port = free_port()
    command = " ".join(shlex.quote(part) for part in svcc() + ["run", "examples/hello/hello.svc"])
    stderr = tmp_path / "stderr.txt"
    with open(stderr, "wb") as err:
        process = subprocess.Popen(["bash", "-c", f"exec <&- >&- {command}"], cwd=REPO, stderr=err,
                                   env={**os.environ, "SVC_PORT": str(port)})
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline and process.poll() is None, stderr.read_text()
                time.sleep(0.1)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0, stderr.read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert "Assertion" not in stderr.read_text()


def test_err_from_main_and_fault_in_main_exit_1(tmp_path):
    prog = _write(tmp_path / "err.svc", """
        async def main() -> Result[unit, Error]:
            return not_found("nothing to do")
    """)
    result = run_to_end(["run", str(prog)])
    assert (result.returncode, result.stderr) == (1, "error: nothing to do\n")
    prog = _write(tmp_path / "fault.svc", """
        def divide(a: i64, b: i64) -> i64:
            return a / b

        def main():
            print(str(divide(1, 0)))
    """)
    result = run_to_end(["run", str(prog)])
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith("error: division by zero") and "fault.svc:3" in result.stderr


def test_missing_file_is_a_usage_error(tmp_path):
    result = run_to_end(["run", str(tmp_path / "nope.svc")])
    assert result.returncode == 2 and result.stderr.startswith("error: ")


def test_project_mode_resolves_the_database_in_the_project(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    _write(project / "svc.toml", """
        entry = "app.svc"
    """)
    _write(project / "models.svc", """
        class Note:
            id: i64
            text: str
    """)
    _write(project / "app.svc", """
        import "models.svc"

        @get("/notes/{id}")
        async def note(db: Db, id: i64) -> Result[Note?, Error]:
            return await db_one[Note](db, "SELECT id, text FROM notes WHERE id = ?1", id)

        async def main() -> Result[unit, Error]:
            port = try parse_i64(env("SVC_PORT", "8080"))
            db = try await db_open("notes.sqlite")
            try await db_exec(db, "CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)")
            try await db_exec(db, "INSERT OR REPLACE INTO notes VALUES (1, 'first')")
            return await serve(db, port)
    """)
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    server = start(["--project", str(project)], cwd=elsewhere)
    try:
        assert server.request("GET", "/notes/1").json() == {"id": 1, "text": "first"}
        assert server.request("GET", "/notes/2").status == 404
    finally:
        assert server.stop() == 0
    assert (project / "notes.sqlite").exists() and not (elsewhere / "notes.sqlite").exists()
