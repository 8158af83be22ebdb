"""The SQL a program runs, found in its checked modules: each `db_exec`, `db_all[T]` and
`db_one[T]` call with the text of its SQL where the compiler can know it.

A text is known when it is built from string literals, module constants and `+` of those, or
from a local variable that, at the call, holds such a text on every path: the walk follows
each function's statements in order, forgets a variable assigned in a branch or loop when
the branch ends (and, for a loop, before its body), so a known text is the one the call will
send. Anything else (a function's result, an f-string, a parameter) is SQL built at run time:
legal, and listed by `svcc check --unchecked`.

A call under `if db_dialect(db) == "postgresql":` runs on that dialect only, and under its
`else` (or after it, when its body ends in a `return`) on the others, so its SQL is checked
on those dialects alone.

Each piece of a known text remembers the literal it came from, so a problem at an offset of
the SQL can be shown at its place in the `.svc` file (`SqlText.span_at`). `SqlReport` is what
a check of them found (check_sql.py fills it; the pipeline and `svcc check` read it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from svc.compiler.front import syntax
from svc.compiler.program import CheckedProgram
from svc.compiler.diagnostics import Diagnostic
from svc.compiler.source import SourceFile, Span
from svc.compiler.sql.migration_files import DIALECTS
from svc.compiler.svctypes import Type

#: The builtins whose second argument is SQL, and what each does with a result row.
SQL_BUILTINS = {"db_exec": "exec", "db_all": "all", "db_one": "one"}


@dataclass(frozen=True)
class Piece:
    """A part of a known SQL text: its text, and the literal it was written in."""

    text: str
    literal: Span


@dataclass(frozen=True)
class SqlText:
    pieces: tuple[Piece, ...]

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.pieces)

    def __add__(self, other: SqlText) -> SqlText:
        return SqlText(self.pieces + other.pieces)

    def span_at(self, offset: int, width: int, sources: dict[str, SourceFile]) -> Span | None:
        """Where the SQL's characters [offset, offset + width) are written: inside the literal
        that holds them, when that literal is written on one line without escapes (so each
        character of the text is one column of the source); else the whole literal."""
        start = 0
        for piece in self.pieces:
            if offset < start + len(piece.text) or piece is self.pieces[-1]:
                at = min(max(offset - start, 0), len(piece.text))
                return _inside_literal(piece, at, width, sources)
            start += len(piece.text)
        return None


def _inside_literal(piece: Piece, at: int, width: int, sources: dict[str, SourceFile]) -> Span:
    span = piece.literal
    source = sources.get(span.file)
    if source is None or span.line != span.end_line:
        return span
    written = source.line_text(span.line)[span.col - 1:span.end_col - 1]
    if written[1:-1] != piece.text:  # escapes, or not a plain quoted literal
        return span
    col = span.col + 1 + at
    end = min(col + max(width, 1), span.end_col - 1)
    return Span(span.file, span.line, col, span.line, max(end, col + 1))


@dataclass(frozen=True)
class SqlUse:
    """One call that runs SQL: which builtin, where, its SQL (None: built at run time), the
    svc types of the SQL arguments, the row type T of `db_all[T]`/`db_one[T]` (None for
    `db_exec`), and the dialects it can run on (all, unless under a `db_dialect` test)."""

    builtin: str
    call: syntax.Call
    file: str
    sql: SqlText | None
    arg_types: tuple[Type | None, ...]
    row_type: Type | None
    dialects: frozenset[str]

    @property
    def span(self) -> Span:
        return self.call.span

    @property
    def sql_span(self) -> Span:
        return self.call.args[1].span if len(self.call.args) > 1 else self.call.span


@dataclass
class SqlReport:
    """What the check found: its diagnostics, the calls whose SQL is built at run time, how
    many statements it checked, and how each dialect was checked."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    unchecked: list[SqlUse] = field(default_factory=list)
    checked: int = 0
    levels: dict[str, str] = field(default_factory=dict)
    #: (place, words) of each diagnostic: a constant's mistake is reported once, not per call
    reported: set[tuple[Span, str]] = field(default_factory=set, repr=False)


def sql_uses(program: CheckedProgram) -> list[SqlUse]:
    """Every SQL-running call of the program's checked modules, in source order."""
    consts = {name: info.decl.value for name, info in program.constants.items()}
    found: list[SqlUse] = []
    for module in program.modules:
        for item in module.items:
            if isinstance(item, syntax.FunctionDef):
                _Walk(consts, module.path, found).block(item.body, {}, frozenset(DIALECTS))
    return sorted(found, key=lambda use: (use.file, use.span.line, use.span.col))


class _Walk:
    """One function's statements in order, with what each local holds (a known text, or None
    once it may hold something else)."""

    def __init__(self, consts: dict[str, syntax.Expr], file: str, found: list[SqlUse]) -> None:
        self.consts = consts
        self.file = file
        self.found = found

    def block(self, body: list[syntax.Stmt], known: dict[str, SqlText | None],
              dialects: frozenset[str]) -> None:
        for stmt in body:
            dialects = self.stmt(stmt, known, dialects)

    def stmt(self, stmt: syntax.Stmt, known: dict[str, SqlText | None],
             dialects: frozenset[str]) -> frozenset[str]:
        """Walk one statement; the dialects the statements after it run on (after an `if`
        on the dialect whose body returns, the others')."""
        for node in syntax.own_expressions(stmt):
            self.calls(node, known, dialects)
        if isinstance(stmt, (syntax.Assign, syntax.Let)):
            name = stmt.name if isinstance(stmt, syntax.Let) else _name(stmt.target)
            if name is not None:
                known[name] = self.fold(stmt.value, known)
        elif isinstance(stmt, syntax.AugAssign):
            name = _name(stmt.target)
            if name is not None:
                before, added = known.get(name), self.fold(stmt.value, known)
                known[name] = before + added if stmt.op == "+" and before and added else None
        elif isinstance(stmt, syntax.If):
            then, other = _dialect_test(stmt.test, dialects)
            self.branch(stmt.body, known, then)
            self.branch(stmt.orelse, known, other)
            if then != other and stmt.body and isinstance(stmt.body[-1], syntax.Return):
                return other
        elif isinstance(stmt, (syntax.While, syntax.For)):
            self.forget(stmt.body, known)  # a later iteration sees the body's assignments
            self.branch(stmt.body, known, dialects)
        elif isinstance(stmt, syntax.Match):
            for case in stmt.cases:
                self.branch(case.body, known, dialects)
        return dialects

    def branch(self, body: list[syntax.Stmt], known: dict[str, SqlText | None],
               dialects: frozenset[str]) -> None:
        """A body that may or may not run: its own view of the locals, and afterwards every
        local it assigned is unknown."""
        self.block(body, dict(known), dialects)
        self.forget(body, known)

    @staticmethod
    def forget(body: list[syntax.Stmt], known: dict[str, SqlText | None]) -> None:
        for stmt in body:
            for node in syntax.walk(stmt):
                if isinstance(node, (syntax.Assign, syntax.AugAssign)):
                    name = _name(node.target)
                    if name is not None:
                        known[name] = None
                elif isinstance(node, syntax.Let):
                    known[node.name] = None

    def calls(self, expr: syntax.Node, known: dict[str, SqlText | None],
              dialects: frozenset[str]) -> None:
        for node in syntax.walk(expr):
            if isinstance(node, syntax.Call) and node.call_kind == "builtin" \
                    and node.target in SQL_BUILTINS and len(node.args) >= 2:
                self.found.append(SqlUse(
                    node.target, node, self.file, self.fold(node.args[1], known),
                    tuple(arg.type for arg in node.args[2:]),
                    node.type_arg_types[0] if node.type_arg_types else None, dialects))

    def fold(self, expr: syntax.Expr, known: dict[str, SqlText | None],
             depth: int = 0) -> SqlText | None:
        """The text `expr` always has, or None."""
        if depth > 50:  # a constant built of constants, deeper than any program means
            return None
        if isinstance(expr, syntax.StrLit):
            return SqlText((Piece(expr.value, expr.span),))
        if isinstance(expr, syntax.Binary) and expr.op == "+":
            left = self.fold(expr.left, known, depth + 1)
            right = self.fold(expr.right, known, depth + 1) if left else None
            return left + right if left and right else None
        if isinstance(expr, syntax.Name):
            if expr.id in known:
                return known[expr.id]
            if expr.id in self.consts:
                return self.fold(self.consts[expr.id], {}, depth + 1)
        return None


def _name(target: syntax.Expr) -> str | None:
    return target.id if isinstance(target, syntax.Name) else None


def _dialect_test(test: syntax.Expr, dialects: frozenset[str]
                  ) -> tuple[frozenset[str], frozenset[str]]:
    """The dialects of an `if`'s body and of its else: narrowed by `db_dialect(x) == "lit"`
    (or `!=`, either side), else both as before."""
    if isinstance(test, syntax.Binary) and test.op in ("==", "!="):
        sides = (test.left, test.right)
        call = next((s for s in sides if isinstance(s, syntax.Call)
                     and s.call_kind == "builtin" and s.target == "db_dialect"), None)
        literal = next((s for s in sides if isinstance(s, syntax.StrLit)), None)
        if call is not None and literal is not None:
            chosen = dialects & {literal.value}
            others = dialects - {literal.value}
            return (chosen, others) if test.op == "==" else (others, chosen)
    return dialects, dialects
