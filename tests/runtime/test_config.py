"""Typed configuration in process: the value rules (svc.rules.config_values), and a compiled program's
`config[T]()` read at start (svc.runtime.lib.config) from a given environment and svc.toml's
`[config]`, every bad input a line naming the key, never an environment variable's value.
The same through real `svcc run` processes is in tests/e2e/test_config_and_ready.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from svc.rules.config_values import env_name, from_env, from_toml, is_secret
from svc.rules.contract import I32_MAX, I64_MAX, I64_MIN
from svc.pipeline import Compiled, Target, compile
from svc.runner import load_namespace
from svc.runtime.lib import config as runtime_config

# --- the rules --------------------------------------------------------------------------------


def test_a_field_reads_the_prefixed_upper_case_variable() -> None:
    assert env_name("max_items") == "SVC_CONFIG_MAX_ITEMS"
    assert env_name("apiURL") == "SVC_CONFIG_APIURL"


@pytest.mark.parametrize("name, secret", [
    ("api_token", True), ("db_password", True), ("session_secret", True), ("api_key", True),
    ("token", True), ("PASSWORD", True), ("Stripe_Key", True),
    ("max_items", False), ("tokens", False), ("keyboard", False), ("key_count", False),
    ("passwords_allowed", False), ("greeting", False),
])
def test_secrets_are_named_by_their_last_word(name: str, secret: bool) -> None:
    assert is_secret(name) is secret


@pytest.mark.parametrize("text, kind, expected", [
    ("42", "i64", 42), ("-7", "i64", -7), ("+7", "i64", 7), ("007", "i64", 7),
    (str(I64_MAX), "i64", I64_MAX), (str(I64_MIN), "i64", I64_MIN),
    (str(I32_MAX), "i32", I32_MAX),
    ("2.5", "f64", 2.5), ("-1e-3", "f64", -0.001), ("7", "f64", 7.0), (".5", "f64", 0.5),
    ("true", "bool", True), ("TRUE", "bool", True), ("1", "bool", True), ("yes", "bool", True),
    ("On", "bool", True), ("false", "bool", False), ("0", "bool", False), ("no", "bool", False),
    ("off", "bool", False),
    ("", "str", ""), (" spaced ", "str", " spaced "), ("é ✓", "str", "é ✓"),
    ("fast", "enum", "fast"),
])
def test_environment_texts_that_read(text: str, kind: str, expected: object) -> None:
    ok, value = from_env(text, kind, ("fast", "slow"))
    assert ok and value == expected and type(value) is type(expected)


@pytest.mark.parametrize("text, kind, why", [
    ("abc", "i64", "an i64"), ("", "i64", "an i64"), ("1.5", "i64", "decimal digits"),
    (" 1", "i64", "an i64"), ("1_000", "i64", "an i64"), ("٣", "i64", "an i64"),
    (str(I64_MAX + 1), "i64", "out of range"), (str(I64_MIN - 1), "i64", "out of range"),
    ("9" * 5000, "i64", "out of range"), (str(I32_MAX + 1), "i32", "out of range"),
    ("nan", "f64", "finite"), ("inf", "f64", "finite"), ("1e999", "f64", "finite"),
    ("", "f64", "an f64"), ("maybe", "bool", "a bool"), ("", "bool", "a bool"),
    ("2", "bool", "a bool"), ("FAST", "enum", "one of fast, slow"), ("", "enum", "one of"),
])
def test_environment_texts_that_do_not_read_say_why_without_the_text(text: str, kind: str,
                                                                     why: str) -> None:
    ok, message = from_env(text, kind, ("fast", "slow"))
    assert not ok and why in str(message)
    if len(text) > 2 and not text.lstrip("-").isdigit():  # the range's bounds are digits
        assert text not in str(message)


@pytest.mark.parametrize("value, kind, expected", [
    (5, "i64", 5), (I64_MAX, "i64", I64_MAX), (-3, "i32", -3), (1.5, "f64", 1.5),
    (2, "f64", 2.0), (True, "bool", True), ("x", "str", "x"), ("slow", "enum", "slow"),
])
def test_toml_values_that_fit(value: object, kind: str, expected: object) -> None:
    ok, got = from_toml(value, kind, ("fast", "slow"))
    assert ok and got == expected and type(got) is type(expected)


@pytest.mark.parametrize("value, kind, why", [
    ("5", "i64", 'found the string "5"'), (True, "i64", "found the boolean true"),
    (1.0, "i64", "found the float 1.0"), (I64_MAX + 1, "i64", "(out of range)"),
    (I32_MAX + 1, "i32", "(out of range)"), (10**400, "f64", "(out of range)"),
    (float("inf"), "f64", "found the float inf"), (float("nan"), "f64", "found the float nan"),
    ("true", "bool", 'found the string "true"'), (1, "bool", "found the integer 1"),
    (5, "str", "found the integer 5"), ({"a": 1}, "str", "found a table"),
    ([1], "i64", "found an array"), ("Fast", "enum", "one of fast, slow"),
])
def test_toml_values_that_do_not_fit_say_what_was_found(value: object, kind: str,
                                                        why: str) -> None:
    ok, message = from_toml(value, kind, ("fast", "slow"))
    assert not ok and why in str(message), message


# --- a compiled program, read at start ---------------------------------------------------------

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
