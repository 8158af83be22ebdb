"""Which routes are safe to run again after their transaction clashed with another one.

A clash (SQLSTATE 40P01 deadlock, 40001 serialization failure, 55P03 lock not released in
time) rolls the transaction back whole. Running the handler again then repeats nothing, as
long as the transaction was the only thing it did that lasts: so a route is `retried` when,
following every call of its guards and handler down to the builtins:

- no builtin with an `effect` is called (builtin_table: an outbound call, a log line, a line
  on standard output, a schema change, ...), and no `@python` function (its Python code may
  do anything);
- nothing is written outside a transaction: `db_exec` given the `Db`, `db_all`/`db_one`
  given the `Db` with SQL that is not a known `SELECT`, `enqueue` given the `Db` (given the
  `Tx`, a job is part of the transaction);
- at most one transaction is begun per request: one `db_begin` on any path, none in a loop
  (a transaction committed before a second one clashed would be committed twice);
- no guard of the route has a `[guard_limits]` limit (a run again would take a second token);
- and it does begin one (without a transaction there is no clash to run it again for).

Anything not proven stays as it is: a clash answers 503 for the client to retry. The
runtime's side is svc.runtime.http.retries.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from functools import cached_property

from svc.compiler.builtin_table import BUILTINS
from svc.compiler.front import syntax
from svc.compiler.program import CheckedProgram, RouteInfo
from svc.compiler.source import Span
from svc.compiler.sql.statements import sql_uses
from svc.compiler.svctypes import DB

#: More than one transaction (counts stop here).
MANY = 2


@dataclass(frozen=True)
class Effect:
    """Something a run again would repeat: the builtin called, what it does, and where."""

    builtin: str
    what: str
    span: Span

    def sentence(self) -> str:
        return f"{self.builtin} at {place(self.span)} {self.what}"


@dataclass(frozen=True)
class Summary:
    """What calling a function may do: its first effect (None: none), and how many
    transactions it may begin (0, 1 or MANY), with the first `db_begin` it reaches."""

    effect: Effect | None = None
    begins: int = 0
    begin: Span | None = None


def place(span: Span) -> str:
    return f"{os.path.basename(span.file)}:{span.line}"


def retry_sentence(route: RouteInfo) -> str | None:
    """What a route's hover says of it: whether it runs again after a clash, and if not,
    why; None for a route that begins no transaction."""
    if route.retried:
        return "run again when its transaction clashes with another one (a deadlock, a " \
               "serialization failure, a lock not released in time)"
    if route.not_retried_because:
        return f"not run again when its transaction clashes: {route.not_retried_because}"
    return None


def mark_retried(program: CheckedProgram) -> None:
    """Set each route's `retried`, or why not (what `svcc check` and hovers say)."""
    effects = _Effects(program)
    limited = set(program.settings.tables.get("guard_limits", {}))
    program.routes = [_marked(route, effects, limited) for route in program.routes]


def _marked(route: RouteInfo, effects: _Effects, limited: set[str]) -> RouteInfo:
    summary = Summary()
    for name in [use.guard for use in route.guards] + [route.handler]:
        summary = _then(summary, effects.function(name, route.span))
    if summary.begins == 0:
        return route  # no transaction: nothing to run again for, nothing to say
    why = _why_not(summary, [use.guard for use in route.guards if use.guard in limited])
    if why is None:
        return replace(route, retried=True)
    return replace(route, not_retried_because=why)


def _why_not(summary: Summary, limited_guards: list[str]) -> str | None:
    if summary.effect is not None:
        return summary.effect.sentence()
    if summary.begins >= MANY:
        where = f" (db_begin at {place(summary.begin)})" if summary.begin else ""
        return f"it may begin more than one transaction{where}"
    if limited_guards:
        return (f"its guard {limited_guards[0]} has a [guard_limits] limit (a run again would "
                f"take a second token)")
    return None


def _then(first: Summary, second: Summary, times: int = 1) -> Summary:
    """`first`, then `second` done `times` times (MANY for a loop)."""
    begins = min(first.begins + second.begins * times, MANY)
    return Summary(first.effect or second.effect, begins, first.begin or second.begin)


class _Effects:
    """Each function's summary, made on first use (a function called again is looked up)."""

    def __init__(self, program: CheckedProgram) -> None:
        self.program = program
        self.summaries: dict[str, Summary] = {}
        self.in_progress: set[str] = set()

    @cached_property
    def reads(self) -> set[int]:
        """The `db_all`/`db_one` calls whose SQL is a known SELECT: found once, when the walk
        first meets one given the Db (a program without such a call never walks its SQL)."""
        return {id(use.call) for use in sql_uses(self.program)
                if use.builtin != "db_exec" and use.sql is not None
                and use.sql.text.lstrip().upper().startswith("SELECT")}

    def function(self, name: str, called_at: Span) -> Summary:
        known = self.summaries.get(name)
        if known is not None:
            return known
        info = self.program.functions.get(name)
        if info is None:
            return Summary()
        if name in self.in_progress:  # recursion: its transactions cannot be counted
            return Summary(Effect(name, "calls itself again", called_at), MANY)
        self.in_progress.add(name)
        summary = self.block(info.decl.body, Summary(), in_loop=False)
        self.in_progress.discard(name)
        self.summaries[name] = summary
        return summary

    def block(self, body: list[syntax.Stmt], summary: Summary, in_loop: bool) -> Summary:
        for stmt in body:
            loops = in_loop or isinstance(stmt, syntax.While)  # its test runs each time
            for expr in syntax.own_expressions(stmt):
                calls = [n for n in syntax.walk(expr) if isinstance(n, syntax.Call)]
                for call in sorted(calls, key=lambda c: (c.span.line, c.span.col)):
                    summary = self.call(call, summary, loops)
            inside = in_loop or isinstance(stmt, (syntax.While, syntax.For))
            for nested in syntax.nested_bodies(stmt):
                summary = self.block(nested, summary, inside)
        return summary

    def call(self, call: syntax.Call, summary: Summary, in_loop: bool) -> Summary:
        times = MANY if in_loop else 1
        python = self.python_effect(call)
        if python is not None:
            return _then(summary, Summary(python))
        if call.call_kind in ("function", "async_function") and call.target is not None:
            return _then(summary, self.function(call.target, call.span), times)
        if call.call_kind != "builtin" or call.target not in BUILTINS:
            return summary  # a class made: nothing done
        name = call.target
        if name == "db_begin":
            return _then(summary, Summary(begins=1, begin=call.span), times)
        what = BUILTINS[name].effect or self.outside_transaction(call)
        if what:
            return _then(summary, Summary(Effect(name, what, call.span)))
        return summary

    def python_effect(self, call: syntax.Call) -> Effect | None:
        """A call of a `@python` function: its Python code may have done anything (written a
        file, called a service), so a run again is not proven harmless."""
        info = self.program.functions.get(call.target or "")
        if call.call_kind != "async_function" or info is None or info.decl.python is None:
            return None
        attr = info.decl.python
        return Effect(info.name, f"calls Python ({attr.module}.{attr.attribute}), which may "
                                 "have done anything a run again would repeat", call.span)

    def outside_transaction(self, call: syntax.Call) -> str:
        """What a database call given the `Db` (not a `Tx`) does that would last: "" for
        none (a known SELECT, any call given a Tx)."""
        if call.target not in ("db_exec", "db_all", "db_one", "enqueue") or not call.args \
                or call.args[0].type != DB:
            return ""
        if call.target == "enqueue":
            return "enqueues a job outside the transaction"
        if id(call) in self.reads:
            return ""
        return "writes outside the transaction (give it the Tx, or make it a SELECT)"
