"""Code generation of statements: each svc statement becomes a list of Python statements,
located at its `.svc` line.

The module generator (generator.py: module, classes, functions, expressions) owns one
`StatementGen` for a function's body; the statement generator gets the expressions, and the
names statements share with them (locals, temporaries, support functions), through the
`ExpressionGen` interface below, so each side says what it needs of the other.
"""

from __future__ import annotations

import ast
from typing import Protocol

from svc.compiler.codegen.pyast import CodegenError, field_name, type_of, call as _call
from svc.compiler.codegen.pyast import located as _located, name as _name, store as _store
from svc.compiler.front import syntax
from svc.compiler.svctypes import Type


class ExpressionGen(Protocol):
    """What the statement generator needs from the module generator."""

    def expr(self, e: syntax.Expr) -> ast.expr:
        """The Python expression of a checked svc expression, located at its span."""

    def arith(self, op: str, operand_type: Type, left: ast.expr, right: ast.expr) -> ast.expr:
        """`left op right` on values of `operand_type` (checked integer arithmetic)."""

    def local(self, name: str) -> str:
        """The Python name of a local variable."""

    def temp(self) -> str:
        """A fresh temporary name in the current function."""

    def rt(self, name: str) -> ast.Name:
        """A support function or constant (imported by the module)."""

    def runtime(self, module: str, attr: str) -> ast.Attribute:
        """`svc.runtime.<module>.<attr>` (the module imported by the module)."""


class StatementGen:
    """The statements of one module's functions."""

    def __init__(self, gen: ExpressionGen, module: syntax.Module) -> None:
        self.gen = gen
        self.module = module

    def block(self, stmts: list[syntax.Stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in stmts:
            for node in self.stmt(stmt):
                out.append(_located(node, stmt.span))
        return out or [_located(ast.Pass(), stmts[0].span if stmts else self.module.items[0].span)]

    def stmt(self, s: syntax.Stmt) -> list[ast.stmt]:
        method = getattr(self, "stmt_" + type(s).__name__, None)
        if method is None:
            raise CodegenError(f"no code generation for statement {type(s).__name__}")
        return method(s)

    def stmt_ExprStmt(self, s: syntax.ExprStmt) -> list[ast.stmt]:
        return [ast.Expr(value=self.gen.expr(s.expr))]

    def stmt_Pass(self, s: syntax.Pass) -> list[ast.stmt]:
        return [ast.Pass()]

    def stmt_Break(self, s: syntax.Break) -> list[ast.stmt]:
        return [ast.Break()]

    def stmt_Continue(self, s: syntax.Continue) -> list[ast.stmt]:
        return [ast.Continue()]

    def stmt_Return(self, s: syntax.Return) -> list[ast.stmt]:
        return [ast.Return(value=self.gen.expr(s.value) if s.value is not None else None)]

    def stmt_Let(self, s: syntax.Let) -> list[ast.stmt]:
        return [ast.Assign(targets=[_store(self.gen.local(s.name))],
                           value=self.gen.expr(s.value))]

    def stmt_Assign(self, s: syntax.Assign) -> list[ast.stmt]:
        value = self.gen.expr(s.value)
        target = s.target
        if isinstance(target, syntax.Index):
            call = _call(self.gen.rt("set_index"),
                         [self.gen.expr(target.value), self.gen.expr(target.index), value])
            return [ast.Expr(value=call)]
        return [ast.Assign(targets=[self.target(target)], value=value)]

    def target(self, target: syntax.Expr) -> ast.expr:
        if isinstance(target, syntax.Name):
            return _store(self.gen.local(target.id))
        if isinstance(target, syntax.Attribute):
            return ast.Attribute(value=self.gen.expr(target.value), attr=field_name(target.attr),
                                 ctx=ast.Store())
        raise CodegenError(f"cannot assign to {type(target).__name__}")

    def stmt_AugAssign(self, s: syntax.AugAssign) -> list[ast.stmt]:
        """`t op= v` is `t = t op v`, with the target's object (and index) evaluated once."""
        setup: list[ast.stmt] = []
        target = s.target
        current: ast.expr
        store: ast.expr
        if isinstance(target, syntax.Name):
            current = _name(self.gen.local(target.id))
            store = _store(self.gen.local(target.id))
        elif isinstance(target, syntax.Attribute):
            obj = self.gen.temp()
            setup.append(ast.Assign(targets=[_store(obj)], value=self.gen.expr(target.value)))
            current = ast.Attribute(value=_name(obj), attr=field_name(target.attr), ctx=ast.Load())
            store = ast.Attribute(value=_name(obj), attr=field_name(target.attr), ctx=ast.Store())
        elif isinstance(target, syntax.Index):
            obj, idx = self.gen.temp(), self.gen.temp()
            setup.append(ast.Assign(targets=[_store(obj)], value=self.gen.expr(target.value)))
            setup.append(ast.Assign(targets=[_store(idx)], value=self.gen.expr(target.index)))
            current = _call(self.gen.rt("index"), [_name(obj), _name(idx)])
            new = self.gen.arith(s.op, type_of(target), current, self.gen.expr(s.value))
            set_index = _call(self.gen.rt("set_index"), [_name(obj), _name(idx), new])
            return setup + [ast.Expr(value=set_index)]
        else:
            raise CodegenError(f"cannot assign to {type(target).__name__}")
        new = self.gen.arith(s.op, type_of(target), current, self.gen.expr(s.value))
        return setup + [ast.Assign(targets=[store], value=new)]

    def stmt_If(self, s: syntax.If) -> list[ast.stmt]:
        orelse = self.block(s.orelse) if s.orelse else []
        return [ast.If(test=self.gen.expr(s.test), body=self.block(s.body), orelse=orelse)]

    def stmt_While(self, s: syntax.While) -> list[ast.stmt]:
        return [ast.While(test=self.gen.expr(s.test), body=self.block(s.body), orelse=[])]

    def stmt_For(self, s: syntax.For) -> list[ast.stmt]:
        var = _located(_store(self.gen.local(s.var)), s.var_span)
        iterable = self.gen.expr(s.iter)
        if s.iter_kind == "map":  # the keys when the loop starts: the body may set new ones
            iterable = ast.Call(func=self.gen.runtime("lib.maps", "keys"), args=[iterable],
                                keywords=[])
        return [ast.For(target=var, iter=iterable, body=self.block(s.body), orelse=[])]

    def stmt_Match(self, s: syntax.Match) -> list[ast.stmt]:
        """Evaluate the subject once, then an if/elif chain; the last arm is the `else`
        (the checker made the arms exhaustive)."""
        subject = self.gen.temp()
        out: list[ast.stmt] = [ast.Assign(targets=[_store(subject)],
                                          value=self.gen.expr(s.subject))]
        chain: list[ast.stmt] = []
        for case in reversed(s.cases):
            body: list[ast.stmt] = []
            if case.pattern.binding is not None:
                bind = ast.Assign(targets=[_store(self.gen.local(case.pattern.binding))],
                                  value=_name(subject))
                body.append(_located(bind, case.pattern.span))
            body += self.block(case.body)
            if not chain:
                chain = body
                continue
            test = _located(self.pattern_test(case.pattern.kind, subject), case.pattern.span)
            chain = [_located(ast.If(test=test, body=body, orelse=chain), case.span)]
        return out + chain

    def pattern_test(self, kind: str, subject: str) -> ast.expr:
        if "." in kind:  # an enum member `Role.admin`: the value is the member's name
            member = kind.rpartition(".")[2]
            return ast.Compare(left=_name(subject), ops=[ast.Eq()],
                               comparators=[ast.Constant(member)])
        if kind in ("Ok", "Err"):
            cls = ast.Attribute(value=_name(subject), attr="__class__", ctx=ast.Load())
            op = ast.Is() if kind == "Err" else ast.IsNot()
            return ast.Compare(left=cls, ops=[op], comparators=[self.gen.rt("SvcError")])
        op = ast.IsNot() if kind == "Some" else ast.Is()
        return ast.Compare(left=_name(subject), ops=[op], comparators=[ast.Constant(None)])
