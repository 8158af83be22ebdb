"""Typed configuration: the rules `config[T]()` reads values by, shared by the compiler (which
checks `svc.toml`'s `[config]` table) and the runtime (which reads the environment at start).

A configuration class's field `max_items` takes its value from

1. the environment variable `SVC_CONFIG_MAX_ITEMS` (the field's name in upper case, after the
   prefix `SVC_CONFIG_`), as text converted to the field's type; else
2. the key `max_items` of `svc.toml`'s `[config]` table, a TOML value of the field's type;
   else
3. nothing: `None` for a `T?` field, an error naming the key for any other.

A field is a *secret* when its name, in lower case, is `secret`, `password`, `token` or `key`,
or ends in `_secret`, `_password`, `_token` or `_key`: its value may come from the
environment only (`svc.toml` holding such a key is a compile error). No value that came from
the environment is ever shown in a message, secret or not.

Plain data and functions only: nothing here imports the compiler or the runtime, so both can.
A field is described by a `FieldSpec` tuple, `(name, kind, optional, members)`: `kind` is
`i64`, `i32`, `f64`, `bool`, `str` or `enum` (whose member names are `members`).
"""

from __future__ import annotations

import math
import re
from typing import Union

from svc.rules.contract import INT_RANGES

#: The environment variable of field `name` is this prefix and the name in upper case.
ENV_PREFIX = "SVC_CONFIG_"
#: The last `_`-separated word (or the whole name) that makes a field a secret.
SECRET_WORDS = ("secret", "password", "token", "key")
#: Field kinds a configuration class may have (and `T?` of them).
KINDS = ("i64", "i32", "f64", "bool", "str", "enum")
#: Texts the environment may give a bool field (compared in lower case).
TRUE_TEXTS = ("true", "1", "yes", "on")
FALSE_TEXTS = ("false", "0", "no", "off")

#: (field name, kind, optional, enum member names (empty unless kind is "enum"))
FieldSpec = tuple[str, str, bool, tuple[str, ...]]
#: A value a field can hold: what `svc.toml` may give and the environment converts to.
Value = Union[int, float, bool, str]

_INT_TEXT = re.compile(r"[+-]?[0-9]+", re.ASCII)
_FLOAT_TEXT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


def env_name(field: str) -> str:
    """The environment variable a field reads: `max_items` → `SVC_CONFIG_MAX_ITEMS`."""
    return ENV_PREFIX + field.upper()


def is_secret(name: str) -> bool:
    """Whether a field (or an svc.toml key) of this name is a secret (environment only)."""
    last = name.lower().rpartition("_")[2]
    return last in SECRET_WORDS


def describe(kind: str, members: tuple[str, ...] = ()) -> str:
    """What a value of `kind` is, for messages: `an i64 (an integer from ... to ...)`."""
    if kind in INT_RANGES:
        low, high = INT_RANGES[kind]
        return f"an {kind} (an integer from {low} to {high})"
    if kind == "f64":
        return "an f64 (a finite number)"
    if kind == "bool":
        return "a bool"
    if kind == "enum":
        return f"one of {', '.join(members)}"
    return "a str"


def toml_type(value: object) -> str:
    """A TOML value's type in words: `the string "abc"`, `a table`, `the integer 5`."""
    if isinstance(value, bool):
        return f"the boolean {'true' if value else 'false'}"
    if isinstance(value, int):
        return f"the integer {_cut(str(value))}"
    if isinstance(value, float):
        return f"the float {_cut(repr(value))}"
    if isinstance(value, str):
        return f"the string {_cut(_quoted(value))}"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return "a date or time"


def from_toml(value: object, kind: str, members: tuple[str, ...] = ()) -> tuple[bool, object]:
    """`(True, the field's value)` for a TOML value that fits the kind, else `(False, why)`:
    the words after "must be". TOML values are typed: an integer for i64 and i32 (in range),
    an integer or a finite float for f64, a boolean for bool, a string for str, a string
    naming a member for an enum. Nothing is converted from a string."""
    fits = False
    if kind in INT_RANGES:
        fits = isinstance(value, int) and not isinstance(value, bool)
        if fits:
            low, high = INT_RANGES[kind]
            if not low <= value <= high:  # type: ignore[operator]
                return False, f"{describe(kind)}, found {toml_type(value)} (out of range)"
    elif kind == "f64":
        if isinstance(value, int) and not isinstance(value, bool):
            try:
                return True, float(value)
            except OverflowError:
                return False, f"{describe(kind)}, found {toml_type(value)} (out of range)"
        fits = isinstance(value, float) and math.isfinite(value)
    elif kind == "bool":
        fits = isinstance(value, bool)
    elif kind == "str":
        fits = isinstance(value, str)
    elif kind == "enum":
        fits = isinstance(value, str) and value in members
    if fits:
        return True, value
    return False, f"{describe(kind, members)}, found {toml_type(value)}"


def from_env(text: str, kind: str, members: tuple[str, ...] = ()) -> tuple[bool, object]:
    """`(True, the field's value)` for an environment variable's text that reads as the kind,
    else `(False, why)`, the words after "must be" (never quoting the text). An empty text is
    a value like any other: the empty str, and not a number or a bool."""
    if kind == "str":
        return True, text
    if kind in INT_RANGES:
        if _INT_TEXT.fullmatch(text):
            low, high = INT_RANGES[kind]
            digits = text.lstrip("+-").lstrip("0")
            if len(digits) <= 20 and low <= int(text) <= high:
                return True, int(text)
            return False, f"{describe(kind)} (it is out of range)"
        return False, f"{describe(kind)}, written in decimal digits with an optional sign"
    if kind == "f64":
        if _FLOAT_TEXT.fullmatch(text) and math.isfinite(float(text)):
            return True, float(text)
        return False, f"{describe(kind)}, written like 2.5, -1e-3 or 7"
    if kind == "bool":
        lowered = text.lower()
        if lowered in TRUE_TEXTS:
            return True, True
        if lowered in FALSE_TEXTS:
            return True, False
        return False, (f"a bool: {', '.join(TRUE_TEXTS)} or {', '.join(FALSE_TEXTS)} "
                       "(any case)")
    if text in members:
        return True, text
    return False, f"{describe(kind, members)} (a member's name, exactly)"


def _quoted(text: str) -> str:
    shown = text.encode("unicode_escape").decode("ascii").replace('"', '\\"')
    return f'"{shown}"'


def _cut(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
