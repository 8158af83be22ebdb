"""Field rules: `@length`, `@range`, `@pattern` and `@one_of` above a class's fields.

The compiler checks where a rule may stand and its literal arguments (compiler/check/
field_rules.py); generated code hands each class's checked rules to the runtime as plain
tuples (`__svc_rules__`); binding and `json_decode[T]` test decoded values with them
(field_checks.py) and `svcc openapi` describes them. The tests and the messages are here, once,
so what the compiler accepts, what the server answers and what the document says cannot
disagree (docs/reference/language.md, "Field rules").
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

from svc.rules import patterns

LENGTH, RANGE, PATTERN, ONE_OF = "length", "range", "pattern", "one_of"
#: The rules, in the order messages list them.
RULE_NAMES = (LENGTH, RANGE, PATTERN, ONE_OF)
#: What `@length` counts: the UTF-8 bytes of a str (as `len` does), the bytes of a bytes
#: value, or a list's elements.
BYTES, ITEMS = "bytes", "items"


class Rule(NamedTuple):
    """One checked rule: its name, its literal arguments, and for `@length` what it counts.

    A tuple of constants, so generated code writes it as a literal."""

    name: str
    args: tuple[Any, ...]
    counts: str = ""


def message(rule: Rule) -> str:
    """What a failing value is told: `must be 1 to 240 bytes long`."""
    if rule.name == LENGTH:
        low, high = rule.args
        if rule.counts == ITEMS:
            return f"must have {low} to {high} items"
        return f"must be {low} to {high} bytes long"
    if rule.name == RANGE:
        return f"must be between {_number(rule.args[0])} and {_number(rule.args[1])}"
    if rule.name == PATTERN:
        return f"must match {rule.args[0]}"
    return "must be one of: " + ", ".join(str(v) for v in rule.args)


def _number(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def test_of(rule: Rule) -> Callable[[Any], bool]:
    """The test a value (never None: a `T?` field's rule applies to a present value) passes."""
    if rule.name == LENGTH:
        low, high = rule.args
        if rule.counts == BYTES:
            return lambda v: low <= len(v.encode("utf-8") if v.__class__ is str else v) <= high
        return lambda v: low <= len(v) <= high
    if rule.name == RANGE:
        low, high = rule.args
        return lambda v: low <= v <= high
    if rule.name == PATTERN:
        compiled = patterns.compiled(rule.args[0])
        return lambda v: compiled.fullmatch(v) is not None
    allowed = frozenset(rule.args)
    return lambda v: v in allowed
