"""Which error kinds a function can return: the builtins that make errors, followed through
every function it calls.

`svcc openapi` uses it to list the statuses a route can answer (401, 403, 404, 409 only where
the handler can make them). An `Err` is made by a builtin (`not_found(..)`, a database call)
and can be passed on by any caller (`try`, `fail(e)`, returning it), so the kinds a function
can return are those made by the builtins it calls, directly or through the functions it
calls. That over-approximates (a branch never taken still counts) and never misses a kind.
The walk over the call graph, `reachable_calls`, also finds the `respond` calls whose
statuses `svcc openapi` lists.
"""

from __future__ import annotations

from typing import Callable, Iterator

from svc.compiler.front import syntax
from svc.compiler.program import CheckedProgram, FunctionInfo

#: The database builtins: errors of kind database (500), busy (503), timeout (504); a
#: UNIQUE, PRIMARY KEY or FOREIGN KEY violation is `conflict`, NOT NULL and CHECK `invalid`.
DATABASE_BUILTINS = frozenset({"db_open", "db_exec", "db_all", "db_one", "db_begin",
                               "db_commit", "db_rollback", "db_migrate"})
DATABASE_KINDS = frozenset({"database", "busy", "timeout", "conflict", "invalid"})

#: Builtins that make an error of one kind.
_MAKES = {"error": "invalid", "not_found": "not_found", "internal_error": "internal",
          "conflict": "conflict", "unauthorized": "unauthorized", "forbidden": "forbidden"}


def error_kinds(program: CheckedProgram, function: str) -> frozenset[str]:
    """The kinds of the errors `function` can return (or pass on from what it calls)."""
    kinds: set[str] = set()
    for call in reachable_calls(program, function):
        if call.call_kind == "builtin":
            kinds |= _builtin_kinds(call.target or "")
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


def _builtin_kinds(name: str) -> frozenset[str]:
    if name in DATABASE_BUILTINS:
        return DATABASE_KINDS
    if name in _MAKES:
        return frozenset({_MAKES[name]})
    return frozenset()


def _calls(root: syntax.Node) -> Iterator[syntax.Call]:
    """Every call in a declaration's body."""
    return (node for node in syntax.walk(root) if isinstance(node, syntax.Call))
