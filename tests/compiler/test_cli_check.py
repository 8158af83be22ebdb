"""`svcc check` as a user runs it: a real subprocess, exit codes, stdout/stderr formats."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SVCC = [sys.executable, "-m", "svc.cli"]
GOOD = "def main():\n    print(\"hi\")\n"


def svcc(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(SVCC + list(args), cwd=cwd, capture_output=True, text=True,
                          timeout=60)


def test_a_good_program_prints_one_ok_line(tmp_path: Path) -> None:
    (tmp_path / "hello.svc").write_text(GOOD)
    result = svcc("check", "hello.svc", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok: hello.svc") and result.stdout.count("\n") == 1
    assert result.stderr == ""


def test_errors_are_rendered_with_file_line_col_source_and_caret(tmp_path: Path) -> None:
    (tmp_path / "bad.svc").write_text(
        "def main():\n    x = 1 +\n    s = \"a\\qb\"\n    if x > 1\n        pass\n")
    result = svcc("check", "bad.svc", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    expected_first = (
        "error: expected an expression, found end of line\n"
        " --> bad.svc:2:12\n"
        "  |\n"
        "2 |     x = 1 +\n"
        "  |            ^\n")
    assert result.stderr.startswith(expected_first)
    assert " --> bad.svc:3:11\n" in result.stderr and "  |           ^^\n" in result.stderr
    assert " --> bad.svc:4:13\n" in result.stderr
    assert result.stderr.rstrip().endswith("error: 3 errors in bad.svc")


def test_diagnostics_are_sorted_by_file_line_and_column(tmp_path: Path) -> None:
    (tmp_path / "main.svc").write_text('import "z.svc"\ndef main():\n    x = )\n')
    (tmp_path / "z.svc").write_text("class Z:\n    a i64\n")
    result = svcc("check", "main.svc", cwd=tmp_path)
    assert result.returncode == 1
    locations = [line.split("--> ")[1] for line in result.stderr.splitlines() if "--> " in line]
    assert locations == ["main.svc:3:9", "z.svc:2:7"]
    assert result.stderr.rstrip().endswith("error: 2 errors in 2 files")


def test_project_mode(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "svc.toml").write_text('entry = "main.svc"\n')
    (tmp_path / "app" / "main.svc").write_text(GOOD)
    result = svcc("check", "--project", "app", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok: app/main.svc")


def test_project_config_error_points_into_svc_toml(tmp_path: Path) -> None:
    (tmp_path / "svc.toml").write_text('entry = "main.svc"\nport = 80\n')
    (tmp_path / "main.svc").write_text(GOOD)
    result = svcc("check", "--project", ".", cwd=tmp_path)
    assert result.returncode == 1
    assert "error: unknown key 'port' in svc.toml" in result.stderr
    assert "svc.toml:2:1" in result.stderr and "2 | port = 80" in result.stderr


@pytest.mark.parametrize("args, message", [
    (["check", "missing.svc"], "error: cannot find file 'missing.svc'"),
    (["check", "--project", "nowhere"], "error: project folder 'nowhere' does not exist"),
    (["check", "--project", "."], "error: no svc.toml in project folder '.'"),
    (["check", "sub"], "error: 'sub' is not a file"),
])
def test_usage_errors_exit_2_with_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "sub").mkdir()
    result = svcc(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == message


@pytest.mark.parametrize("args", [["check"], ["check", "--bogus", "x.svc"],
                                  ["check", "a.svc", "--project", "d"]])
def test_bad_flags_exit_2(tmp_path: Path, args: list[str]) -> None:
    result = svcc(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert "usage:" in result.stderr and "Traceback" not in result.stderr


def test_binary_garbage_is_a_diagnostic_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "junk.svc").write_bytes(bytes(range(256)) * 4)
    result = svcc("check", "junk.svc", cwd=tmp_path)
    assert result.returncode == 1
    assert "invalid UTF-8" in result.stderr and "Traceback" not in result.stderr


def test_invalid_utf8_shows_the_line_and_a_caret_under_the_bad_byte(tmp_path: Path) -> None:
    (tmp_path / "u.svc").write_bytes(b'def main():\n    x = "ab\xff\x1b"\n')
    result = svcc("check", "u.svc", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.splitlines()[:5] == [
        "error: invalid UTF-8 (byte 0xFF): source files must be UTF-8",
        " --> u.svc:2:12",
        "  |",
        '2 |     x = "ab\ufffd\ufffd"',  # control characters are not sent to the terminal
        "  |            ^",
    ]


def test_control_characters_quoted_in_a_message_are_escaped(tmp_path: Path) -> None:
    (tmp_path / "r.svc").write_text('@get("/x\\n\\r\\u{1b}")\nasync def a() -> Result[unit, Error]:\n'
                                    '    return ok(())\n\n' + GOOD)
    result = svcc("check", "r.svc", cwd=tmp_path)
    assert result.returncode == 1
    first, second = result.stderr.splitlines()[:2]
    assert first.startswith("error: malformed route path '/x\\n\\r\\x1b': it has a bad character")
    assert second == " --> r.svc:1:6"
    assert not any(c in result.stderr for c in "\r\x1b")


def test_a_reader_that_stops_early_ends_svcc_quietly(tmp_path: Path) -> None:
    """`svcc check --emit-python ... | head -1`: no "internal compiler error", no traceback."""
    big = tmp_path / "big.svc"  # its Python is far more than a pipe holds: the pipe must break
    subprocess.run([sys.executable, str(ROOT / "tests/helpers/large_program.py"), str(big), "3000"],
                   check=True, timeout=60)
    command = " ".join(SVCC + ["check", "--emit-python", str(big)])
    result = subprocess.run(["bash", "-c", f"{command} | head -1; exit ${{PIPESTATUS[0]}}"],
                            cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stderr) == (1, "")
    assert result.stdout.startswith("# --- ")


def test_emit_python_prints_the_generated_modules(tmp_path: Path) -> None:
    (tmp_path / "hello.svc").write_text(GOOD)
    result = svcc("check", "--emit-python", "hello.svc", cwd=tmp_path)
    assert "Traceback" not in result.stderr
    assert result.returncode == 0, result.stderr
    assert "# --- hello.svc ---" in result.stdout and "def main" in result.stdout


def test_the_task_manager_example_checks(tmp_path: Path) -> None:
    result = svcc("check", "--project", str(ROOT / "examples" / "tasks"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok: ") and "2 files" in result.stdout


def test_the_routes_run_again_after_a_clash_are_named_and_the_others_say_why(tmp_path: Path):
    program = (ROOT / "bench" / "ledger.svc").read_text()
    (tmp_path / "ledger.svc").write_text(program)
    result = svcc("check", "ledger.svc", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1:] == [
        "retried after a clash: POST /transfers, POST /transfers-in-order",
        "not retried after a clash: POST /transfers-logged (log_info at ledger.svc:40 writes a "
        "log line)"]
