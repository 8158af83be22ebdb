"""Code generation for f-strings: `f"a{x}b"` as a Python f-string."""

from __future__ import annotations

import ast
from typing import Callable

from svc.compiler import svctypes as T
from svc.compiler.front import syntax


def fstring(e: syntax.FString, expr: Callable[[syntax.Expr], ast.expr]) -> ast.expr:
    """Python formats str, int and bool as svc's `str(x)` does; an f64 needs `!r` (the
    shortest text that reads back: `2.5`, `1e+16`)."""
    values: list[ast.expr] = []
    for part in e.parts:
        if isinstance(part, str):
            values.append(ast.Constant(part))
        else:
            conversion = ord("r") if part.type == T.F64 else -1
            values.append(ast.FormattedValue(value=expr(part), conversion=conversion))
    return ast.JoinedStr(values=values)
