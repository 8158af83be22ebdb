"""The rules of guards: `@guard(f)` on a handler and `guard("/prefix", f, ...)` at top level
(docs/reference/language.md, "Guards").

A guard is an svc function run before a route's handler. It takes only what the request
gives without the handler's own path, query or body (`Headers`, `Db`) and the Ok values of the
guards before it; it returns `Result[T, Error]` with T a class or unit. Its Ok value reaches
the handler through the one parameter whose type is exactly that class; its Err is the
route's answer. `build_guard_table` checks the guard functions and the declarations once;
`GuardTable.for_route` (called by routes.py for each route attribute) lists a route's guards
in order and binds their arguments and the handler's guard parameters. Every error names
the guard, the route or the parameter, at the attribute, the prefix or the parameter.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable

from svc.compiler.check.context import suggest
from svc.compiler.diagnostics import Diagnostic
from svc.compiler.front import syntax
from svc.compiler.program import FunctionInfo, GuardUse, ParamInfo, RouteInfo
from svc.compiler.source import Span
from svc.compiler.svctypes import DB, HEADERS, UNIT, UNKNOWN, ClassRef, ResultOf, Type, format_type
from svc.rules.contract import ParamSource
from svc.rules.traffic import ROUTE_METHODS

Report = Callable[[str, Span], None]
#: The names the wrapper gives a Headers or Db that only the guards take.
GUARD_HEADERS = "_svc_headers"
GUARD_DB = "_svc_db_arg"
SIGNATURE = ("a guard takes only Headers, Db and the values of earlier guards (their "
             "classes), and returns Result[T, Error] with T a class or unit")


def covers(prefix: str, path: str) -> bool:
    """Whether `prefix` covers `path`, segment by segment: `/admin` covers `/admin` and
    `/admin/x`, not `/administrator`; `/` covers every path."""
    if prefix == "/":
        return True
    return path == prefix or path.startswith(prefix + "/")


def prefix_problem(prefix: str) -> str | None:
    """Why `prefix` is not a path prefix, or None: literal segments only."""
    if not prefix.startswith("/"):
        return "must start with '/'"
    if prefix != "/" and prefix.endswith("/"):
        return "must not end with '/'"
    if "//" in prefix:
        return "has an empty segment"
    if "{" in prefix or "}" in prefix or "?" in prefix or "#" in prefix:
        return "may hold literal segments only (no '{capture}', '?' or '#')"
    return None


@dataclass
class Prefix:
    """A checked `guard("/prefix", ...)` declaration and whether a route is under it."""

    decl: syntax.GuardDecl
    order: int  # declaration order across the program (load order)
    used: bool = False

    @property
    def methods(self) -> tuple[str, ...]:
        """`methods=[...]` as written; () for every method."""
        return self.decl.methods.names if self.decl.methods is not None else ()

    @property
    def methods_valid(self) -> bool:
        """No `methods=[...]`, or one that names methods of routes (else reported already)."""
        return self.decl.methods is None or bool(self.methods) and all(
            method in ROUTE_METHODS for method in self.methods)

    def guards_route(self, attr: syntax.RouteAttr) -> bool:
        """Whether a route declared by `attr` runs this prefix's guards."""
        return covers(self.decl.prefix, attr.path) and (
            not self.methods or attr.method in self.methods)


@dataclass
class GuardTable:
    """The guard functions that passed their rules (name -> Ok type) and the prefixes."""

    guards: dict[str, FunctionInfo] = field(default_factory=dict)
    values: dict[str, Type] = field(default_factory=dict)
    prefixes: list[Prefix] = field(default_factory=list)

    def givers(self, t: Type) -> list[str]:
        """The guard functions whose Ok value has type `t`."""
        return [name for name, value in self.values.items() if value == t]

    def for_route(self, fn: FunctionInfo, attr: syntax.RouteAttr, report: Report
                  ) -> tuple[tuple[GuardUse, ...], tuple[str | int, ...], FunctionInfo,
                             list[ParamInfo]] | None:
        """The route's guards in order, where the handler's parameters come from, the
        handler with only its request parameters left (for routes.bind_params) and the
        Headers/Db parameters only its guards take; None after a reported error."""
        label = f"{attr.method} {attr.path}"
        attached = self._attached(fn, attr, label, report)
        if attached is None:
            return None
        if not attached:
            return self._unguarded(fn, label, report)
        return self._bind(fn, attached, label, report)

    def _attached(self, fn: FunctionInfo, attr: syntax.RouteAttr, label: str, report: Report
                  ) -> list[tuple[str, Prefix | None, Span]] | None:
        """(guard, prefix or None, span) in run order: prefix guards outer prefix first (in
        declaration order for one prefix), then the handler's `@guard`s top to bottom."""
        found: list[tuple[str, Prefix | None, Span]] = []
        ok = True
        under = [p for p in self.prefixes if p.guards_route(attr)]
        under.sort(key=lambda p: (p.decl.prefix.count("/") if p.decl.prefix != "/" else 0,
                                  p.order))
        wanted: list[tuple[syntax.GuardAttr, Prefix | None, object]] = [
            (g, p, p.decl) for p in under for g in p.decl.guards]
        wanted += [(g, None, fn.decl) for g in fn.decl.guards]
        for p in under:
            p.used = True
        seen: dict[str, tuple[Prefix | None, Span, object]] = {}
        for g, prefix, source in wanted:
            if g.name not in self.guards:
                ok = False  # reported once, where it is named
                continue
            earlier = seen.get(g.name)
            if earlier is not None and earlier[2] is source:
                ok = False  # named twice in one place: reported there (_no_repeats)
            elif earlier is not None:
                where = (f'guard("{earlier[0].decl.prefix}", ...)' if earlier[0] is not None
                         else "@guard") + f" at {_where(earlier[1])}"
                report(f"guard '{g.name}' already applies to {label} (from {where}); a route "
                       "runs each guard once", g.name_span)
                ok = False
                continue
            seen[g.name] = (prefix, g.name_span, source)
            found.append((g.name, prefix, g.name_span))
        return found if ok else None

    def _unguarded(self, fn: FunctionInfo, label: str, report: Report):
        """A route without guards: a parameter asking for a guard's value is an error."""
        for index, (name, t) in enumerate(fn.params):
            givers = self.givers(t) if isinstance(t, ClassRef) else []
            if givers:
                report(f"handler '{fn.name}' takes '{name}: {format_type(t)}', the value of "
                       f"guard '{givers[0]}', but no guard applies to {label}: add "
                       f"@guard({givers[0]}) above it or guard a prefix of its path",
                       fn.decl.params[index].span)
                return None
        return (), (), fn, []

    def _bind(self, fn: FunctionInfo, attached: list[tuple[str, Prefix | None, Span]],
              label: str, report: Report):
        ok = True
        uses: list[GuardUse] = []
        headers = next((n for n, t in fn.params if t == HEADERS), None)
        db = next((n for n, t in fn.params if t == DB), None)
        extra: list[ParamInfo] = []
        for name, prefix, span in attached:
            guard = self.guards[name]
            args: list[str | int] = []
            for pname, t in guard.params:
                if t == HEADERS:
                    if headers is None:
                        headers = GUARD_HEADERS
                        extra.append(ParamInfo(GUARD_HEADERS, ParamSource.HEADERS, HEADERS))
                    args.append(headers)
                elif t == DB:
                    if db is None:
                        db = GUARD_DB
                        extra.append(ParamInfo(GUARD_DB, ParamSource.DB, DB))
                    args.append(db)
                else:
                    index = _giver(uses, t)
                    if index is None:
                        report(f"guard '{name}' takes '{pname}: {format_type(t)}', which no "
                               f"guard before it on {label} gives", span)
                        ok = False
                        break
                    args.append(index)
            uses.append(GuardUse(name, self.values[name], tuple(args), guard.is_async,
                                 prefix.decl.prefix if prefix else None, span,
                                 prefix.methods if prefix else ()))
        handler_args: list[str | int] = []
        request: list[tuple[str, Type]] = []
        for index, (pname, t) in enumerate(fn.params):
            givers = [i for i, u in enumerate(uses) if u.value == t and t != UNIT]
            if len(givers) > 1:
                names = " and ".join(f"'{uses[i].guard}'" for i in givers)
                report(f"handler '{fn.name}' takes '{pname}: {format_type(t)}', which guards "
                       f"{names} both give on {label}: give one of them another class",
                       fn.decl.params[index].span)
                ok = False
            elif givers:
                handler_args.append(givers[0])
            elif isinstance(t, ClassRef) and self.givers(t):
                giver = self.givers(t)[0]
                report(f"handler '{fn.name}' takes '{pname}: {format_type(t)}', the value of "
                       f"guard '{giver}', which does not apply to {label}: add "
                       f"@guard({giver}) above it or guard a prefix of its path",
                       fn.decl.params[index].span)
                ok = False
            else:
                handler_args.append(pname)
                request.append((pname, t))
        if not ok:
            return None
        return tuple(uses), tuple(handler_args), dataclasses.replace(fn, params=request), extra

    def unused_prefixes(self, routes: list[RouteInfo]) -> list[Diagnostic]:
        """A prefix no route is under: a misspelt prefix would guard nothing, silently."""
        paths = sorted({"/".join(r.path.split("/")[:n]) for r in routes
                        for n in range(2, r.path.count("/") + 2)})
        out = []
        for p in self.prefixes:
            if p.used or not p.decl.guards or prefix_problem(p.decl.prefix) is not None \
                    or not p.methods_valid:
                continue
            if p.methods and any(covers(p.decl.prefix, r.path) for r in routes):
                out.append(Diagnostic(f"guard prefix '{p.decl.prefix}' covers no "
                                      f"{' or '.join(p.methods)} route of the program (its "
                                      "routes have other methods)", p.decl.prefix_span))
                continue
            close = suggest(p.decl.prefix, paths)
            out.append(Diagnostic(f"guard prefix '{p.decl.prefix}' covers no route of the "
                                  f"program{close}", p.decl.prefix_span))
        return out


def _giver(uses: list[GuardUse], t: Type) -> int | None:
    for index in range(len(uses) - 1, -1, -1):
        if uses[index].value == t and t != UNIT:
            return index
    return None


def _where(span: Span) -> str:
    return f"{span.file}:{span.line}:{span.col}"


def build_guard_table(modules: list[syntax.Module], functions: dict[str, FunctionInfo],
                      references: dict[Span, Span], diagnostics: list[Diagnostic]) -> GuardTable:
    """Check every guard function named anywhere (once, at its definition) and every
    `guard(...)` declaration and `@guard` attribute; record each guard name's definition
    for editors (`references`)."""
    def report(message: str, span: Span) -> None:
        diagnostics.append(Diagnostic(message, span))

    table = GuardTable()
    refused: set[str] = set()
    named: list[syntax.GuardAttr] = []
    for module in modules:
        for item in module.items:
            if isinstance(item, syntax.GuardDecl):
                _check_decl(item, report)
                table.prefixes.append(Prefix(item, len(table.prefixes)))
                named += item.guards
            elif isinstance(item, syntax.FunctionDef) and item.guards:
                _check_attrs(item, report)
                named += item.guards
    for g in named:
        fn = functions.get(g.name)
        if fn is None:
            report(f"unknown guard '{g.name}': a guard is a function of the program"
                   f"{suggest(g.name, functions)}", g.name_span)
            continue
        references[g.name_span] = fn.decl.name_span
        if g.name in table.guards or g.name in refused:
            continue
        value = _check_guard(fn, report)
        if value is None:
            refused.add(g.name)
        else:
            table.guards[g.name] = fn
            table.values[g.name] = value
    return table


def _check_decl(decl: syntax.GuardDecl, report: Report) -> None:
    problem = prefix_problem(decl.prefix)
    if problem is not None:
        report(f"guard prefix '{decl.prefix}' {problem}", decl.prefix_span)
    _no_repeats(decl.guards, f'guard("{decl.prefix}", ...)', report)
    if decl.methods is not None:
        _check_methods(decl.methods, f'guard("{decl.prefix}", ...)', report)


def _check_methods(methods: syntax.GuardMethods, where: str, report: Report) -> None:
    """`methods=[...]`: at least one, each a route's method in upper case, each once."""
    if not methods.methods:
        report(f"'methods' in {where} names no method: list some, such as methods=[\"POST\"], "
               "or leave it out for every method", methods.span)
    seen: set[str] = set()
    for item in methods.methods:
        if item.value not in ROUTE_METHODS:
            hint = (f": write '{item.value.upper()}'" if item.value.upper() in ROUTE_METHODS
                    else f" (a route's method is one of {', '.join(ROUTE_METHODS)})")
            report(f"'{item.value}' in {where} is not a method of routes{hint}", item.span)
        elif item.value in seen:
            report(f"method '{item.value}' is named twice in {where}", item.span)
        seen.add(item.value)


def _check_attrs(decl: syntax.FunctionDef, report: Report) -> None:
    if not decl.routes:
        report(f"@guard applies to route handlers: '{decl.name}' has no route attribute "
               "(@get(\"/path\"), @post(...), ...)", decl.guards[0].span)
    _no_repeats(decl.guards, f"'{decl.name}'", report)


def _no_repeats(guards: list[syntax.GuardAttr], where: str, report: Report) -> None:
    seen: set[str] = set()
    for g in guards:
        if g.name in seen:
            report(f"guard '{g.name}' is named twice on {where}", g.name_span)
        seen.add(g.name)


def _check_guard(fn: FunctionInfo, report: Report) -> Type | None:
    """The guard's Ok type, or None after reporting why `fn` cannot be a guard."""
    ok = True
    for (name, t), param in zip(fn.params, fn.decl.params):
        if t == UNKNOWN or t in (HEADERS, DB) or isinstance(t, ClassRef):
            continue
        report(f"guard '{fn.name}' cannot take '{name}: {format_type(t)}': {SIGNATURE}",
               param.span)
        ok = False
    returns = fn.returns
    span = fn.decl.returns.span if fn.decl.returns is not None else fn.decl.name_span
    if returns == UNKNOWN:
        return None
    if not isinstance(returns, ResultOf) or not (returns.ok == UNIT
                                                 or isinstance(returns.ok, ClassRef)):
        report(f"guard '{fn.name}' must return Result[T, Error] with T a class or unit, found "
               f"{format_type(returns)}", span)
        return None
    if fn.decl.background:
        report(f"'{fn.name}' is a job or schedule and cannot be a guard", fn.decl.name_span)
        ok = False
    return returns.ok if ok else None
