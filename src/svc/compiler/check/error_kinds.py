"""Which error kinds a function can return: the builtins that make errors, followed through
every function it calls.

`svcc openapi` uses it to list the statuses a route can answer (401, 403, 404, 409 only where
the handler can make them). An `Err` is made by a builtin (`not_found(..)`, a database call;
its record in compiler/builtin_table.py says which kinds) and can be passed on by any caller
(`try`, `fail(e)`, returning it), so the kinds a function can return are those made by the
builtins it calls, directly or through the functions it calls. That over-approximates (a
branch never taken still counts) and never misses a kind.
The walk over the call graph, `reachable_calls`, also finds the `respond` calls whose
statuses `svcc openapi` lists.
"""

from __future__ import annotations

from typing import Callable, Iterator

from svc.compiler.builtin_table import BUILTINS
from svc.compiler.front import syntax
from svc.compiler.program import CheckedProgram, FunctionInfo

def error_kinds(program: CheckedProgram, function: str) -> frozenset[str]:
    """The kinds of the errors `function` can return (or pass on from what it calls)."""
    kinds: set[str] = set()
    for call in reachable_calls(program, function):
        if call.call_kind == "builtin" and call.target in BUILTINS:
            kinds |= BUILTINS[call.target].errors
    return frozenset(kinds)


def reachable_calls(program: CheckedProgram, function: str,
                    follow: Callable[[FunctionInfo], bool] = lambda info: True,
                    ) -> Iterator[syntax.Call]:
    """Every call in `function`'s body and in the bodies of the functions it calls, directly
    or not, each function once. A called function is entered only when `follow` says so
    (`svcc openapi` follows only the functions that return a Response to find `respond`)."""
    seen: set[str] = set()
    todo = [function]
    while todo:
        name = todo.pop()
        info = program.functions.get(name)
        if name in seen or info is None or (name != function and not follow(info)):
            continue
        seen.add(name)
        for call in _calls(info.decl):
            if call.call_kind in ("function", "async_function") and call.target:
                todo.append(call.target)
            yield call


def _calls(root: syntax.Node) -> Iterator[syntax.Call]:
    """Every call in a declaration's body."""
    return (node for node in syntax.walk(root) if isinstance(node, syntax.Call))
