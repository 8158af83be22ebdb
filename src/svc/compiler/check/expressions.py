"""Checking expressions: literals, names, fields, indexing, lists and operators.

Types flow both ways: `expr(e, expected)` computes an expression's type, and `expected` (the
type the context wants, or None) decides what context-typed expressions mean: an integer
literal where an i32 is wanted is an i32; `None` and `[]` take their type from it. Every
expression node gets its `type`, and names get the annotations the code generator relies on
(see syntax.py, "checker:"). Calls are checked in `calls.py`, statements in `body.py`.

Variables are block scoped and may not shadow one another within a function: generated Python
has one namespace per function, so an inner declaration would clobber the outer variable.
"""

from __future__ import annotations

from svc.compiler import builtin_table as B
from svc.compiler.check.context import CheckContext, suggest
from svc.compiler.check.http_types import list_problem
from svc.compiler.front import syntax
from svc.compiler.program import ClassInfo, FunctionInfo
from svc.compiler.source import Span
from svc.compiler.svctypes import (
    BOOL, BYTES, F64, I32, I64, NONE, NUMBERS, STR, UNIT, UNKNOWN, ClassRef, EnumRef, ListOf, Opt,
    ResultOf, Type, View, contains_tx, contains_view, format_type, is_json_type,
)
from svc.rules.contract import I32_MAX, I32_MIN

ARITHMETIC = ("+", "-", "*", "/", "%")
EQUALITY = ("==", "!=")
ORDERING = ("<", ">", "<=", ">=")
VIEW_BYTES = View(BYTES)
#: What `str(x)` and an f-string's `{x}` can format.
FORMATTABLE = (STR, I64, I32, F64, BOOL)
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


def fmt(t: Type | None) -> str:
    """A type as messages show it (an expression's `type` is None only before it is checked,
    and shows as UNKNOWN would)."""
    return format_type(UNKNOWN if t is None else t)


def field_name_span(info: ClassInfo, name: str) -> Span:
    """Where the field `name` of a class is declared: its name only (go to definition)."""
    at = next(f.span for f in info.decl.fields if f.name == name)
    return Span(at.file, at.line, at.col, at.line, at.col + len(name))


def constant_root(e: syntax.Expr) -> str | None:
    """The constant a checked target or argument is part of (`LIMITS`, `DEFAULT.name`,
    `LIMITS[0]`), or None: a constant cannot be changed."""
    while isinstance(e, (syntax.Attribute, syntax.Index)):
        e = e.value
    return e.id if isinstance(e, syntax.Name) and e.ref == "const" else None


def _is_context_literal(e: syntax.Expr) -> bool:
    """Literals whose type comes from the other operand: `1`, `-1`, `None`, `[]`."""
    if isinstance(e, syntax.Unary) and e.op == "-":
        e = e.operand
    return isinstance(e, (syntax.IntLit, syntax.NoneLit)) or (
        isinstance(e, syntax.ListLit) and not e.elements)


class ExpressionChecker:
    """The scopes of one function body and the types of its expressions; `ctx` is what it
    needs of the program (its tables, where errors go). `expr` dispatches on the node's class
    to `e_<class>`; `e_Call` and `e_Await` are in the subclass `CallChecker` (calls.py)."""

    def __init__(self, ctx: CheckContext, fn: FunctionInfo) -> None:
        self.ctx = ctx
        self.fn = fn
        self.file = fn.file
        self.scopes: list[dict[str, Type]] = [{}]
        self.loops = 0
        for name, t in fn.params:
            self.scopes[0][name] = t
        # Where each variable was declared, for `ctx.refer`: variables never shadow one
        # another, so the latest declaration of a name in scope is the one a use means.
        self.declared_at: dict[str, Span] = {
            p.name: Span(p.span.file, p.span.line, p.span.col, p.span.line,
                         p.span.col + len(p.name)) for p in fn.decl.params}

    def error(self, message: str, span: Span) -> None:
        self.ctx.error(message, span)

    # --- scopes ------------------------------------------------------------------------------

    def lookup(self, name: str) -> Type | None:
        for scope in reversed(self.scopes):
            t = scope.get(name)
            if t is not None:
                return t
        return None

    def enum_named(self, e: syntax.Expr) -> syntax.EnumDef | None:
        """The enum `e` names, when it is the name of one (and no variable)."""
        if not isinstance(e, syntax.Name) or self.lookup(e.id) is not None:
            return None
        d = self.ctx.lookup(e.id, self.file)
        return d.decl if d is not None and isinstance(d.decl, syntax.EnumDef) else None

    def declare(self, name: str, t: Type, span: Span) -> None:
        d = self.ctx.lookup(name, self.file)
        if d is not None and d.kind == "const":
            self.error(f"'{name}' is a constant; a variable cannot take its name", span)
            return
        if self.lookup(name) is not None:
            self.error(f"variable '{name}' is already declared in this function", span)
            return
        self.scopes[-1][name] = t
        self.declared_at[name] = span

    def refer_local(self, name: str, use: Span) -> None:
        """Record a use of the variable `name` (for editors: go to definition)."""
        if name in self.declared_at:
            self.ctx.refer(use, self.declared_at[name])

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

    def e_FString(self, e: syntax.FString, expected) -> Type:
        """Each `{expr}` is formatted as `str(x)` would: a str, integer, f64 or bool."""
        for part in e.parts:
            if isinstance(part, str):
                continue
            t = self.expr(part)
            if t not in FORMATTABLE and t != UNKNOWN and not isinstance(t, EnumRef):
                how = "json_encode(x)" if is_json_type(t, self.ctx.field_types) else \
                    "a function that returns a str"
                self.error(f"an f-string cannot format {fmt(t)} (only str, i64, i32, f64 and "
                           f"bool); format it with {how}", part.span)
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
            self.refer_local(e.id, e.span)
            return t
        d = self.ctx.lookup(e.id, self.file)
        if d is not None and d.kind == "const":
            return self.constant(e, d.decl.name_span)
        if d is not None and isinstance(d.decl, syntax.EnumDef):
            e.ref = "enum"
            self.error(f"enum '{e.id}' is not a value; name a member: "
                       f"{e.id}.{(d.decl.members or ['member'])[0]}", e.span)
            return UNKNOWN
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

    def constant(self, e: syntax.Name, defined_at: Span) -> Type:
        """A use of a module-level constant (checked before any function body)."""
        e.ref = "const"
        self.ctx.refer(e.span, defined_at)
        info = self.ctx.program.constants.get(e.id)
        return info.type if info is not None else UNKNOWN

    def enum_member(self, e: syntax.Attribute, enum: syntax.EnumDef, span: Span) -> Type:
        """`Role.admin`: a member of an enum (its value at run time is its name)."""
        assert isinstance(e.value, syntax.Name)
        e.value.ref = "enum"
        self.ctx.refer(e.value.span, enum.name_span)
        e.value.type = UNKNOWN  # the enum's name alone is not a value
        if e.attr in enum.members:
            self.ctx.refer(span, enum.member_spans[enum.members.index(e.attr)])
            return EnumRef(enum.name, tuple(enum.members))
        hint = suggest(e.attr, enum.members)
        self.error(f"enum {enum.name} has no member '{e.attr}'{hint} (its members: "
                   f"{', '.join(enum.members)})", span)
        return UNKNOWN

    def unknown_name(self, name: str, span: Span) -> None:
        hint = self.ctx.not_visible_hint(name)
        if not hint:
            names = [n for scope in self.scopes for n in scope]
            names += list(self.ctx.visible.get(self.file, ())) + list(B.BUILTINS)
            hint = suggest(name, names)
        self.error(f"unknown name '{name}'{hint}", span)

    def e_Attribute(self, e: syntax.Attribute, expected) -> Type:
        end = e.span
        span = Span(end.file, end.end_line, max(1, end.end_col - len(e.attr)), end.end_line,
                    end.end_col)
        enum = self.enum_named(e.value)
        if enum is not None:
            return self.enum_member(e, enum, span)
        t = self.expr(e.value)
        if isinstance(t, ClassRef):
            info = self.ctx.program.classes.get(t.name)
            fields = dict(info.fields) if info else {}
            if info is not None and e.attr in fields:
                self.ctx.refer(span, field_name_span(info, e.attr))
                return fields[e.attr]
            hint = suggest(e.attr, fields)
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

    def e_Slice(self, e: syntax.Slice, expected) -> Type:
        """`s[a:b]`: a str, bytes or List of the same type; the bounds are i64 (UTF-8 bytes of
        a str, as `len` and `index_of` count)."""
        t = self.expr(e.value)
        for bound in (e.start, e.end):
            if bound is not None:
                self.expect(bound, I64, "slice bound: ")
        if t in (STR, BYTES) or isinstance(t, ListOf):
            return t
        if t == VIEW_BYTES:
            self.error("cannot slice a view[bytes]; copy it into bytes first (to_bytes) or "
                       "decode it (to_str)", e.value.span)
        elif t != UNKNOWN:
            self.error(f"cannot slice {fmt(t)}: only a str, bytes or a List", e.value.span)
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
        problem = list_problem(elem)
        if problem:
            self.error(problem, first.span)
            elem = UNKNOWN
        if contains_view(elem):
            self.error("a view cannot be put in a list", first.span)
            elem = UNKNOWN
        elif contains_tx(elem):
            self.error("a Tx cannot be put in a list", first.span)
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
