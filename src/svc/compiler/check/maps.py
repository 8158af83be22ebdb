"""The checker's rules for `Map[str, T]`: the written type and the empty map `Map[str, T]()`.

A map's keys are str (JSON object keys are text, and one key type keeps `get`, `keys` and
iteration simple); its values are any type a class field may hold, except `T?`: `get`
answers `T?`, which could not tell a missing key from a stored None, and `unit`, which holds
nothing. The builtins on maps (`get`, `set`, `keys`, `len`, `contains`) are ordinary records
in builtin_table.py, checked through the MAP and MAP_VALUE parameter kinds.

The functions take what they work on as arguments (the `CheckContext`, or the `CallChecker`
checking a call), so this module imports neither the checker nor the body checker.
"""

from __future__ import annotations

from typing import Callable

from svc.compiler.check import http_types as check_http
from svc.compiler.check.context import CheckContext
from svc.compiler.front import syntax
from svc.compiler.svctypes import (
    NONE, STR, UNIT, UNKNOWN, MapOf, Opt, ResultOf, Type, contains_tx, contains_view,
    format_type,
)

#: The type name this module resolves (reserved: no class may be called Map).
MAP = "Map"

Resolve = Callable[[syntax.TypeExpr, str], Type]


def resolve_map(ctx: CheckContext, resolve: Resolve, texpr: syntax.NamedType,
                file: str) -> Type:
    """`Map[str, T]` as written; UNKNOWN after an error."""
    if len(texpr.args) != 2:
        ctx.error(f"type 'Map' takes two type arguments (Map[str, T]), found {len(texpr.args)}",
                  texpr.span)
        return UNKNOWN
    key, value = (resolve(a, file) for a in texpr.args)
    if UNKNOWN in (key, value):
        return UNKNOWN
    if key != STR:
        ctx.error(f"a Map's keys must be str (Map[str, T]), found {format_type(key)}",
                  texpr.args[0].span)
        return UNKNOWN
    problem = value_problem(value)
    if problem is not None:
        ctx.error(problem, texpr.args[1].span)
        return UNKNOWN
    return MapOf(value)


def value_problem(t: Type) -> str | None:
    """Why `t` cannot be the value type of a Map, or None."""
    if isinstance(t, Opt):
        return (f"a Map's values cannot be optional ({format_type(t)}): get(m, key) answers "
                "T?, which could not tell a missing key from a None value")
    if t in (UNIT, NONE):
        return "a Map's values cannot be unit"
    if isinstance(t, ResultOf):
        return "a Map cannot hold a Result"
    if contains_view(t):
        return "a view cannot be put in a Map (use bytes)"
    if contains_tx(t):
        return "a Tx cannot be put in a Map (pass it to functions instead)"
    return check_http.field_problem(t) or check_http.list_problem(t)


def construct(calls, call: syntax.Call, expected: Type | None) -> Type:
    """`Map[str, T]()`: a new empty map; the type arguments may be left to the context
    (`let m: Map[str, i64] = Map()`)."""
    call.call_kind, call.target = "map", MAP
    if isinstance(call.func, syntax.Name):
        call.func.ref = "builtin"
    if call.args or call.keywords:
        first = call.args[0].span if call.args else call.keywords[0].span
        calls.error("Map[str, T]() makes an empty map and takes no arguments; add entries "
                    "with set(m, key, value)", first)
        calls.skip_args(call)
    want = expected.inner if isinstance(expected, Opt) else expected
    if not call.type_args:
        if isinstance(want, MapOf):
            return want
        if want != UNKNOWN:
            calls.error("an empty map needs its type: Map[str, T]()", call.span)
        return UNKNOWN
    texpr = syntax.NamedType(call.func.span.to(call.type_args[-1].span), MAP, call.type_args)
    t = calls.ctx.resolve_type(texpr, calls.file)
    call.type_arg_types = [t]
    return t
