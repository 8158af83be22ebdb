"""Module-level constants and enums: their declarations (docs/reference/language.md,
"Constants" and "Enums").

A constant of type `Topic[T]` declares a topic instead: its value is `topic("name")`
(check/live_types.py). Any other constant's value is built from literals only (numbers, strings, bools, `None`, lists, class
instances, enum members, `Some(...)`), so it is known before any code runs and cannot depend
on the order in which files run or on a database. It is checked like any expression, against
its declared type, by the body checker of a stand-in function without parameters. Where a
constant is used, and why it cannot be changed, is the body checker's part (`body.py`).
"""

from __future__ import annotations

from svc.compiler.check import live_types
from svc.compiler.check.body import BodyChecker
from svc.compiler.check.context import CheckContext
from svc.compiler.front import syntax
from svc.compiler.program import ConstInfo, FunctionInfo
from svc.compiler.svctypes import (
    UNIT, UNKNOWN, EnumRef, TopicOf, Type, format_type, is_json_type,
)


def enum_type(decl: syntax.EnumDef) -> EnumRef:
    return EnumRef(decl.name, tuple(decl.members))


def check_enum(ctx: CheckContext, decl: syntax.EnumDef) -> syntax.EnumDef:
    """An enum has members, each named once."""
    if not decl.members:
        ctx.error(f"enum {decl.name} has no members", decl.name_span)
    seen: set[str] = set()
    for member, span in zip(decl.members, decl.member_spans):
        if member in seen:
            ctx.error(f"member '{member}' is declared twice in enum {decl.name}", span)
        seen.add(member)
    return decl


def check_constants(ctx: CheckContext) -> None:
    """Resolve and check every constant, in declaration order, into `program.constants`."""
    for name, d in ctx.definitions.items():
        if isinstance(d.decl, syntax.ConstDef):
            ctx.program.constants[name] = _check_constant(ctx, d.decl, d.file)


def _check_constant(ctx: CheckContext, decl: syntax.ConstDef, file: str) -> ConstInfo:
    t = ctx.resolve_type(decl.annotation, file)
    if isinstance(t, TopicOf):  # a topic's declaration: `NAME: Topic[T] = topic("name")`
        live_types.check_topic_constant(ctx, decl, t)
        return ConstInfo(decl.name, t, decl, file)
    if t == UNKNOWN and live_types.is_topic_call(decl.value):  # its Topic[T] was reported
        return ConstInfo(decl.name, t, decl, file)
    if t != UNKNOWN and (t == UNIT or not is_json_type(t, ctx.field_types)):
        ctx.error(f"constant '{decl.name}' cannot be {format_type(t)}: a constant holds "
                  "numbers, str, bool, enum members, lists, class instances or T? of them "
                  "(or declares a topic: NAME: Topic[T] = topic(\"name\"))",
                  decl.annotation.span)
        t = UNKNOWN
    culprit = _not_literal(decl.value, ctx, file)
    if culprit is not None:
        ctx.error(f"the value of constant '{decl.name}' must be built from literals (numbers, "
                  "strings, bools, None, lists, class instances, enum members); "
                  f"{_describe(culprit)} is computed at run time: compute it in a function",
                  culprit.span)
        return ConstInfo(decl.name, t, decl, file)
    BodyChecker(ctx, _stand_in(decl, file)).expect(decl.value, t, f"constant '{decl.name}': ")
    return ConstInfo(decl.name, t, decl, file)


def _stand_in(decl: syntax.ConstDef, file: str) -> FunctionInfo:
    """The function a constant's value is checked in: no parameters, nothing to return."""
    fn = syntax.FunctionDef(decl.span, f"constant {decl.name}", decl.name_span, [], None, [],
                            False)
    return FunctionInfo(fn.name, [], UNIT, False, fn, file)


def _not_literal(e: syntax.Expr, ctx: CheckContext, file: str) -> syntax.Expr | None:
    """The first part of `e` that is not built from literals, or None."""
    if isinstance(e, (syntax.IntLit, syntax.FloatLit, syntax.StrLit, syntax.BoolLit,
                      syntax.NoneLit)):
        return None
    if isinstance(e, syntax.Unary) and e.op == "-" and isinstance(
            e.operand, (syntax.IntLit, syntax.FloatLit)):
        return None
    if isinstance(e, syntax.FString):
        return next((p for p in e.parts if not isinstance(p, str)), None)
    if isinstance(e, syntax.ListLit):
        return next((c for c in (_not_literal(x, ctx, file) for x in e.elements)
                     if c is not None), None)
    if isinstance(e, syntax.Attribute) and isinstance(e.value, syntax.Name):
        d = ctx.lookup(e.value.id, file)
        return None if d is not None and d.kind == "enum" else e
    if isinstance(e, syntax.Call) and isinstance(e.func, syntax.Name):
        d = ctx.lookup(e.func.id, file)
        if (d is not None and d.kind == "class") or (d is None and e.func.id == "Some"):
            parts = list(e.args) + [k.value for k in e.keywords]
            return next((c for c in (_not_literal(x, ctx, file) for x in parts)
                         if c is not None), None)
    return e


def _describe(e: syntax.Expr) -> str:
    if isinstance(e, syntax.Call) and isinstance(e.func, syntax.Name):
        return f"a call of '{e.func.id}'"
    if isinstance(e, syntax.Await):
        return "an await"
    if isinstance(e, syntax.Name):
        return f"a use of the name '{e.id}'"
    return "this expression"

