"""A guarded route as generated code: one function per guarded route that runs its guards,
then its handler (docs/reference/language.md, "Guards").

    def _svc_guarded_3(_svc_a0, _svc_a1):        # the route's parameters, in Route order
        _svc_gv0 = require_user(_svc_a1)          # each guard, in order (`await` when async)
        if isinstance(_svc_gv0, _svc_SvcError):
            return _svc_gv0                       # its Err is the route's answer
        return get_me(_svc_a0, _svc_gv0)          # the handler, guard values by parameter

The route list names this function instead of the handler, so the runtime serves a guarded
route like any other: one call, its Err answered by the same error path as a handler's, a
fault in a guard logged as a handler's is. It is a plain `def` (served by `CallNow`) when the
handler and every guard have a plain-def twin or are plain functions, else an `async def`.
The `_svc_gv<i>` locals are the one place the guards' Ok values live during a request.

A guard with a limit in svc.toml's `[guard_limits]` is followed by its check, which answers
429 (an Err) once that value's bucket is empty (svc.runtime.traffic.gate.guard_limit):

        _svc_gl0 = _svc_gate.guard_limit("require_user", _svc_gv0)
        if _svc_gl0 is not None:
            return _svc_gl0
"""

from __future__ import annotations

import ast
from typing import Callable

from svc.compiler.codegen.pyast import PREFIX, call, name, store
from svc.compiler.program import RouteInfo

#: A function's Python name to call, and whether it is a plain function (a plain-def twin
#: or a `def`), called without `await`.
Callee = Callable[[str], tuple[str, bool]]


def wrapper_name(index: int) -> str:
    """The generated function of the `index`-th route (in table order)."""
    return f"{PREFIX}guarded_{index}"


def guard_value(index: int) -> str:
    """The local holding the Ok value of the route's `index`-th guard."""
    return f"{PREFIX}gv{index}"


def wrapper(route: RouteInfo, index: int, callee: Callee, svc_error: ast.expr,
            limited: frozenset[str] = frozenset(), limiter: ast.expr | None = None) -> ast.stmt:
    """The function that runs `route`'s guards, then its handler; after each guard named in
    `limited`, a call of `limiter` (svc.runtime.traffic.gate.guard_limit) with its value."""
    args = [f"{PREFIX}a{i}" for i in range(len(route.params))]
    by_name = {p.name: a for p, a in zip(route.params, args)}
    plain = all(callee(g.guard)[1] for g in route.guards) and callee(route.handler)[1]

    def argument(source: str | int) -> ast.expr:
        return name(guard_value(source) if isinstance(source, int) else by_name[source])

    def invoke(function: str, sources: tuple[str | int, ...]) -> ast.expr:
        py_name, is_plain = callee(function)
        value: ast.expr = call(name(py_name), [argument(s) for s in sources])
        return value if is_plain else ast.Await(value=value)

    body: list[ast.stmt] = []
    for i, use in enumerate(route.guards):
        body.append(ast.Assign(targets=[store(guard_value(i))],
                               value=invoke(use.guard, use.args)))
        failed = call(name("isinstance"), [name(guard_value(i)), svc_error])
        body.append(ast.If(test=failed, body=[ast.Return(value=name(guard_value(i)))],
                           orelse=[]))
        if use.guard in limited and limiter is not None:
            over = f"{PREFIX}gl{i}"
            body.append(ast.Assign(targets=[store(over)], value=call(
                limiter, [ast.Constant(use.guard), name(guard_value(i))])))
            refused = ast.Compare(left=name(over), ops=[ast.IsNot()],
                                  comparators=[ast.Constant(None)])
            body.append(ast.If(test=refused, body=[ast.Return(value=name(over))], orelse=[]))
    body.append(ast.Return(value=invoke(route.handler, route.handler_args)))
    arguments = ast.arguments(posonlyargs=[], args=[ast.arg(arg=a) for a in args], vararg=None,
                              kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    cls = ast.FunctionDef if plain else ast.AsyncFunctionDef
    return cls(name=wrapper_name(index), args=arguments, body=body, decorator_list=[],
               returns=None, type_comment=None)
