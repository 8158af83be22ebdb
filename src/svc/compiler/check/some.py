"""`Some(x)` as an expression: the value `x` as a `T?` (docs/reference/language.md,
"Optional values").

At run time a `T?` is the value or None, so `Some(x)` is `x` itself; what the checker adds is
the type, from the context when there is one (`let v: i64? = Some(3)`, `return Some(x)`) and
from `x` otherwise. There is no `T??`: `Some` of a value that may already be None (`Some(None)`,
`Some(v)` with `v: T?`) is an error, since it could not be told apart from `None`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from svc.compiler.front import syntax
from svc.compiler.svctypes import NONE, UNIT, UNKNOWN, Opt, ResultOf, Type, format_type

if TYPE_CHECKING:
    from svc.compiler.check.calls import CallChecker

SOME = "Some"


def some_call(checker: "CallChecker", call: syntax.Call, expected: Type | None) -> Type:
    """Check `Some(x)` (`call.func` is the name `Some`, not a user definition)."""
    assert isinstance(call.func, syntax.Name)
    call.func.ref, call.call_kind, call.target = "builtin", "some", SOME
    checker.no_keywords_or_type_args(call, SOME)
    if len(call.args) != 1 or call.keywords:
        if not call.keywords:
            checker.error(f"Some takes 1 argument, found {len(call.args)}", call.span)
        for arg in call.args:
            checker.expr(arg)
        return UNKNOWN
    arg = call.args[0]
    want = expected.inner if isinstance(expected, Opt) else None
    if want is not None and not isinstance(want, Opt):
        t = checker.expect(arg, want, "argument of Some: ")
        return expected if t != UNKNOWN else UNKNOWN  # type: ignore[return-value]
    t = checker.expr(arg)
    problem = _problem(t)
    if problem:
        checker.error(problem, arg.span)
        return UNKNOWN
    return UNKNOWN if t == UNKNOWN else Opt(t)


def _problem(t: Type) -> str | None:
    if t == NONE:
        return "Some(None) is not a value: an optional holds a value or None; write None"
    if isinstance(t, Opt):
        return (f"Some needs a value, found {format_type(t)}, which may be None already "
                f"(there is no {format_type(t)}?); use it as it is")
    if t == UNIT or (isinstance(t, ResultOf) and (t.ok == UNIT or isinstance(t.ok, Opt))):
        return f"Some cannot hold {format_type(t)}: '{format_type(t)}?' is not a valid type"
    return None
