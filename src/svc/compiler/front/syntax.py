"""The svc abstract syntax tree: small plain dataclasses, one per construct.

The parser builds these; the checker annotates them *in place* (the fields marked
"checker:" below, all defaulting to None) so the code generator never has to guess a type or
what a name refers to. Every node carries the `Span` of the source it came from.

Conventions:
- Expression nodes derive from `Expr` and get `type` (an `svctypes.Type`) from the checker.
- Statement lists are plain `list[Stmt]`; a one-line block is a list of one statement.
- `elif` chains are nested `If` nodes in `orelse`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Iterator, Optional, Union

from svc.compiler.source import Span
from svc.compiler.svctypes import Type
from svc.rules.contract import TriggerKind
from svc.rules.field_rules import Rule


@dataclass(eq=False)
class Node:
    span: Span


# --- type expressions (as written in the source) ----------------------------------------------

@dataclass(eq=False)
class NamedType(Node):
    """`i64`, `Task`, `List[Task]`, `Result[T, Error]`, `view[bytes]`; `[T]` parses as
    `NamedType("List", [T])`."""

    name: str
    args: list["TypeExpr"] = field(default_factory=list)


@dataclass(eq=False)
class OptionalType(Node):
    """`T?`."""

    inner: "TypeExpr"


TypeExpr = Union[NamedType, OptionalType]


# --- expressions ------------------------------------------------------------------------------

@dataclass(eq=False)
class Expr(Node):
    # checker: the expression's type (for `None` in a `T?` context, that `Opt(T)`)
    type: Optional[Type] = field(default=None, kw_only=True)


@dataclass(eq=False)
class IntLit(Expr):
    """An integer literal; checker sets `type` to I64 or I32 (from the context)."""

    value: int


@dataclass(eq=False)
class FloatLit(Expr):
    value: float


@dataclass(eq=False)
class StrLit(Expr):
    """A string literal, escapes already decoded."""

    value: str


@dataclass(eq=False)
class FString(Expr):
    """`f"Hello, {name}!"`: literal text (escapes and `{{ }}` decoded) and the expressions
    between braces, in order; each expression keeps its own place inside the literal."""

    parts: list[Union[str, Expr]]


@dataclass(eq=False)
class BoolLit(Expr):
    value: bool


@dataclass(eq=False)
class NoneLit(Expr):
    pass


@dataclass(eq=False)
class UnitLit(Expr):
    """`()`."""


@dataclass(eq=False)
class Name(Expr):
    id: str
    # checker: "local" (variable or parameter), "function", "class", "builtin", "const"
    # (a module-level constant) or "enum" (the enum of a member `Role.admin`)
    ref: Optional[str] = field(default=None, kw_only=True)


@dataclass(eq=False)
class Attribute(Expr):
    """`value.attr` (field access on a class instance)."""

    value: Expr
    attr: str


@dataclass(eq=False)
class Index(Expr):
    """`value[index]` on a list (or str/bytes, see checker)."""

    value: Expr
    index: Expr


@dataclass(eq=False)
class Slice(Expr):
    """`value[start:end]` on a str, bytes or List; either bound may be left out (None)."""

    value: Expr
    start: Optional[Expr]
    end: Optional[Expr]


@dataclass(eq=False)
class Keyword(Node):
    """`name=value` in a class construction."""

    name: str
    value: Expr


@dataclass(eq=False)
class Call(Expr):
    """`func[type_args](args, keywords)`; `func` is a `Name` for every legal call."""

    func: Expr
    args: list[Expr] = field(default_factory=list)
    keywords: list[Keyword] = field(default_factory=list)
    type_args: list[TypeExpr] = field(default_factory=list)
    # checker: "function" (sync user function), "async_function", "class" or "builtin"
    call_kind: Optional[str] = field(default=None, kw_only=True)
    # checker: the function, class or builtin name called
    target: Optional[str] = field(default=None, kw_only=True)
    # checker: resolved `type_args`
    type_arg_types: list[Type] = field(default_factory=list, kw_only=True)
    # checker: for `include_text("f")`, the file's text, read at compile time
    embedded_text: Optional[str] = field(default=None, kw_only=True)


@dataclass(eq=False)
class ListLit(Expr):
    elements: list[Expr] = field(default_factory=list)


@dataclass(eq=False)
class Unary(Expr):
    """`-x` or `not x` (`op` is "-" or "not")."""

    op: str
    operand: Expr


@dataclass(eq=False)
class Binary(Expr):
    """`left op right`; `op` is one of `+ - * / % == != < > <= >= and or`."""

    op: str
    left: Expr
    right: Expr


@dataclass(eq=False)
class Await(Expr):
    value: Expr


@dataclass(eq=False)
class Try(Expr):
    """`try value`: yields the ok value or returns the error from the enclosing function."""

    value: Expr


# --- statements -------------------------------------------------------------------------------

@dataclass(eq=False)
class Stmt(Node):
    pass


@dataclass(eq=False)
class ExprStmt(Stmt):
    expr: Expr


@dataclass(eq=False)
class Assign(Stmt):
    """`target = value`; target is a `Name`, `Attribute` or `Index`."""

    target: Expr
    value: Expr
    # checker: True when this assignment declares a new variable
    declares: Optional[bool] = field(default=None, kw_only=True)


@dataclass(eq=False)
class AugAssign(Stmt):
    """`target op= value`, `op` is "+", "-" or "*"."""

    target: Expr
    op: str
    value: Expr


@dataclass(eq=False)
class Let(Stmt):
    """`let name: annotation = value`."""

    name: str
    name_span: Span
    annotation: TypeExpr
    value: Expr
    # checker: the declared type
    declared_type: Optional[Type] = field(default=None, kw_only=True)


@dataclass(eq=False)
class If(Stmt):
    test: Expr
    body: list[Stmt]
    orelse: list[Stmt] = field(default_factory=list)  # an `elif` is a nested If here


@dataclass(eq=False)
class While(Stmt):
    test: Expr
    body: list[Stmt]


@dataclass(eq=False)
class For(Stmt):
    """`for var in iter:`; iter is a list or a `range(...)` call."""

    var: str
    var_span: Span
    iter: Expr
    body: list[Stmt]
    # checker: "list" or "range"
    iter_kind: Optional[str] = field(default=None, kw_only=True)


@dataclass(eq=False)
class Break(Stmt):
    pass


@dataclass(eq=False)
class Continue(Stmt):
    pass


@dataclass(eq=False)
class Pass(Stmt):
    pass


@dataclass(eq=False)
class Return(Stmt):
    value: Optional[Expr] = None


@dataclass(eq=False)
class Pattern(Node):
    """`Ok(v)`, `Err(e)`, `Some(v)`, `None` or `Role.admin`; `binding` is None for `_`, for
    `None` and for an enum member."""

    kind: str  # "Ok", "Err", "Some", "None", or "Role.admin" for an enum member
    binding: Optional[str] = None
    binding_span: Optional[Span] = None  # where the bound name is written (go to definition)
    # for an enum member pattern `Role.admin`: the enum's name and the member's
    enum: Optional[str] = None
    member: Optional[str] = None


@dataclass(eq=False)
class Case(Node):
    pattern: Pattern
    body: list[Stmt]


@dataclass(eq=False)
class Match(Stmt):
    subject: Expr
    cases: list[Case]
    # checker: "result", "optional" or "enum"
    subject_kind: Optional[str] = field(default=None, kw_only=True)


# --- declarations -----------------------------------------------------------------------------

@dataclass(eq=False)
class Import(Node):
    """`import "path"` (names is None) or `from "path" import A, B`."""

    path: str
    names: Optional[list[str]] = None
    name_spans: list[Span] = field(default_factory=list)
    # imports: the imported module's `Module.path` once it is loaded
    resolved_path: Optional[str] = field(default=None, kw_only=True)


@dataclass(eq=False)
class FieldRule(Node):
    """`@length(1, 240)` on its own line above a class field: the rule's name as written and
    its arguments (the checker requires literals: check/field_rules.py)."""

    name: str
    name_span: Span
    args: list[Expr] = field(default_factory=list)
    # checker: the rule as the runtime and `svcc openapi` read it (None after an error)
    rule: Optional[Rule] = field(default=None, kw_only=True)


@dataclass(eq=False)
class Field(Node):
    name: str
    annotation: TypeExpr
    rules: list[FieldRule] = field(default_factory=list)  # the attribute lines above it


@dataclass(eq=False)
class TypeParamDecl(Node):
    """A generic class's type parameter, `T` in `class Page[T]:`."""

    name: str


@dataclass(eq=False)
class ClassDef(Node):
    name: str
    name_span: Span
    fields: list[Field]
    type_params: list[TypeParamDecl] = field(default_factory=list)  # `class Page[T]:`


@dataclass(eq=False)
class Param(Node):
    name: str
    annotation: TypeExpr


@dataclass(eq=False)
class RouteAttr(Node):
    """`@get("/path")`: method is upper case ("GET", "POST", "PUT", "PATCH", "DELETE").
    `options` are what follows the path (`body_limit="10 MiB"`), checked by check/routes.py."""

    method: str
    path: str
    path_span: Span
    options: list["AttrOption"] = field(default_factory=list)


@dataclass(eq=False)
class AttrOption(Node):
    """`attempts=5` or `deadline="30s"` after the first argument of a background attribute."""

    name: str
    value: int | str
    value_span: Span


@dataclass(eq=False)
class BackgroundAttr(Node):
    """`@job("send_email", attempts=5)`, `@every("5m")` or `@cron("0 3 * * *")`: a function
    the server runs outside requests. `kind` is the attribute; `text` is the job's name, the
    period or the cron expression."""

    kind: TriggerKind
    text: str
    text_span: Span
    options: list[AttrOption] = field(default_factory=list)


@dataclass(eq=False)
class GuardAttr(Node):
    """`@guard(require_user)` above a handler, or one guard named in a `GuardDecl`: `name` is
    the guard function (checked by check/guards.py)."""

    name: str
    name_span: Span


@dataclass(eq=False)
class GuardDecl(Node):
    """`guard("/admin", require_user, require_admin)` at top level: every route whose path is
    `prefix` or under it (segment-wise), and whose method is one of `methods` when given, runs
    these guards, in this order, before its own."""

    prefix: str
    prefix_span: Span
    guards: list[GuardAttr]
    #: `methods=["POST", ...]`: only routes with one of these methods run the guards
    methods: GuardMethods | None = None


@dataclass(eq=False)
class GuardMethods(Node):
    """`methods=["POST", "PUT"]` in a `GuardDecl`: the string literals as written (their
    methods are checked by check/guards.py)."""

    methods: list[StrLit]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(item.value for item in self.methods)


@dataclass(eq=False)
class PythonAttr(Node):
    """`@python("markdown", "markdown", error="invalid")` above a bodiless `async def`: the
    function is the Python callable `attribute` of `module`, called through the boundary
    (svc.runtime.lib.python_calls). `error` is the error kind a Python exception becomes
    (None: not written, `internal`); check/python_functions.py checks all of it."""

    module: str
    module_span: Span
    attribute: str
    attribute_span: Span
    error: Optional[str] = None
    error_span: Optional[Span] = None
    # checker: whether the Python function is a coroutine function (awaited on the event loop)
    # or not (run on the thread pool); None when it could not be imported
    is_coroutine: Optional[bool] = field(default=None, kw_only=True)


@dataclass(eq=False)
class FunctionDef(Node):
    name: str
    name_span: Span
    params: list[Param]
    returns: Optional[TypeExpr]  # None means `-> unit`
    body: list[Stmt]
    is_async: bool
    routes: list[RouteAttr] = field(default_factory=list)
    background: list[BackgroundAttr] = field(default_factory=list)
    guards: list[GuardAttr] = field(default_factory=list)  # `@guard(f)`, top to bottom
    # `@python(...)`: a declaration of a Python function (its body is empty), else None
    python: Optional[PythonAttr] = None


@dataclass(eq=False)
class ConstDef(Node):
    """`LIMIT: i64 = 100` at top level: a module-level constant (its value is built from
    literals only, checked by check/constants.py)."""

    name: str
    name_span: Span
    annotation: TypeExpr
    value: Expr


@dataclass(eq=False)
class EnumDef(Node):
    """`enum Role: admin, member` (or one member name per line in an indented block)."""

    name: str
    name_span: Span
    members: list[str]
    member_spans: list[Span]


Decl = Union[Import, ClassDef, FunctionDef, ConstDef, EnumDef, GuardDecl]


@dataclass(eq=False)
class Module:
    """One parsed `.svc` file."""

    path: str
    items: list[Decl]


# --- walking the tree --------------------------------------------------------------------------

def own_expressions(stmt: Stmt) -> list[Expr]:
    """The expressions a statement evaluates itself (not those of its nested bodies)."""
    if isinstance(stmt, ExprStmt):
        return [stmt.expr]
    if isinstance(stmt, (Assign, AugAssign, Let)):
        return [stmt.value]
    if isinstance(stmt, (If, While)):
        return [stmt.test]
    if isinstance(stmt, For):
        return [stmt.iter]
    if isinstance(stmt, Match):
        return [stmt.subject]
    if isinstance(stmt, Return):
        return [stmt.value] if stmt.value is not None else []
    return []


def nested_bodies(stmt: Stmt) -> list[list[Stmt]]:
    """The statement blocks directly inside a statement (an `if`'s body and else, a loop's
    body, each `case`'s body)."""
    if isinstance(stmt, If):
        return [stmt.body, stmt.orelse]
    if isinstance(stmt, (While, For)):
        return [stmt.body]
    if isinstance(stmt, Match):
        return [case.body for case in stmt.cases]
    return []


def walk(root: Node) -> Iterator[Node]:
    """Every node in `root`'s tree, `root` included, each before the nodes inside it.

    Iterative, with a stack of its own: bodies and `a + b + ...` chains may nest deeper than
    Python's recursion limit. The nodes inside one node come last field first (the order the
    stack gives); a caller that needs source order sorts by `span`."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(_children(node))


def _children(node: Node) -> Iterator[Node]:
    """The nodes directly inside `node`: its fields that are nodes or lists of nodes (an
    f-string's parts mix text and expressions; a checker-set `Type` is not a node)."""
    for f in fields(node):
        value = getattr(node, f.name)
        if isinstance(value, Node):
            yield value
        elif isinstance(value, list):
            yield from (v for v in value if isinstance(v, Node))
