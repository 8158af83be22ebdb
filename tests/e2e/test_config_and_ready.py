"""Operating a program, through real `svcc` processes: typed configuration (`config[T]()` from
svc.toml's `[config]` and `SVC_CONFIG_*` variables, every bad input a clear start-up error,
no secret ever shown), `/ready` on SQLite and PostgreSQL, and `[server] demo_routes = false`
(`/stream` and `/ws` 404 and out of `svcc openapi`)."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from pathlib import Path

import pytest

from tests.helpers.postgres import start_cluster
from tests.helpers.svc_process import run_to_end, start

SECRET = "hunter2-do-not-show"

PROGRAM = """\
enum Mode: fast, careful

class Settings:
    max_items: i64
    greeting: str
    ratio: f64
    verbose: bool
    mode: Mode
    workers: i32?
    api_token: str?

def main():
    s = config[Settings]()
    print(f"max_items={s.max_items} greeting={s.greeting} ratio={s.ratio} verbose={s.verbose}")
    print(f"mode={s.mode} token_given={s.api_token != None}")
    match s.workers:
        case Some(n): print(f"workers={n}")
        case None: print("workers unset")
"""

TOML = """\
entry = "main.svc"

[config]
max_items = 100
greeting = "hello from svc.toml"
ratio = 0.5
verbose = false
mode = "fast"
"""


def project(folder: Path, toml: str = TOML, program: str = PROGRAM) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "svc.toml").write_text(toml)
    (folder / "main.svc").write_text(program)
    return folder


def required_token(type_name: str) -> str:
    """PROGRAM with a required `api_token` of that type."""
    return PROGRAM.replace("api_token: str?", f"api_token: {type_name}").replace(
        "{s.api_token != None}", "True")


def clean_env(**extra: str) -> dict[str, str]:
    """The test process's environment without any SVC_CONFIG_ variable, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_CONFIG_")}
    return {**env, **extra}


def run(args: list[str], env: dict[str, str]):
    import subprocess

    from tests.helpers.svc_process import svcc

    return subprocess.run(svcc() + args, capture_output=True, text=True, env=env, timeout=60)


def assert_clean_failure(result, *needles: str) -> None:
    """Exit status 1, every needle in stderr, no traceback, nothing of main printed, and the
    secret nowhere."""
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    for needle in needles:
        assert needle in result.stderr, result.stderr
    assert "Traceback" not in output and "max_items=" not in result.stdout, output
    assert SECRET not in output


# --- configuration ---------------------------------------------------------------------------

def test_svc_toml_values_and_environment_overrides(tmp_path: Path) -> None:
    folder = project(tmp_path / "app")
    result = run(["run", "--project", str(folder)], clean_env())
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "max_items=100 greeting=hello from svc.toml ratio=0.5 verbose=False",
        "mode=fast token_given=False", "workers unset"]
    env = clean_env(SVC_CONFIG_MAX_ITEMS="-7", SVC_CONFIG_VERBOSE="YES",
                    SVC_CONFIG_MODE="careful", SVC_CONFIG_WORKERS="16",
                    SVC_CONFIG_API_TOKEN=SECRET, SVC_CONFIG_RATIO="2e3",
                    SVC_CONFIG_GREETING="")
    result = run(["run", "--project", str(folder)], env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "max_items=-7 greeting= ratio=2000.0 verbose=True", "mode=careful token_given=True",
        "workers=16"]
    assert SECRET not in result.stdout + result.stderr


def test_a_single_file_reads_the_environment_only(tmp_path: Path) -> None:
    (tmp_path / "alone.svc").write_text(PROGRAM)
    env = clean_env(SVC_CONFIG_MAX_ITEMS="3", SVC_CONFIG_GREETING="hi", SVC_CONFIG_RATIO="1",
                    SVC_CONFIG_VERBOSE="off", SVC_CONFIG_MODE="fast")
    result = run(["run", str(tmp_path / "alone.svc")], env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "max_items=3 greeting=hi ratio=1.0 verbose=False"
    result = run(["run", str(tmp_path / "alone.svc")], clean_env(SVC_CONFIG_MAX_ITEMS="3"))
    assert_clean_failure(
        result, "error: config: no value for Settings.greeting: set the environment variable "
                "SVC_CONFIG_GREETING\n")


@pytest.mark.parametrize("variable, value, needle", [
    ("SVC_CONFIG_MAX_ITEMS", "abc", "SVC_CONFIG_MAX_ITEMS (the environment variable for "
                                    "Settings.max_items) must be an i64"),
    ("SVC_CONFIG_MAX_ITEMS", "9223372036854775808", "(it is out of range)"),
    ("SVC_CONFIG_MAX_ITEMS", "-9223372036854775809", "(it is out of range)"),
    ("SVC_CONFIG_WORKERS", "2147483648", "SVC_CONFIG_WORKERS (the environment variable for "
                                         "Settings.workers) must be an i32"),
    ("SVC_CONFIG_VERBOSE", "maybe", "must be a bool: true, 1, yes, on or false, 0, no, off"),
    ("SVC_CONFIG_RATIO", "nan", "must be an f64 (a finite number)"),
    ("SVC_CONFIG_RATIO", "", "must be an f64"),
    ("SVC_CONFIG_MODE", "FAST", "must be one of fast, careful (a member's name, exactly)"),
])
def test_a_bad_environment_value_stops_the_program_without_showing_it(
        tmp_path: Path, variable: str, value: str, needle: str) -> None:
    folder = project(tmp_path / "app")
    result = run(["run", "--project", str(folder)],
                 clean_env(**{variable: value, "SVC_CONFIG_API_TOKEN": SECRET}))
    assert_clean_failure(result, needle, "its value is not shown")
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: config: "), lines
    if value and not value.lstrip("-").isdigit():  # a range's bounds are digits
        assert value not in result.stderr


def test_a_secret_of_the_wrong_type_is_not_shown(tmp_path: Path) -> None:
    folder = project(tmp_path / "app", program=required_token("i64"))
    result = run(["run", "--project", str(folder)], clean_env(SVC_CONFIG_API_TOKEN=SECRET))
    assert_clean_failure(result, "error: config: SVC_CONFIG_API_TOKEN (the environment variable "
                                 "for Settings.api_token) must be an i64")


def test_every_missing_value_is_reported_at_once(tmp_path: Path) -> None:
    folder = project(tmp_path / "app", toml='entry = "main.svc"\n[config]\nratio = 1.5\n',
                     program=required_token("str"))
    result = run(["run", "--project", str(folder)], clean_env())
    assert_clean_failure(result)
    assert result.stderr.splitlines() == [
        "error: config: no value for Settings.max_items: set the environment variable "
        "SVC_CONFIG_MAX_ITEMS, or 'max_items' in svc.toml [config]",
        "error: config: no value for Settings.greeting: set the environment variable "
        "SVC_CONFIG_GREETING, or 'greeting' in svc.toml [config]",
        "error: config: no value for Settings.verbose: set the environment variable "
        "SVC_CONFIG_VERBOSE, or 'verbose' in svc.toml [config]",
        "error: config: no value for Settings.mode: set the environment variable "
        "SVC_CONFIG_MODE, or 'mode' in svc.toml [config]",
        "error: config: no value for Settings.api_token: set the environment variable "
        "SVC_CONFIG_API_TOKEN (a secret: never in svc.toml)",
    ]


@pytest.mark.parametrize("line, needle", [
    ('max_items = "100"', "'max_items' in svc.toml [config] (Settings.max_items) must be an "
                          "i64 (an integer from -9223372036854775808 to 9223372036854775807), "
                          "found the string \"100\""),
    ("max_items = 9223372036854775808", "found the integer 9223372036854775808 (out of range)"),
    ("workers = 2147483648", "(Settings.workers) must be an i32"),
    ("max_items = { value = 1 }", "'max_items' in svc.toml [config] must be a string, integer, "
                                  "float or boolean (what a config[T] field reads), got a table"),
    ("max_items = [1, 2]", "got an array"),
    ("max_items = 2026-01-01", "got a date or time"),
    ('verbose = "true"', "(Settings.verbose) must be a bool, found the string \"true\""),
    ("ratio = inf", "(Settings.ratio) must be an f64 (a finite number), found the float inf"),
    ('mode = "slow"', "(Settings.mode) must be one of fast, careful, found the string \"slow\""),
    ("max_itmes = 3", "no config[T] class has a field 'max_itmes' to read this key of svc.toml "
                      "[config] (config classes: Settings); did you mean 'max_items'?"),
])
def test_a_bad_svc_toml_value_is_a_diagnostic_at_its_key(tmp_path: Path, line: str,
                                                          needle: str) -> None:
    key = line.split(" =")[0]
    lines = [x for x in TOML.splitlines() if not x.startswith(key + " =")] + [line]
    folder = project(tmp_path / "app", toml="\n".join(lines) + "\n")
    for command in ("check", "run"):
        result = run([command, "--project", str(folder)],
                     clean_env(SVC_CONFIG_MAX_ITEMS="5", SVC_CONFIG_API_TOKEN=SECRET))
        assert_clean_failure(result, needle, f" --> {folder / 'svc.toml'}:{len(lines)}:1")


def test_a_secret_written_in_svc_toml_is_refused_without_showing_its_line(tmp_path: Path) -> None:
    folder = project(tmp_path / "app", toml=TOML + f'api_token = "{SECRET}"\n')
    for command in ("check", "run"):
        result = run([command, "--project", str(folder)], clean_env())
        assert_clean_failure(
            result, "'api_token' in svc.toml [config] is a secret (its name's last word is "
                    "secret, password, token or key): secrets come from the environment only; "
                    "set SVC_CONFIG_API_TOKEN there and remove it here",
            f" --> {folder / 'svc.toml'}:9:1")


def test_svcc_test_reads_the_configuration_before_each_test(tmp_path: Path) -> None:
    folder = project(tmp_path / "app")
    (folder / "main_test.svc").write_text(
        'from "main.svc" import Settings\n\ndef test_reads():\n'
        "    s = config[Settings]()\n    assert_eq(s.max_items, 41)\n")
    result = run(["test", "--project", str(folder)], clean_env(SVC_CONFIG_MAX_ITEMS="41"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed, 0 failed" in result.stdout
    result = run(["test", "--project", str(folder)], clean_env(SVC_CONFIG_MAX_ITEMS="x"))
    assert result.returncode == 1
    assert "FAIL test_reads" in result.stdout and "SVC_CONFIG_MAX_ITEMS" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr
