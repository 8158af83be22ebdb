"""Checking one function body: its statements, and that it returns on every path.

Expressions are checked in `expressions.py` and calls in `calls.py`; `BodyChecker`
builds on both and adds the statements: declarations and assignments, conditions, loops (with
their nesting limit), returns and matches. Lets, assignments, loops and matches get the
annotations the code generator relies on (see syntax.py, "checker:").
"""

from __future__ import annotations

from svc.compiler import builtin_table as B
from svc.compiler.front import syntax
from svc.compiler.check.calls import CallChecker
from svc.compiler.check.expressions import fmt
from svc.compiler.source import Span
from svc.compiler.svctypes import (
    BOOL, ERROR, I64, NONE, NUMBERS, STR, UNIT, UNKNOWN, EnumRef, ListOf, MapOf, Opt, ResultOf,
    Type,
)

#: CPython refuses more than 20 statically nested blocks in one function ("too many
#: statically nested blocks"); a function that uses `try` is wrapped in one more.
MAX_NESTED_LOOPS = 19


def terminates(stmts: list[syntax.Stmt]) -> bool:
    """Whether control can never fall off the end of `stmts`: it ends in a `return`, an
    if/else or a match whose every branch terminates, or a `while True` without `break`."""
    return any(_terminates(s) for s in stmts)


def _terminates(s: syntax.Stmt) -> bool:
    if isinstance(s, syntax.Return):
        return True
    if isinstance(s, syntax.If):
        return bool(s.orelse) and terminates(s.body) and terminates(s.orelse)
    if isinstance(s, syntax.Match):
        return bool(s.cases) and all(terminates(c.body) for c in s.cases)
    if isinstance(s, syntax.While):
        return isinstance(s.test, syntax.BoolLit) and s.test.value and not _breaks(s.body)
    return False


def _breaks(stmts: list[syntax.Stmt]) -> bool:
    """Whether a `break` in `stmts` leaves the loop they are the body of."""
    for s in stmts:
        if isinstance(s, syntax.Break):
            return True
        if isinstance(s, syntax.If) and (_breaks(s.body) or _breaks(s.orelse)):
            return True
        if isinstance(s, syntax.Match) and any(_breaks(c.body) for c in s.cases):
            return True
    return False


class BodyChecker(CallChecker):
    """Checks the statements of one function; `check()` is the entry point."""

    def check(self) -> None:
        body = self.fn.decl.body
        self.statements(body)
        if self.fn.returns not in (UNIT, UNKNOWN) and not terminates(body):
            self.error(f"missing return: '{self.fn.name}' returns {fmt(self.fn.returns)} but "
                       "its body can reach the end without a return", self.fn.decl.name_span)

    def block(self, stmts: list[syntax.Stmt], bindings: tuple = ()) -> None:
        """A nested block: its declarations (and `bindings`) end with it."""
        self.scopes.append({})
        for name, t, span in bindings:
            self.declare(name, t, span)
        self.statements(stmts)
        self.scopes.pop()

    # --- statements --------------------------------------------------------------------------

    def statements(self, stmts: list[syntax.Stmt]) -> None:
        for s in stmts:
            getattr(self, "s_" + type(s).__name__)(s)

    def s_ExprStmt(self, s: syntax.ExprStmt) -> None:
        self.expr(s.expr)

    def s_Pass(self, s: syntax.Pass) -> None:
        pass

    def s_Break(self, s: syntax.Stmt) -> None:
        if self.loops == 0:
            word = "break" if isinstance(s, syntax.Break) else "continue"
            self.error(f"'{word}' outside a loop", s.span)

    s_Continue = s_Break

    def s_Let(self, s: syntax.Let) -> None:
        t = self.ctx.resolve_type(s.annotation, self.file)
        s.declared_type = t
        self.expect(s.value, t, f"variable '{s.name}': ")
        self.declare(s.name, t, s.name_span)

    def s_Assign(self, s: syntax.Assign) -> None:
        target = s.target
        if self.assigns_constant(target):
            self.expr(s.value)
            return
        if isinstance(target, syntax.Name):
            known = self.lookup(target.id)
            if known is not None:
                s.declares = False
                target.ref, target.type = "local", known
                self.refer_local(target.id, target.span)
                self.expect(s.value, known, f"variable '{target.id}': ")
                return
            t = self.expr(s.value)
            if t == NONE:
                self.error(f"cannot tell the type of '{target.id}' from None; declare it: "
                           f"let {target.id}: T? = None", s.value.span)
                t = UNKNOWN
            s.declares = True
            target.ref, target.type = "local", t
            self.declare(target.id, t, target.span)
            return
        s.declares = False
        t, what = self.target_type(target)
        self.expect(s.value, t, what)

    def assigns_constant(self, target: syntax.Expr) -> bool:
        """Whether `target` is (part of) a module-level constant, which cannot change
        (reported here)."""
        root = target
        while isinstance(root, (syntax.Attribute, syntax.Index)):
            root = root.value
        if not isinstance(root, syntax.Name) or self.lookup(root.id) is not None:
            return False
        d = self.ctx.lookup(root.id, self.file)
        if d is None or d.kind != "const":
            return False
        self.expr(target)
        if root is target:
            self.error(f"cannot assign to constant '{root.id}'", target.span)
        else:
            self.error(f"cannot change constant '{root.id}'; a variable set from it holds a "
                       f"copy that can change (v = {root.id})", target.span)
        return True

    def s_AugAssign(self, s: syntax.AugAssign) -> None:
        if self.assigns_constant(s.target):
            self.expr(s.value)
            return
        t, what = self.target_type(s.target)
        allowed = NUMBERS + (STR,) if s.op == "+" else NUMBERS
        if t != UNKNOWN and t not in allowed:
            kinds = "a number or str" if s.op == "+" else "a number"
            self.error(f"operator '{s.op}=' needs {kinds}, found {fmt(t)}", s.target.span)
            t = UNKNOWN
        self.expect(s.value, t, what)

    def target_type(self, target: syntax.Expr) -> tuple[Type, str]:
        """The type an assignment target holds, and how messages name it. Only variables,
        fields and list elements can be assigned (str and bytes are immutable)."""
        t = self.expr(target)
        if isinstance(target, syntax.Name):
            return t, f"variable '{target.id}': "
        if isinstance(target, syntax.Attribute):
            return t, f"field '{target.attr}' of {fmt(target.value.type)}: "
        if isinstance(target, syntax.Index):
            container = target.value.type
            if container == UNKNOWN or isinstance(container, ListOf):
                return t, "list element: "
            self.error(f"cannot assign into {fmt(container)}: only list elements can be "
                       "assigned", target.span)
            return UNKNOWN, ""
        self.error("only a variable, a field (x.f) or a list element (xs[i]) can be assigned",
                   target.span)
        return UNKNOWN, ""

    def s_If(self, s: syntax.If) -> None:
        self.condition(s.test)
        self.block(s.body)
        if s.orelse:
            self.block(s.orelse)

    def s_While(self, s: syntax.While) -> None:
        self.condition(s.test)
        self.enter_loop(s.span)
        self.block(s.body)
        self.loops -= 1

    def enter_loop(self, span: Span) -> None:
        """Python compiles at most 20 nested blocks per function; one is kept for `try`."""
        if self.loops == MAX_NESTED_LOOPS:
            self.error(f"loops nested too deeply: at most {MAX_NESTED_LOOPS} loops may enclose "
                       "each other in one function; move the inner ones into a function", span)
        self.loops += 1

    def condition(self, test: syntax.Expr) -> None:
        self.expect(test, BOOL, "condition: ")

    def s_For(self, s: syntax.For) -> None:
        it = s.iter
        if (isinstance(it, syntax.Call) and isinstance(it.func, syntax.Name)
                and it.func.id == B.RANGE and self.lookup(B.RANGE) is None):
            s.iter_kind = "range"
            elem = self.range_call(it, it.func)
        else:
            s.iter_kind = "list"
            t = self.expr(it)
            if isinstance(t, ListOf):
                elem = t.elem
            elif isinstance(t, MapOf):  # its keys, in insertion order
                s.iter_kind, elem = "map", STR
            else:
                if t != UNKNOWN:
                    self.error(f"cannot iterate over {fmt(t)}: a for loop needs a List, a Map "
                               "or range(...)", it.span)
                elem = UNKNOWN
        self.enter_loop(s.span)
        self.block(s.body, ((s.var, elem, s.var_span),))
        self.loops -= 1

    def range_call(self, call: syntax.Call, func: syntax.Name) -> Type:
        """`range(..)` as a for loop's iterable (`func` is the call's name `range`)."""
        func.ref, call.call_kind, call.target = "builtin", "builtin", B.RANGE
        self.no_keywords_or_type_args(call, "range")
        if not 1 <= len(call.args) <= 2:
            self.error(f"range takes 1 or 2 arguments (range(n) or range(a, b)), found "
                       f"{len(call.args)}", call.span)
        for i, arg in enumerate(call.args):
            self.expect(arg, I64, f"argument {i + 1} of range: ")
        call.type = ListOf(I64)
        return I64

    def s_Return(self, s: syntax.Return) -> None:
        want = self.fn.returns
        if s.value is None:
            if want not in (UNIT, UNKNOWN):
                self.error(f"missing return value: '{self.fn.name}' returns {fmt(want)}", s.span)
            return
        self.expect(s.value, want, "return value: ")

    def s_Match(self, s: syntax.Match) -> None:
        t = self.expr(s.subject)
        arms: dict[str, Type | None]  # each case's kind → the type it binds (None: binds none)
        if isinstance(t, ResultOf):
            s.subject_kind, arms = "result", {"Ok": t.ok, "Err": ERROR}
        elif isinstance(t, Opt):
            s.subject_kind, arms = "optional", {"Some": t.inner, "None": None}
        elif isinstance(t, EnumRef):
            s.subject_kind, arms = "enum", {f"{t.name}.{m}": None for m in t.members}
            self.refer_members(s.cases)
        else:
            if t != UNKNOWN:
                self.error(f"cannot match on {fmt(t)}: match needs a Result, an optional (T?) "
                           "or an enum", s.subject.span)
            arms = {}
        seen: set[str] = set()
        for case in s.cases:
            p = case.pattern
            bind_type = arms.get(p.kind, UNKNOWN)
            if arms and p.kind not in arms:
                names = [f"{k}(...)" if v is not None else k for k, v in arms.items()]
                expected = ", ".join(names[:-1]) + " and " + names[-1]
                self.error(f"case {p.kind} cannot match {fmt(t)}; use {expected}", p.span)
            elif p.kind in seen:
                self.error(f"duplicate case {p.kind}", p.span)
            seen.add(p.kind)
            bindings = ((p.binding, bind_type, p.binding_span or p.span),) if p.binding else ()
            self.block(case.body, bindings)
        missing = [k for k in arms if k not in seen]
        if missing:
            start = s.span
            self.error(f"match on {fmt(t)} does not cover case {' or '.join(missing)}",
                       Span(start.file, start.line, start.col, start.line, start.col + 5))

    def refer_members(self, cases: list[syntax.Case]) -> None:
        """Record where the enum and member of each `case Role.admin:` are defined."""
        for case in cases:
            p = case.pattern
            d = self.ctx.lookup(p.enum or "", self.file)
            if d is None or not isinstance(d.decl, syntax.EnumDef) or p.member is None:
                continue
            at = p.span
            self.ctx.refer(Span(at.file, at.line, at.col, at.line, at.col + len(d.decl.name)),
                           d.decl.name_span)
            if p.member in d.decl.members:
                self.ctx.refer(Span(at.file, at.end_line, at.end_col - len(p.member),
                                    at.end_line, at.end_col),
                               d.decl.member_spans[d.decl.members.index(p.member)])
