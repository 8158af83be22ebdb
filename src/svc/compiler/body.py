"""Checking one function body: statements, expressions and builtin calls.

Types flow both ways: `expr(e, expected)` computes an expression's type, and `expected` (the
type the context wants, or None) decides what context-typed expressions mean — an integer
literal where an i32 is wanted is an i32; `ok(v)`, `error(..)`, `None` and `[]` take their
type from it. Every expression node gets its `type`; calls, names, assignments, lets, loops and
matches get the annotations the code generator relies on (see syntax.py, "checker:").

Variables are block scoped and may not shadow one another within a function: generated Python
has one namespace per function, so an inner declaration would clobber the outer variable.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from svc.compiler import builtins as B
from svc.compiler import syntax
from svc.compiler.program import FunctionInfo
from svc.compiler.source import Span
from svc.compiler.types import (
    BOOL, BYTES, ERROR, F64, I32, I64, NONE, NUMBERS, STR, UNIT, UNKNOWN, ClassRef, ListOf, Opt,
    ResultOf, Type, View, contains_view, format_type, is_json_type, is_scalar_or_optional,
)

if TYPE_CHECKING:
    from svc.compiler.checker import Checker

I32_MIN, I32_MAX = -(2**31), 2**31 - 1
ARITHMETIC = ("+", "-", "*", "/", "%")
#: CPython refuses more than 20 statically nested blocks in one function ("too many
#: statically nested blocks"); a function that uses `try` is wrapped in one more.
MAX_NESTED_LOOPS = 19
EQUALITY = ("==", "!=")
ORDERING = ("<", ">", "<=", ">=")
VIEW_BYTES = View(BYTES)
#: The type of `[]` where the context gives no element type (after an error, or compared).
EMPTY_LIST = ListOf(UNKNOWN)


def assignable(src: Type, dst: Type) -> bool:
    """Whether a value of `src` may be used where `dst` is wanted (no implicit conversions:
    only `T` and `None` into `T?`, and bytes lent as a `view[bytes]`)."""
    if src == dst or src == UNKNOWN or dst == UNKNOWN:
        return True
    if isinstance(dst, Opt):
        return src == NONE or assignable(src, dst.inner)
    if src == EMPTY_LIST:
        return isinstance(dst, ListOf)
    return dst == VIEW_BYTES and src == BYTES


def fmt(t: Type) -> str:
    return format_type(t)


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


def _is_context_literal(e: syntax.Expr) -> bool:
    """Literals whose type comes from the other operand: `1`, `-1`, `None`, `[]`."""
    if isinstance(e, syntax.Unary) and e.op == "-":
        e = e.operand
    return isinstance(e, (syntax.IntLit, syntax.NoneLit)) or (
        isinstance(e, syntax.ListLit) and not e.elements)


class BodyChecker:
    def __init__(self, checker: "Checker", fn: FunctionInfo) -> None:
        self.checker = checker
        self.fn = fn
        self.file = fn.file
        self.scopes: list[dict[str, Type]] = [{}]
        self.loops = 0
        for name, t in fn.params:
            self.scopes[0][name] = t

    def error(self, message: str, span: Span) -> None:
        self.checker.error(message, span)

    def check(self) -> None:
        body = self.fn.decl.body
        self.statements(body)
        if self.fn.returns not in (UNIT, UNKNOWN) and not terminates(body):
            self.error(f"missing return: '{self.fn.name}' returns {fmt(self.fn.returns)} but "
                       "its body can reach the end without a return", self.fn.decl.name_span)

    # --- scopes ------------------------------------------------------------------------------

    def lookup(self, name: str) -> Type | None:
        for scope in reversed(self.scopes):
            t = scope.get(name)
            if t is not None:
                return t
        return None

    def declare(self, name: str, t: Type, span: Span) -> None:
        if self.lookup(name) is not None:
            self.error(f"variable '{name}' is already declared in this function", span)
            return
        self.scopes[-1][name] = t

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
        t = self.checker.resolve_type(s.annotation, self.file)
        s.declared_type = t
        self.expect(s.value, t, f"variable '{s.name}': ")
        self.declare(s.name, t, s.name_span)

    def s_Assign(self, s: syntax.Assign) -> None:
        target = s.target
        if isinstance(target, syntax.Name):
            known = self.lookup(target.id)
            if known is not None:
                s.declares = False
                target.ref, target.type = "local", known
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

    def s_AugAssign(self, s: syntax.AugAssign) -> None:
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
            elem = self.range_call(it)
        else:
            s.iter_kind = "list"
            t = self.expr(it)
            if isinstance(t, ListOf):
                elem = t.elem
            else:
                if t != UNKNOWN:
                    self.error(f"cannot iterate over {fmt(t)}: a for loop needs a List or "
                               "range(...)", it.span)
                elem = UNKNOWN
        self.enter_loop(s.span)
        self.block(s.body, ((s.var, elem, s.var_span),))
        self.loops -= 1

    def range_call(self, call: syntax.Call) -> Type:
        call.func.ref, call.call_kind, call.target = "builtin", "builtin", B.RANGE
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
        if isinstance(t, ResultOf):
            s.subject_kind, arms = "result", {"Ok": t.ok, "Err": ERROR}
        elif isinstance(t, Opt):
            s.subject_kind, arms = "optional", {"Some": t.inner, "None": None}
        else:
            if t != UNKNOWN:
                self.error(f"cannot match on {fmt(t)}: match needs a Result or an optional (T?)",
                           s.subject.span)
            arms = {}
        seen: set[str] = set()
        for case in s.cases:
            p = case.pattern
            bind_type = arms.get(p.kind, UNKNOWN)
            if arms and p.kind not in arms:
                expected = " and ".join(f"{k}(...)" if v is not None else k
                                        for k, v in arms.items())
                self.error(f"case {p.kind} cannot match {fmt(t)}; use {expected}", p.span)
            elif p.kind in seen:
                self.error(f"duplicate case {p.kind}", p.span)
            seen.add(p.kind)
            bindings = ((p.binding, bind_type, p.span),) if p.binding else ()
            self.block(case.body, bindings)
        missing = [k for k in arms if k not in seen]
        if missing:
            start = s.span
            self.error(f"match on {fmt(t)} does not cover case {' or '.join(missing)}",
                       Span(start.file, start.line, start.col, start.line, start.col + 5))

    # --- expressions -------------------------------------------------------------------------

    def expr(self, e: syntax.Expr, expected: Type | None = None) -> Type:
        t = getattr(self, "e_" + type(e).__name__)(e, expected)
        e.type = t
        return t

    def expect(self, e: syntax.Expr, want: Type, what: str = "") -> Type:
        """Check `e` where a `want` is required; report "expected X, found Y" otherwise."""
        t = self.expr(e, want)
        if not assignable(t, want):
            self.error(f"{what}expected {fmt(want)}, found {fmt(t)}", e.span)
        return t

    def e_IntLit(self, e: syntax.IntLit, expected: Type | None, value: int | None = None) -> Type:
        if expected == I32 or expected == Opt(I32):
            value = e.value if value is None else value
            if not I32_MIN <= value <= I32_MAX:
                self.error(f"integer literal {value} does not fit i32", e.span)
            return I32
        return I64

    def e_FloatLit(self, e, expected) -> Type:
        return F64

    def e_StrLit(self, e, expected) -> Type:
        return STR

    def e_BoolLit(self, e, expected) -> Type:
        return BOOL

    def e_UnitLit(self, e, expected) -> Type:
        return UNIT

    def e_NoneLit(self, e, expected) -> Type:
        return expected if isinstance(expected, Opt) else NONE

    def e_Name(self, e: syntax.Name, expected) -> Type:
        t = self.lookup(e.id)
        if t is not None:
            e.ref = "local"
            return t
        d = self.checker.lookup(e.id, self.file)
        if d is not None:
            e.ref = d.kind
            how = "call it" if d.kind == "function" else f"construct it with {e.id}(field=...)"
            self.error(f"{d.kind} '{e.id}' is not a value; {how}", e.span)
        elif e.id in B.BUILTINS or e.id == B.RANGE:
            e.ref = "builtin"
            self.error(f"builtin '{e.id}' is not a value; call it", e.span)
        else:
            self.unknown_name(e.id, e.span)
        return UNKNOWN

    def unknown_name(self, name: str, span: Span) -> None:
        hint = self.checker.not_visible_hint(name)
        if not hint:
            names = [n for scope in self.scopes for n in scope]
            names += list(self.checker.visible.get(self.file, ())) + list(B.BUILTINS)
            hint = self.checker.suggest(name, names)
        self.error(f"unknown name '{name}'{hint}", span)

    def e_Attribute(self, e: syntax.Attribute, expected) -> Type:
        t = self.expr(e.value)
        end = e.span
        span = Span(end.file, end.end_line, max(1, end.end_col - len(e.attr)), end.end_line,
                    end.end_col)
        if isinstance(t, ClassRef):
            info = self.checker.program.classes.get(t.name)
            for name, ft in info.fields if info else ():
                if name == e.attr:
                    return ft
            hint = self.checker.suggest(e.attr, [n for n, _ in info.fields] if info else [])
            self.error(f"unknown field '{e.attr}' in class {t.name}{hint}", span)
        elif isinstance(t, Opt) and isinstance(t.inner, ClassRef):
            self.error(f"cannot read field '{e.attr}' of {fmt(t)}, which may be None; match "
                       "on it first (case Some(v):)", span)
        elif t != UNKNOWN:
            hint = "; use try or match to get its value first" if isinstance(t, ResultOf) else ""
            self.error(f"{fmt(t)} has no field '{e.attr}'{hint}", span)
        return UNKNOWN

    def e_Index(self, e: syntax.Index, expected) -> Type:
        t = self.expr(e.value)
        self.expect(e.index, I64, "index: ")
        if isinstance(t, ListOf):
            return t.elem
        if t in (BYTES, VIEW_BYTES):
            return I64
        if t == STR:
            self.error("cannot index a str (len counts UTF-8 bytes; text has no indexing)",
                       e.value.span)
        elif t != UNKNOWN:
            self.error(f"cannot index {fmt(t)}: only a List, bytes or view[bytes]",
                       e.value.span)
        return UNKNOWN

    def e_ListLit(self, e: syntax.ListLit, expected) -> Type:
        want = expected.inner if isinstance(expected, Opt) else expected
        if isinstance(want, ListOf):
            for x in e.elements:
                self.expect(x, want.elem, "list element: ")
            return want
        if not e.elements:
            if expected is None:
                self.error("an empty list needs a declared type: let xs: List[T] = []", e.span)
                return UNKNOWN
            return EMPTY_LIST
        # The element type is that of the first element not typed by context.
        first = next((x for x in e.elements if not _is_context_literal(x)), e.elements[0])
        elem = self.expr(first)
        if elem == NONE:
            self.error("cannot tell the element type of this list; declare it: "
                       "let xs: List[T?] = [...]", e.span)
            elem = UNKNOWN
        if contains_view(elem):
            self.error("a view cannot be put in a list", first.span)
            elem = UNKNOWN
        for x in e.elements:
            if x is not first:
                self.expect(x, elem, "list element: ")
        return ListOf(elem)

    def e_Unary(self, e: syntax.Unary, expected) -> Type:
        if e.op == "not":
            self.expect(e.operand, BOOL, "operand of 'not': ")
            return BOOL
        if isinstance(e.operand, syntax.IntLit):  # `-2147483648` is a valid i32 literal
            t = self.e_IntLit(e.operand, expected, -e.operand.value)
            e.operand.type = t
            return t
        t = self.expr(e.operand, expected)
        if t != UNKNOWN and t not in NUMBERS:
            self.error(f"unary '-' needs a number, found {fmt(t)}", e.operand.span)
            return UNKNOWN
        return t

    def e_Binary(self, e: syntax.Binary, expected) -> Type:
        op = e.op
        if op in ("and", "or"):
            self.expect(e.left, BOOL, f"operand of '{op}': ")
            self.expect(e.right, BOOL, f"operand of '{op}': ")
            return BOOL
        hint = expected if op in ARITHMETIC and expected in NUMBERS else None
        lt, rt = self.operands(e, hint)
        if UNKNOWN in (lt, rt):
            return BOOL if op in EQUALITY + ORDERING else UNKNOWN
        if op in ARITHMETIC:
            return self.arithmetic(e, lt, rt)
        if op in EQUALITY:
            comparable = assignable(lt, rt) or assignable(rt, lt)
            if not comparable:
                self.error(f"operator '{op}' compares values of one type, found {fmt(lt)} and "
                           f"{fmt(rt)}", e.span)
            return BOOL
        if lt != rt or (lt not in NUMBERS and lt != STR):
            self.error(f"operator '{op}' needs two numbers or two str of the same type, found "
                       f"{fmt(lt)} and {fmt(rt)}", e.span)
        return BOOL

    def operands(self, e: syntax.Binary, hint: Type | None) -> tuple[Type, Type]:
        """Both operand types; a context literal (`1`, `None`, `[]`) takes the other side's."""
        if _is_context_literal(e.left) and not _is_context_literal(e.right):
            rt = self.expr(e.right, hint)
            return self.expr(e.left, rt if rt != UNKNOWN else hint), rt
        lt = self.expr(e.left, hint)
        return lt, self.expr(e.right, lt if lt != UNKNOWN else hint)

    def arithmetic(self, e: syntax.Binary, lt: Type, rt: Type) -> Type:
        op = e.op
        if lt == rt and (lt in NUMBERS or (lt == STR and op == "+")):
            return lt
        if lt in NUMBERS and rt in NUMBERS:
            self.error(f"operator '{op}' cannot mix {fmt(lt)} and {fmt(rt)}; convert one side "
                       f"with i64(x), i32(x) or f64(x)", e.span)
        elif op == "+":
            self.error(f"operator '+' needs two numbers or two str, found {fmt(lt)} and "
                       f"{fmt(rt)}", e.span)
        else:
            self.error(f"operator '{op}' needs numbers, found {fmt(lt)} and {fmt(rt)}", e.span)
        return UNKNOWN

    def e_Await(self, e: syntax.Await, expected) -> Type:
        if not self.fn.is_async:
            self.error(f"await outside an async def: '{self.fn.name}' is not async", e.span)
        if not isinstance(e.value, syntax.Call):
            t = self.expr(e.value, expected)
            if t != UNKNOWN:
                self.error("await needs a call of an async function", e.value.span)
            return UNKNOWN
        t = self.call(e.value, expected, awaited=True)
        e.value.type = t
        call = e.value
        is_async = call.call_kind == "async_function" or (
            call.call_kind == "builtin" and B.BUILTINS[call.target].is_async)
        if call.call_kind is not None and not is_async:
            self.error(f"await needs an async call; '{call.target}' is not async", e.span)
        return t

    def e_Try(self, e: syntax.Try, expected) -> Type:
        t = self.expr(e.value)
        if not isinstance(self.fn.returns, ResultOf) and self.fn.returns != UNKNOWN:
            self.error(f"try needs the enclosing function to return a Result; "
                       f"'{self.fn.name}' returns {fmt(self.fn.returns)}", e.span)
        if isinstance(t, ResultOf):
            return t.ok
        if t != UNKNOWN:
            self.error(f"try needs a Result, found {fmt(t)}", e.value.span)
        return UNKNOWN

    # --- calls -------------------------------------------------------------------------------

    def e_Call(self, e: syntax.Call, expected) -> Type:
        return self.call(e, expected, awaited=False)

    def call(self, call: syntax.Call, expected: Type | None, awaited: bool) -> Type:
        func = call.func
        if isinstance(func, syntax.Attribute):  # `xs.append(1)`: one message, not two
            t = self.expr(func.value)
            if func.attr in B.BUILTINS or self.checker.lookup(func.attr, self.file):
                fix = f"write {func.attr}(x, ...) instead of x.{func.attr}(...)"
            else:
                fix = f"'{func.attr}' cannot be called on {fmt(t)}"
            self.error(f"svc has no methods: {fix}", func.span)
            return self.skip_args(call)
        if not isinstance(func, syntax.Name):
            self.expr(func)
            self.error("only a function, class or builtin can be called (by name)", func.span)
            return self.skip_args(call)
        name = func.id
        local = self.lookup(name)
        if local is not None:
            func.ref, func.type = "local", local
            self.error(f"'{name}' is a variable of type {fmt(local)}, not a function", func.span)
            return self.skip_args(call)
        d = self.checker.lookup(name, self.file)
        if d is not None and d.kind == "class":
            func.ref = "class"
            return self.construct(call, name)
        if d is not None:
            func.ref = "function"
            return self.call_function(call, self.checker.program.functions[name], awaited)
        if name in B.BUILTINS:
            func.ref = "builtin"
            return self.call_builtin(call, B.BUILTINS[name], expected, awaited)
        if name == B.RANGE:
            func.ref = "builtin"
            self.error("range(...) can only be the iterable of a for loop", call.span)
            return self.skip_args(call)
        self.unknown_name(name, func.span)
        return self.skip_args(call)

    def skip_args(self, call: syntax.Call) -> Type:
        """Check the arguments of a call that already failed, for their own errors."""
        for arg in call.args:
            self.expr(arg)
        for kw in call.keywords:
            self.expr(kw.value)
        return UNKNOWN

    def no_keywords_or_type_args(self, call: syntax.Call, what: str) -> None:
        if call.keywords:
            self.error(f"{what} takes positional arguments only", call.keywords[0].span)
            for kw in call.keywords:
                self.expr(kw.value)
        if call.type_args:
            self.error(f"{what} takes no type arguments", call.type_args[0].span)

    def arity(self, call: syntax.Call, what: str, count: int, variadic: bool = False) -> bool:
        found = len(call.args)
        if call.keywords:  # already reported as "positional arguments only"
            return False
        if found == count or (variadic and found > count):
            return True
        plural = "argument" if count == 1 else "arguments"
        least = "at least " if variadic else ""
        self.error(f"{what} takes {least}{count} {plural}, found {found}", call.span)
        return False

    def call_function(self, call: syntax.Call, info, awaited: bool) -> Type:
        call.call_kind = "async_function" if info.is_async else "function"
        call.target = info.name
        what = f"function '{info.name}'"
        self.no_keywords_or_type_args(call, what)
        self.arity(call, what, len(info.params))
        for i, arg in enumerate(call.args):
            if i < len(info.params):
                self.expect(arg, info.params[i][1], f"argument {i + 1} of '{info.name}': ")
            else:
                self.expr(arg)
        if info.is_async and not awaited:
            self.error(f"'{info.name}' is async: call it with await {info.name}(...)", call.span)
        return info.returns

    def construct(self, call: syntax.Call, name: str) -> Type:
        call.call_kind, call.target = "class", name
        info = self.checker.program.classes[name]
        fields = dict(info.fields)
        if call.args:
            self.error(f"class {name} is built with keywords only: "
                       f"{name}({', '.join(f + '=...' for f in fields)})", call.args[0].span)
            for arg in call.args:
                self.expr(arg)
        if call.type_args:
            self.error(f"class {name} takes no type arguments", call.type_args[0].span)
        given: set[str] = set()
        unknown = False
        for kw in call.keywords:
            span = Span(kw.span.file, kw.span.line, kw.span.col, kw.span.line,
                        kw.span.col + len(kw.name))
            if kw.name not in fields:
                hint = self.checker.suggest(kw.name, fields)
                self.error(f"unknown field '{kw.name}' in class {name}{hint}", span)
                self.expr(kw.value)
                unknown = True
            elif kw.name in given:
                self.error(f"field '{kw.name}' is given twice", span)
                self.expr(kw.value)
            else:
                self.expect(kw.value, fields[kw.name], f"field '{kw.name}' of {name}: ")
            given.add(kw.name)
        missing = [f for f in fields if f not in given]
        if missing and not unknown and not call.args:  # one mistake, one message
            listed = ", ".join(f"'{f}'" for f in missing)
            self.error(f"missing field{'s' if len(missing) > 1 else ''} {listed} in {name}(...)",
                       call.func.span)
        return ClassRef(name)

    # --- builtins ----------------------------------------------------------------------------

    def call_builtin(self, call: syntax.Call, b: B.Builtin, expected, awaited: bool) -> Type:
        call.call_kind, call.target = "builtin", b.name
        if isinstance(expected, Opt) and isinstance(expected.inner, ResultOf):
            expected = expected.inner  # ok(...) where a Result[T, Error]? is expected: a T
        type_arg = self.type_argument(call, b)
        if call.keywords:
            self.error(f"{b.name} takes positional arguments only", call.keywords[0].span)
            for kw in call.keywords:
                self.expr(kw.value)
        self.arity(call, b.name, len(b.params), b.variadic is not None)
        arg_types: list[Type] = []
        for i, arg in enumerate(call.args):
            spec = b.params[i] if i < len(b.params) else b.variadic
            if spec is None:
                self.expr(arg)
            elif spec == B.OK_VALUE:
                ok_type = expected.ok if isinstance(expected, ResultOf) else None
                if ok_type is None:
                    self.expr(arg)
                else:
                    self.expect(arg, ok_type, "argument of ok: ")
            else:
                arg_types.append(self.argument(call, i, arg, spec, arg_types))
        if b.is_async and not awaited:
            if not b.may_skip_await:
                self.error(f"'{b.name}' is async: call it with await {b.name}(...)", call.span)
            elif not self.fn.is_async:
                self.error(f"{b.name}(...) can only run inside an async def", call.span)
        return self.builtin_result(call, b, expected, type_arg, arg_types)

    def builtin_result(self, call, b: B.Builtin, expected, type_arg, arg_types) -> Type:
        r = b.returns
        if r == B.FROM_CONTEXT:
            if isinstance(expected, ResultOf):
                return expected
            if expected is None:
                self.error(f"cannot tell which Result type {b.name}(...) makes here; use it in a "
                           "return, an argument or a let with a declared Result type", call.span)
            elif expected != UNKNOWN:
                self.error(f"{b.name}(...) makes a Result, but {fmt(expected)} is expected",
                           call.span)
            return UNKNOWN
        if r == B.SAME_AS_ARG:
            return arg_types[0] if arg_types else UNKNOWN
        if type_arg is None and r in (B.RESULT_OF_TYPE_ARG, B.RESULT_LIST_OF_TYPE_ARG,
                                      B.RESULT_OPT_OF_TYPE_ARG):
            return UNKNOWN
        if r == B.RESULT_OF_TYPE_ARG:
            return ResultOf(type_arg)
        if r == B.RESULT_LIST_OF_TYPE_ARG:
            return ResultOf(ListOf(type_arg))
        if r == B.RESULT_OPT_OF_TYPE_ARG:
            return ResultOf(Opt(type_arg))
        return r

    def type_argument(self, call: syntax.Call, b: B.Builtin) -> Type | None:
        """The checked type argument of a generic builtin (None when absent or invalid)."""
        if b.type_param is None:
            if call.type_args:
                self.error(f"{b.name} takes no type arguments", call.type_args[0].span)
            return None
        if len(call.type_args) != 1:
            found = len(call.type_args)
            self.error(f"{b.name} needs one type argument, e.g. {b.name}[Task](...), found "
                       f"{found}", call.type_args[1].span if found > 1 else call.func.span)
            return None
        texpr = call.type_args[0]
        t = self.checker.resolve_type(texpr, self.file)
        call.type_arg_types = [t]
        if t == UNKNOWN:
            return None
        if b.type_param == B.ROW_CLASS:
            problem = self.row_class_problem(t)
            if problem:
                self.error(f"{b.name}[T] needs a class whose fields are scalars or T? of "
                           f"scalars; {problem}", texpr.span)
                return None
        elif not is_json_type(t, self.checker.field_types):
            self.error(f"{b.name}[T] needs a JSON type (class, List, number, str, bool, T?), "
                       f"found {fmt(t)}", texpr.span)
            return None
        return t

    def row_class_problem(self, t: Type) -> str | None:
        if not isinstance(t, ClassRef):
            return f"found {fmt(t)}"
        for name, ft in self.checker.program.classes[t.name].fields:
            if ft != UNKNOWN and not is_scalar_or_optional(ft):
                return f"field '{name}' of {t.name} is {fmt(ft)}"
        return None

    def argument(self, call: syntax.Call, i: int, arg: syntax.Expr, spec, earlier) -> Type:
        """Check argument `i` of a builtin call against a type or a kind of types."""
        what = f"argument {i + 1} of {call.target}: "
        if isinstance(spec, Type):
            return self.expect(arg, spec, what)
        if spec == B.ELEMENT:
            lst = earlier[0] if earlier else UNKNOWN
            return self.expect(arg, lst.elem if isinstance(lst, ListOf) else UNKNOWN, what)
        if spec == B.LITERAL_PATH:
            return self.include_text(call, arg)
        t = self.expr(arg, None)
        if t != UNKNOWN and not self.fits_kind(t, spec):
            self.error(f"{what}expected {B.KIND_TEXT[spec]}, found {fmt(t)}", arg.span)
        return t

    def fits_kind(self, t: Type, kind: str) -> bool:
        if kind == B.INTEGER_OR_FLOAT:
            return t in NUMBERS
        if kind == B.FORMATTABLE:
            return t in NUMBERS or t == BOOL
        if kind == B.SIZED:
            return t in (STR, BYTES, VIEW_BYTES) or isinstance(t, ListOf)
        if kind == B.LIST:
            return isinstance(t, ListOf)
        if kind == B.JSON:
            return is_json_type(t, self.checker.field_types)
        if kind == B.TEXT:
            return t in (STR, BYTES, VIEW_BYTES)
        if kind == B.DB_ARG:
            return is_scalar_or_optional(t) or t in (VIEW_BYTES, NONE)
        return t != NONE  # ANY

    def include_text(self, call: syntax.Call, arg: syntax.Expr) -> Type:
        """Read the named file (relative to this source file) now and embed its text."""
        self.expr(arg)
        if not isinstance(arg, syntax.StrLit):
            self.error("include_text needs a string literal naming a file", arg.span)
            return STR
        path = os.path.join(os.path.dirname(self.file), arg.value)
        try:
            with open(path, encoding="utf-8", newline="") as f:  # the text as is, CRLF kept
                call.embedded_text = f.read()
        except FileNotFoundError:
            self.error(f"include_text: file '{arg.value}' not found (looked for {path})",
                       arg.span)
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            self.error(f"include_text: cannot read '{arg.value}': {reason}", arg.span)
        return STR

