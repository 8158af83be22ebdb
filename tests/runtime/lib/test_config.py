"""Typed configuration in process: a compiled program's `config[T]()` read at start
(svc.runtime.lib.config) from a given environment and svc.toml's `[config]`, every bad input a
line naming the key, never an environment variable's value. The value rules alone are
tests/rules/test_config_values.py; the same through real `svcc run` processes is
tests/e2e/test_config_and_ready.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from svc.pipeline import Compiled, Target, compile
from svc.runner import load_namespace
from svc.runtime.lib import config as runtime_config


PROGRAM = """\
enum Mode: fast, slow

class Settings:
    max_items: i64
    greeting: str
    ratio: f64?
    mode: Mode
    verbose: bool?
    api_token: str?

class Small:
    workers: i32

def main():
    s = config[Settings]()
    print(f"{s.max_items}")
"""


def namespace(tmp_path: Path, toml: str | None, source: str = PROGRAM) -> dict:
    (tmp_path / "main.svc").write_text(source)
    if toml is not None:
        (tmp_path / "svc.toml").write_text('entry = "main.svc"\n' + toml)
        target = Target(project=str(tmp_path))
    else:
        target = Target(file=str(tmp_path / "main.svc"))
    compiled = compile(target)
    assert isinstance(compiled, Compiled), compiled
    return load_namespace(compiled.code)


def read(ns: dict, environ: dict[str, str]) -> list[str]:
    table = ns["_svc_SETTINGS"].config
    return runtime_config.load((None if table is None else dict(table), ns["_svc_CONFIG"]), environ)


def test_the_environment_wins_over_svc_toml_and_optional_fields_may_be_absent(
        tmp_path: Path) -> None:
    ns = namespace(tmp_path, '[config]\nmax_items = 5\ngreeting = "hi"\nmode = "fast"\n')
    assert read(ns, {"SVC_CONFIG_MAX_ITEMS": "7", "SVC_CONFIG_API_TOKEN": "s3cret"}) == []
    s = runtime_config.config(ns["Settings"])
    assert (s.max_items, s.greeting, s.ratio, s.mode, s.verbose, s.api_token) == (
        7, "hi", None, "fast", None, "s3cret")


def test_each_call_is_a_fresh_instance_of_the_values_read_at_start(tmp_path: Path) -> None:
    ns = namespace(tmp_path, '[config]\nmax_items = 5\ngreeting = "hi"\nmode = "fast"\n')
    assert read(ns, {}) == []
    first = runtime_config.config(ns["Settings"])
    first.max_items = 99
    assert runtime_config.config(ns["Settings"]).max_items == 5


def test_a_program_without_svc_toml_reads_the_environment_only(tmp_path: Path) -> None:
    ns = namespace(tmp_path, None)
    env = {"SVC_CONFIG_MAX_ITEMS": "1", "SVC_CONFIG_GREETING": "", "SVC_CONFIG_MODE": "slow",
           "SVC_CONFIG_RATIO": "0.25", "SVC_CONFIG_VERBOSE": "yes"}
    assert read(ns, env) == []
    s = runtime_config.config(ns["Settings"])
    assert (s.max_items, s.greeting, s.ratio, s.mode, s.verbose) == (1, "", 0.25, "slow", True)


def test_every_problem_is_one_line_naming_the_key_and_where_to_set_it(tmp_path: Path) -> None:
    ns = namespace(tmp_path, None)
    problems = read(ns, {"SVC_CONFIG_MAX_ITEMS": "12abc", "SVC_CONFIG_VERBOSE": "maybe",
                         "SVC_CONFIG_RATIO": "1e999"})
    assert problems == [
        "config: SVC_CONFIG_MAX_ITEMS (the environment variable for Settings.max_items) must "
        "be an i64 (an integer from -9223372036854775808 to 9223372036854775807), written in "
        "decimal digits with an optional sign; its value is not shown",
        "config: no value for Settings.greeting: set the environment variable "
        "SVC_CONFIG_GREETING",
        "config: SVC_CONFIG_RATIO (the environment variable for Settings.ratio) must be an f64 "
        "(a finite number), written like 2.5, -1e-3 or 7; its value is not shown",
        "config: no value for Settings.mode: set the environment variable SVC_CONFIG_MODE",
        "config: SVC_CONFIG_VERBOSE (the environment variable for Settings.verbose) must be a "
        "bool: true, 1, yes, on or false, 0, no, off (any case); its value is not shown",
    ]
    assert not any("12abc" in p or "maybe" in p or "1e999" in p for p in problems)


def test_a_missing_key_of_a_project_names_both_places_and_a_secret_only_one(
        tmp_path: Path) -> None:
    source = PROGRAM.replace("api_token: str?", "api_token: str")
    ns = namespace(tmp_path, "", source)
    problems = read(ns, {"SVC_CONFIG_GREETING": "g", "SVC_CONFIG_MODE": "fast"})
    assert problems == [
        "config: no value for Settings.max_items: set the environment variable "
        "SVC_CONFIG_MAX_ITEMS, or 'max_items' in svc.toml [config]",
        "config: no value for Settings.api_token: set the environment variable "
        "SVC_CONFIG_API_TOKEN (a secret: never in svc.toml)",
    ]


def test_a_secret_with_a_bad_value_is_not_shown(tmp_path: Path) -> None:
    source = PROGRAM.replace("api_token: str?", "api_token: i64")
    ns = namespace(tmp_path, None, source)
    problems = read(ns, {"SVC_CONFIG_MAX_ITEMS": "1", "SVC_CONFIG_GREETING": "g",
                         "SVC_CONFIG_MODE": "fast", "SVC_CONFIG_API_TOKEN": "hunter2-secret"})
    assert len(problems) == 1 and "SVC_CONFIG_API_TOKEN" in problems[0]
    assert "hunter2" not in problems[0]


def test_a_class_read_nowhere_at_start_is_a_fault_not_a_crash(tmp_path: Path) -> None:
    from svc.runtime.lib.support import SvcFault

    ns = namespace(tmp_path, None)
    with pytest.raises(SvcFault, match=r"config\[Settings\]\(\) before the configuration"):
        runtime_config.config(ns["Settings"])


def test_a_program_that_never_calls_config_has_no_table(tmp_path: Path) -> None:
    ns = namespace(tmp_path, None, "def main():\n    print(\"x\")\n")
    assert "_svc_CONFIG" not in ns
