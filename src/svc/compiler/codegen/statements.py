"""Code generation of statements: each svc statement becomes a list of Python statements,
located at its `.svc` line.

A mixin of the module generator (`codegen._ModuleGen`), kept apart so the generator's core
(module, classes, functions, expressions) stays within one readable file. It relies on the
generator's `expr`, `arith`, `local`, `temp`, `rt` and `module`.
"""

from __future__ import annotations

import ast

from svc.compiler.front import syntax as S
from svc.compiler.codegen.pyast import CodegenError, field_name
from svc.compiler.codegen.pyast import call as _call
from svc.compiler.codegen.pyast import located as _located
from svc.compiler.codegen.pyast import name as _name
from svc.compiler.codegen.pyast import store as _store


class StatementGen:
    """The statement half of the module generator."""

    def block(self, stmts: list[S.Stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in stmts:
            for node in self.stmt(stmt):
                out.append(_located(node, stmt.span))
        return out or [_located(ast.Pass(), stmts[0].span if stmts else self.module.items[0].span)]

    def stmt(self, s: S.Stmt) -> list[ast.stmt]:
        method = getattr(self, "stmt_" + type(s).__name__, None)
        if method is None:
            raise CodegenError(f"no code generation for statement {type(s).__name__}")
        return method(s)

    def stmt_ExprStmt(self, s: S.ExprStmt) -> list[ast.stmt]:
        return [ast.Expr(value=self.expr(s.expr))]

    def stmt_Pass(self, s: S.Pass) -> list[ast.stmt]:
        return [ast.Pass()]

    def stmt_Break(self, s: S.Break) -> list[ast.stmt]:
        return [ast.Break()]

    def stmt_Continue(self, s: S.Continue) -> list[ast.stmt]:
        return [ast.Continue()]

    def stmt_Return(self, s: S.Return) -> list[ast.stmt]:
        return [ast.Return(value=self.expr(s.value) if s.value is not None else None)]

    def stmt_Let(self, s: S.Let) -> list[ast.stmt]:
        return [ast.Assign(targets=[_store(self.local(s.name))], value=self.expr(s.value))]

    def stmt_Assign(self, s: S.Assign) -> list[ast.stmt]:
        value = self.expr(s.value)
        target = s.target
        if isinstance(target, S.Index):
            call = _call(self.rt("set_index"), [self.expr(target.value), self.expr(target.index), value])
            return [ast.Expr(value=call)]
        return [ast.Assign(targets=[self.target(target)], value=value)]

    def target(self, target: S.Expr) -> ast.expr:
        if isinstance(target, S.Name):
            return _store(self.local(target.id))
        if isinstance(target, S.Attribute):
            return ast.Attribute(value=self.expr(target.value), attr=field_name(target.attr),
                                 ctx=ast.Store())
        raise CodegenError(f"cannot assign to {type(target).__name__}")

    def stmt_AugAssign(self, s: S.AugAssign) -> list[ast.stmt]:
        """`t op= v` is `t = t op v`, with the target's object (and index) evaluated once."""
        setup: list[ast.stmt] = []
        target = s.target
        if isinstance(target, S.Name):
            current = _name(self.local(target.id))
            store = _store(self.local(target.id))
        elif isinstance(target, S.Attribute):
            obj = self.temp()
            setup.append(ast.Assign(targets=[_store(obj)], value=self.expr(target.value)))
            current = ast.Attribute(value=_name(obj), attr=field_name(target.attr), ctx=ast.Load())
            store = ast.Attribute(value=_name(obj), attr=field_name(target.attr), ctx=ast.Store())
        elif isinstance(target, S.Index):
            obj, idx = self.temp(), self.temp()
            setup.append(ast.Assign(targets=[_store(obj)], value=self.expr(target.value)))
            setup.append(ast.Assign(targets=[_store(idx)], value=self.expr(target.index)))
            current = _call(self.rt("index"), [_name(obj), _name(idx)])
            new = self.arith(s.op, target.type, current, self.expr(s.value))
            return setup + [ast.Expr(value=_call(self.rt("set_index"), [_name(obj), _name(idx), new]))]
        else:
            raise CodegenError(f"cannot assign to {type(target).__name__}")
        new = self.arith(s.op, target.type, current, self.expr(s.value))
        return setup + [ast.Assign(targets=[store], value=new)]

    def stmt_If(self, s: S.If) -> list[ast.stmt]:
        orelse = self.block(s.orelse) if s.orelse else []
        return [ast.If(test=self.expr(s.test), body=self.block(s.body), orelse=orelse)]

    def stmt_While(self, s: S.While) -> list[ast.stmt]:
        return [ast.While(test=self.expr(s.test), body=self.block(s.body), orelse=[])]

    def stmt_For(self, s: S.For) -> list[ast.stmt]:
        var = _located(_store(self.local(s.var)), s.var_span)
        return [ast.For(target=var, iter=self.expr(s.iter), body=self.block(s.body), orelse=[])]

    def stmt_Match(self, s: S.Match) -> list[ast.stmt]:
        """Evaluate the subject once, then an if/elif chain; the last arm is the `else`
        (the checker made the arms exhaustive)."""
        subject = self.temp()
        out: list[ast.stmt] = [ast.Assign(targets=[_store(subject)], value=self.expr(s.subject))]
        chain: list[ast.stmt] = []
        for case in reversed(s.cases):
            body = []
            if case.pattern.binding is not None:
                bind = ast.Assign(targets=[_store(self.local(case.pattern.binding))],
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
        if kind in ("Ok", "Err"):
            cls = ast.Attribute(value=_name(subject), attr="__class__", ctx=ast.Load())
            op = ast.Is() if kind == "Err" else ast.IsNot()
            return ast.Compare(left=cls, ops=[op], comparators=[self.rt("SvcError")])
        op = ast.IsNot() if kind == "Some" else ast.Is()
        return ast.Compare(left=_name(subject), ops=[op], comparators=[ast.Constant(None)])
