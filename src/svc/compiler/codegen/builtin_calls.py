"""Code generation for builtin calls: `print(x)` → `_svc_print_(x)`, `trim(s)` →
`_svc_stdlib.trim(s)`, and the few forms that are not a call of a runtime function.

Kept out of generator.py so the generator is about the language itself; it hands every
builtin call to `lower`.
"""

from __future__ import annotations

import ast
from typing import Protocol

from svc.compiler import svctypes as T
from svc.compiler.codegen.pyast import ROUTES, CodegenError
from svc.compiler.codegen.pyast import call as _call
from svc.compiler.codegen.pyast import name as _name
from svc.compiler.codegen.stdlib_calls import runtime_call
from svc.compiler.front import syntax as S


class Generator(Protocol):
    """What lowering a builtin call needs from the module being generated."""

    def expr(self, e: S.Expr) -> ast.expr: ...

    def rt(self, name: str) -> ast.Name: ...

    def runtime(self, module: str, attr: str) -> ast.Attribute: ...

    def type_value(self, t: T.Type) -> ast.expr: ...


#: Builtins that map one-to-one onto a support function of another name.
_SUPPORT_CALLS = {
    "print": "print_", "len": "len_", "range": "range_", "copy": "copy", "parse_i64": "parse_i64",
    "env": "env", "sleep": "sleep", "json_encode": "json_encode", "error": "error",
    "not_found": "not_found", "internal_error": "internal_error", "conflict": "conflict",
    "unauthorized": "unauthorized", "forbidden": "forbidden", "html": "html",
    "str": "to_str", "i32": "to_i32",
}
_DB_CALLS = {"db_open", "db_exec", "db_begin", "db_commit", "db_rollback", "db_dialect",
             "db_migrate"}
_DB_TYPED_CALLS = {"db_all", "db_one"}
_CONCURRENCY_CALLS = {
    "task_demo", "scope_demo", "actor_demo", "actor_pair_demo", "supervisor_demo", "queue_demo",
}


def lower(gen: Generator, e: S.Call) -> ast.expr:
    """The Python expression of a checked builtin call."""
    name = e.target or (e.func.id if isinstance(e.func, S.Name) else "")
    args = [gen.expr(a) for a in e.args]
    arg_type = e.args[0].type if e.args else None
    if name in ("ok", "fail"):
        return args[0] if args else ast.Constant(None)
    if name in ("i64", "f64") and arg_type == (T.I64 if name == "i64" else T.F64):
        return args[0]
    if name == "i64":
        return _call(gen.rt("to_i64"), args) if arg_type == T.F64 else args[0]
    if name == "f64":
        return _call(gen.rt("to_f64"), args)
    if name in ("error_kind", "error_message"):
        return ast.Attribute(value=args[0], attr=name[6:], ctx=ast.Load())
    if name == "append":
        method = ast.Attribute(value=args[0], attr="append", ctx=ast.Load())
        return _call(method, args[1:])
    if name == "include_text":
        return ast.Constant(e.embedded_text if e.embedded_text is not None else "")
    if name == "json_decode":
        return _call(gen.rt("json_decode"), [gen.type_value(e.type_arg_types[0])] + args)
    if name == "serve":
        return _call(gen.runtime("server", "serve"), args + [_name(ROUTES)])
    if name in _DB_CALLS:
        return _call(gen.runtime("db", name), args)
    if name in _DB_TYPED_CALLS:
        return _call(gen.runtime("db", name), [gen.type_value(e.type_arg_types[0])] + args)
    if name in _CONCURRENCY_CALLS:
        return _call(gen.runtime("concurrency", name), args)
    if name in ("assert_true", "assert_eq"):  # a failure names the assertion's own line
        where = ast.Constant(f"{e.span.file}:{e.span.line}")
        return _call(gen.runtime("assertions", name), args + [where])
    if name in _SUPPORT_CALLS:
        return _call(gen.rt(_SUPPORT_CALLS[name]), args)
    target = runtime_call(name, arg_type)  # the standard library, headers and responses
    if target is not None:
        return _call(gen.runtime(*target), args)
    raise CodegenError(f"unknown builtin {name!r}")
