"""The small pieces the code generator's modules share: Python AST node builders, the
position rule (every node carries the `.svc` span it came from), the `_svc_` prefix of every
name the generator introduces, the Python attribute of a class field, and the checker's type
of an expression."""

from __future__ import annotations

import ast
from typing import Any, TypeVar

from svc.compiler.front import syntax
from svc.compiler.source import Span
from svc.compiler.svctypes import Type

PREFIX = "_svc_"

#: The entry module's route list, which `serve` receives.
ROUTES = PREFIX + "ROUTES"
#: The entry module's job and schedule tables (codegen/background_table.py).
JOBS = PREFIX + "JOBS"
SCHEDULES = PREFIX + "SCHEDULES"
#: The entry module's settings: svc.toml's tables (svc.rules.settings), the defaults without it.
SETTINGS = PREFIX + "SETTINGS"
#: The entry module's configuration table, when the program calls `config[T]()`
#: (svc.runtime.lib.config reads it before `main`).
CONFIG = PREFIX + "CONFIG"

#: A function's list of the transactions it began (`db_begin` adds to it); they end with it.
TX_SCOPE = PREFIX + "txs"


class CodegenError(Exception):
    """The checked program broke an annotation contract: a compiler bug, not a user error."""


def field_name(name: str) -> str:
    """The Python attribute of a class field. Python mangles `__x` names inside a class body
    (and msgspec's slots with them), so those get another attribute name; the JSON key stays
    `__x` through msgspec's `rename`."""
    if name.startswith("__") and not name.endswith("__"):
        return f"{PREFIX}f{name}"
    return name


Node = TypeVar("Node", bound=ast.AST)


def type_of(e: syntax.Expr) -> Type:
    """The type the checker gave `e`; every checked expression has one."""
    if e.type is None:
        raise CodegenError(f"an expression without a type at {e.span.line}:{e.span.col}")
    return e.type


def located(node: Node, span: Span) -> Node:
    """Give `node` and the unlocated nodes under it the `.svc` position `span`. A node that
    already has a position was located with its whole subtree, so the walk stops there
    (which keeps code generation linear in the size of the program)."""
    line, col = span.line, max(span.col - 1, 0)
    end_line, end_col = span.end_line, max(span.end_col - 1, 0)
    if (end_line, end_col) < (line, col):
        end_line, end_col = line, col
    todo: list[Any] = [node]  # any node; those with "lineno" in _attributes get a position
    while todo:
        sub = todo.pop()
        if "lineno" in sub._attributes:
            if hasattr(sub, "lineno"):
                continue
            sub.lineno, sub.col_offset, sub.end_lineno, sub.end_col_offset = line, col, end_line, end_col
        todo.extend(ast.iter_child_nodes(sub))
    return node


def name(id_: str) -> ast.Name:
    return ast.Name(id=id_, ctx=ast.Load())


def store(id_: str) -> ast.Name:
    return ast.Name(id=id_, ctx=ast.Store())


def call(func: ast.expr, args: list, keywords: list | None = None) -> ast.Call:
    return ast.Call(func=func, args=args, keywords=keywords or [])
