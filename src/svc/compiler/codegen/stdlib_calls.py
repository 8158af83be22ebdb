"""Code generation for the 0.2 standard library and for f-strings.

Standard-library builtins compile to calls of `svc.runtime.stdlib` functions; this table
says which. Kept out of codegen.py so the generator's core stays about the language itself.
"""

from __future__ import annotations

import ast

from svc.compiler.front import syntax as S
from svc.compiler import svctypes as T

#: Builtin → function of svc.runtime.stdlib (names Python's builtins would shadow get a `_`).
STDLIB_CALLS = {
    "trim": "trim", "lower": "lower", "upper": "upper", "contains": "contains",
    "starts_with": "starts_with", "ends_with": "ends_with", "replace": "replace",
    "split": "split", "join": "join", "parse_f64": "parse_f64", "to_bytes": "to_bytes",
    "to_str": "to_str", "slice": "slice_", "sorted": "sorted_", "reversed": "reversed_",
    "min": "min_", "max": "max_", "now_ms": "now_ms", "rfc3339": "rfc3339",
    "parse_rfc3339": "parse_rfc3339", "uuid4": "uuid4", "random_token": "random_token",
    "sha256_hex": "sha256_hex", "hmac_sha256_hex": "hmac_sha256_hex",
    "constant_time_eq": "constant_time_eq",
}

_ABS = {T.I64: "abs64", T.I32: "abs32", T.F64: "absf"}


#: Builtin → (module of svc.runtime, function) for the HTTP builtins.
HTTP_CALLS = {
    "header": ("compiled.headers", "header"), "cookie": ("compiled.headers", "cookie"),
    "respond": ("compiled.custom_response", "respond"),
    "set_header": ("compiled.custom_response", "set_header"),
    "add_header": ("compiled.custom_response", "add_header"),
}


def runtime_call(name: str, first_arg_type: T.Type | None) -> tuple[str, str] | None:
    """(module of svc.runtime, function) a builtin call compiles to: a standard-library or
    HTTP builtin; None for the others."""
    if name in HTTP_CALLS:
        return HTTP_CALLS[name]
    function = stdlib_function(name, first_arg_type)
    return None if function is None else ("stdlib", function)


def stdlib_function(name: str, first_arg_type: T.Type | None) -> str | None:
    """The stdlib function a builtin call compiles to, or None if it is not a stdlib one.
    `abs` depends on its type: the minimum integer has no absolute value of its own type."""
    if name == "abs":
        return _ABS[first_arg_type]
    return STDLIB_CALLS.get(name)


def fstring(e: S.FString, expr) -> ast.expr:
    """`f"a{x}b"` as a Python f-string. Python formats str, int and bool as svc's `str(x)`
    does; an f64 needs `!r` (the shortest text that reads back: `2.5`, `1e+16`)."""
    values: list[ast.expr] = []
    for part in e.parts:
        if isinstance(part, str):
            values.append(ast.Constant(part))
        else:
            conversion = ord("r") if part.type == T.F64 else -1
            values.append(ast.FormattedValue(value=expr(part), conversion=conversion))
    return ast.JoinedStr(values=values)
