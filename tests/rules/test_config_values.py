"""The value rules of typed configuration (svc.rules.config_values): the environment variable
a field reads, which names are secrets, and which texts (environment) and values (svc.toml)
read as each kind, every refusal saying why without showing the value. A compiled program
reading them at start is tests/runtime/lib/test_config.py."""

from __future__ import annotations

import pytest

from svc.rules.config_values import env_name, from_env, from_toml, is_secret
from svc.rules.contract import I32_MAX, I64_MAX, I64_MIN


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
