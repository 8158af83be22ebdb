"""Field rules: `@length`, `@range`, `@pattern` and `@one_of` above a class's fields.

Each rule is checked against its field's type and its literal arguments; a rule that passes
is written into its `syntax.FieldRule.rule` as the plain `svc.rules.field_rules.Rule` that code
generation emits and `svcc openapi` describes. Every mistake is a diagnostic at the rule's
line: an unknown name, a rule on a type it does not fit, a non-literal argument, a minimum
over the maximum, a pattern RE2 refuses, the same rule twice on one field.

A generic class's rules are checked once, on the class as written (a field of type `T` takes
no rule but `@length` on a `List[T]`); its instantiations share its syntax, so its rules.
"""

from __future__ import annotations

from typing import Any

from svc.compiler.check.context import CheckContext
from svc.compiler.front import syntax
from svc.compiler.program import CheckedProgram, ClassInfo
from svc.compiler.svctypes import (
    BYTES, F64, I32, I64, STR, ClassRef, ListOf, Opt, Type, format_type, held_type,
)
from svc.rules import patterns
from svc.rules.contract import INT_RANGES
from svc.rules.field_rules import (
    BYTES as COUNTS_BYTES, ITEMS, LENGTH, ONE_OF, PATTERN, RANGE, RULE_NAMES, Rule,
)

#: Where each rule may stand, for messages.
_FITS = {LENGTH: "a str, bytes or List field", RANGE: "an i64, i32 or f64 field",
         PATTERN: "a str field", ONE_OF: "a str or i64 field"}
_NAMES_TEXT = "@length, @range, @pattern or @one_of"


def check_field_rules(ctx: CheckContext) -> None:
    """Every declared class's rules (generic classes as written, not per instantiation)."""
    program = ctx.program
    classes = [info for name, info in program.classes.items() if "[" not in name]
    for info in classes + list(program.generic_classes.values()):
        types = dict(info.fields)
        for f in info.decl.fields:
            if f.rules and f.name in types:
                _check_field(ctx, info, f, types[f.name])


def _check_field(ctx: CheckContext, info: ClassInfo, f: syntax.Field, t: Type) -> None:
    seen: set[str] = set()
    inner = t.inner if isinstance(t, Opt) else t
    for node in f.rules:
        if node.name not in RULE_NAMES:
            ctx.error(f"unknown field rule '@{node.name}' (expected {_NAMES_TEXT})", node.span)
            continue
        if node.name in seen:
            ctx.error(f"field '{f.name}' has @{node.name} twice: one rule of each kind per "
                      "field", node.span)
            continue
        seen.add(node.name)
        problem = _fit_problem(node.name, inner)
        if problem is None:
            problem = _argument_problem(node, inner)
        if problem is not None:
            ctx.error(f"@{node.name} on field '{f.name}' of class {info.name}: {problem}",
                      node.span)
            continue
        node.rule = _rule(node, inner)


def _fit_problem(name: str, t: Type) -> str | None:
    """Why a rule does not fit a field of type `t` (a `T?` field's inner type), or None."""
    fits = {LENGTH: t in (STR, BYTES) or isinstance(t, ListOf),
            RANGE: t in (I64, I32, F64),
            PATTERN: t == STR,
            ONE_OF: t in (STR, I64)}[name]
    return None if fits else f"it applies to {_FITS[name]}, not {format_type(t)}"


def _argument_problem(node: syntax.FieldRule, t: Type) -> str | None:
    """Why the rule's arguments are not what it takes, or None."""
    args = node.args
    if any(not isinstance(a, (syntax.IntLit, syntax.FloatLit, syntax.StrLit)) for a in args):
        return ("its arguments must be literals (a rule is checked with the program, "
                "before it runs)")
    if node.name in (LENGTH, RANGE):
        return _bounds_problem(node.name, args, t)
    if node.name == PATTERN:
        return _pattern_problem(args)
    return _choices_problem(args, t)


def _bounds_problem(name: str, args: list[syntax.Expr], t: Type) -> str | None:
    if len(args) != 2:
        return f"it takes two arguments, the minimum and the maximum: @{name}(1, 100)"
    kind: type[syntax.Expr] = syntax.IntLit
    what = "integer" if name == LENGTH else format_type(t)
    if name != LENGTH and t == F64:
        kind, what = syntax.FloatLit, "f64"
    if not all(isinstance(a, kind) for a in args):
        return f"its bounds must be {what} literals"
    low, high = (a.value for a in args)  # type: ignore[attr-defined]
    if name == LENGTH and low < 0:
        return "a length cannot be negative"
    if t in (I64, I32) and name == RANGE:
        lowest, highest = INT_RANGES[t.name]
        if not (lowest <= low <= highest and lowest <= high <= highest):
            return f"its bounds must fit in {t.name}"
    if low > high:
        return f"the minimum {low} is over the maximum {high}"
    return None


def _pattern_problem(args: list[syntax.Expr]) -> str | None:
    if len(args) != 1 or not isinstance(args[0], syntax.StrLit):
        return 'it takes one string literal, the pattern: @pattern("[a-z]+")'
    problem = patterns.problem(args[0].value)
    if problem is not None:
        return f"invalid regular expression: {problem.reason}"
    return None


def _choices_problem(args: list[syntax.Expr], t: Type) -> str | None:
    kind, what = (syntax.StrLit, "string") if t == STR else (syntax.IntLit, "integer")
    if not args:
        return "it takes the allowed values: @one_of(\"a\", \"b\")"
    if not all(isinstance(a, kind) for a in args):
        return f"its values must be {what} literals, like the field"
    values: list[Any] = [a.value for a in args]  # type: ignore[attr-defined]
    twice = next((v for i, v in enumerate(values) if v in values[:i]), None)
    if twice is not None:
        return f"it lists {twice!r} twice"
    return None


def _rule(node: syntax.FieldRule, t: Type) -> Rule:
    values = tuple(a.value for a in node.args)  # type: ignore[attr-defined]
    if node.name == LENGTH:
        return Rule(LENGTH, values, ITEMS if isinstance(t, ListOf) else COUNTS_BYTES)
    return Rule(node.name, values)


def field_rules(decl: syntax.ClassDef) -> dict[str, tuple[Rule, ...]]:
    """A class's checked rules by field (those of its declaration; an instantiation of a
    generic class has its class's)."""
    return {f.name: tuple(r.rule for r in f.rules if r.rule)
            for f in decl.fields if any(r.rule for r in f.rules)}


def has_rules(program: CheckedProgram, t: Type) -> bool:
    """Whether a value of type `t` holds a field with rules: what binding checks in a body,
    and `json_decode[T]` in its value (svcc openapi's 422s)."""
    seen: set[str] = set()
    pending = [t]
    while pending:
        t = pending.pop()
        if isinstance(t, ClassRef) and t.name not in seen and t.name in program.classes:
            seen.add(t.name)
            info = program.classes[t.name]
            if field_rules(info.decl):
                return True
            pending += [ft for _, ft in info.fields]
        held = held_type(t)
        if held is not None:
            pending.append(held)
    return False
