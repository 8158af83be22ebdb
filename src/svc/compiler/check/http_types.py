"""The checker's rules for the HTTP types, `Headers`, `Upload` and `Response[T]`, and their
builtins.

`Headers` is the request's header fields and `Upload` a file the request brought (its
temporary file is closed when the request ends): like a view each belongs to one request, so it
may be passed to functions but never stored in a class field or a list, nor returned. `Response[T]`
is a handler's answer with its own status and header fields; its T is anything a plain
handler may answer (a JSON type, `Html` or `unit`), or `bytes` (written as they are: a
download). What the server refuses at run time
(`svc.rules.contract.status_problem`, `header_problem`) is a compile error when it is written as a
literal, so most mistakes never reach a running server.

The functions take what they work on as arguments (the `CheckContext`, or the `CallChecker`
checking a call), so this module imports neither the checker nor the body checker.
"""

from __future__ import annotations

from svc.compiler.builtin_table import HTTP_TYPE_NAMES
from svc.compiler.check import live_types
from svc.compiler.check.context import CheckContext
from svc.compiler.front import syntax
from svc.compiler.front.imports import TEST_SUFFIX
from svc.compiler.svctypes import (
    BYTES, HEADERS, HTML, UNKNOWN, UPLOAD, ListOf, Opt, ResponseOf, ResultOf, Type, contains_headers,
    contains_upload, format_type, is_json_type,
)
from svc.rules.contract import (
    error_header_problem, header_line_problem, header_problem, header_value_problem,
    method_problem, retry_after_problem, status_problem, target_problem,
)
from svc.rules.outbound_calls import method_problem as outbound_method_problem, url_problem

#: The type names this module resolves.
TYPE_NAMES = HTTP_TYPE_NAMES

BODY_TYPES = "class, List, number, str, bool, unit, T?, Html or bytes"


def resolve_type(ctx: CheckContext, texpr: syntax.NamedType, file: str) -> Type:
    """`Headers`, `Upload` or `Response[T]` as written; UNKNOWN after an error."""
    if texpr.name in ("Headers", "Upload"):
        if texpr.args:
            ctx.error(f"type '{texpr.name}' takes no type arguments", texpr.span)
            return UNKNOWN
        return HEADERS if texpr.name == "Headers" else UPLOAD
    if len(texpr.args) != 1:
        ctx.error(f"type 'Response' takes one type argument (the body's type), found "
                  f"{len(texpr.args)}", texpr.span)
        return UNKNOWN
    body = ctx.resolve_type(texpr.args[0], file)
    if body == UNKNOWN:
        return UNKNOWN
    problem = body_problem(body, ctx.field_types)
    if problem is not None:
        ctx.error(problem, texpr.args[0].span)
        return UNKNOWN
    return ResponseOf(body)


def body_problem(t: Type, class_fields) -> str | None:
    """Why `t` cannot be the body of a Response, or None."""
    if t == HTML or t == BYTES or t == UNKNOWN or is_json_type(t, class_fields):
        return None
    return f"a Response body must be what a handler may answer ({BODY_TYPES}), found {format_type(t)}"


def field_problem(t: Type) -> str | None:
    """Why a class field may not have type `t` (None when it may), for the HTTP types."""
    if contains_headers(t):
        return "a Headers cannot be stored in a class field (keep the values read with header())"
    if contains_upload(t):
        return (f"an Upload cannot be stored in a class field: its file is the request's "
                f"({UPLOAD_KEEPING})")
    if _contains_response(t):
        return "a Response cannot be stored in a class field (a handler returns it)"
    return live_types.storage_problem(t, "in a class field")


def list_problem(t: Type) -> str | None:
    """Why `t` may not be a list's element type, or None."""
    if contains_headers(t):
        return "a Headers cannot be put in a list"
    if contains_upload(t):
        return "an Upload cannot be put in a list (take one parameter per file)"
    return live_types.storage_problem(t, "in a list")


def return_problem(function: str, t: Type) -> str | None:
    """Why a function may not return `t`, or None."""
    if contains_headers(t):
        return (f"function '{function}' cannot return Headers (return the values read with "
                "header() instead)")
    if contains_upload(t):
        return f"function '{function}' cannot return an Upload ({UPLOAD_KEEPING})"
    return live_types.return_problem(function, t)


#: How a program keeps what an Upload holds past its request.
UPLOAD_KEEPING = "keep it with upload_move or upload_read"


def _contains_response(t: Type) -> bool:
    if isinstance(t, (ListOf, Opt)):
        return _contains_response(t.elem if isinstance(t, ListOf) else t.inner)
    return isinstance(t, ResponseOf)


# --- builtin calls ---------------------------------------------------------------------------

#: Builtins whose literal arguments are checked as the server would check them.
LITERAL_CHECKED = frozenset({"respond", "set_header", "add_header", "headers_of", "test_request",
                             "with_header", "too_many_requests",
                             "http_get", "http_send", "http_stub"})


def response_body(calls, arg: syntax.Expr, expected: Type | None) -> Type:
    """The body argument of `respond`: typed by the Response the context expects, if any."""
    if isinstance(expected, ResultOf):
        expected = expected.ok
    if isinstance(expected, ResponseOf):
        calls.expect(arg, expected.body, "body of respond: ")
        return expected.body
    t = calls.expr(arg, None)
    problem = body_problem(t, calls.ctx.field_types)
    if problem is not None:
        calls.error(problem, arg.span)
        return UNKNOWN
    return t


def response_of(arg_types: list[Type]) -> Type:
    """The type `respond(status, body)` makes."""
    if len(arg_types) < 2 or arg_types[1] == UNKNOWN:
        return UNKNOWN
    return ResponseOf(arg_types[1])


def check_literals(calls, call: syntax.Call) -> None:
    """A status, header name or value written as a literal is checked now, as the server
    would check it: `respond(700, x)` or `set_header(r, "Content-Length", n)` never runs."""
    args = call.args
    if call.target in ("headers_of", "test_request"):
        return _check_request_literals(calls, call)
    if call.target in OUTBOUND:
        return _check_outbound_literals(calls, call)
    if call.target == "respond" and args:
        status = int_literal(args[0])
        if status is not None and status_problem(status) is not None:
            calls.error(f"respond: {status_problem(status)}", args[0].span)
        return
    if call.target == "too_many_requests":
        seconds = int_literal(args[1]) if len(args) >= 2 else None
        if seconds is not None and retry_after_problem(seconds) is not None:
            calls.error(f"too_many_requests: {retry_after_problem(seconds)}", args[1].span)
        return
    name_problem = error_header_problem if call.target == "with_header" else header_problem
    if len(args) >= 2 and isinstance(args[1], syntax.StrLit):
        problem = name_problem(args[1].value)
        if problem is not None:
            calls.error(f"{call.target}: {problem}", args[1].span)
    if len(args) >= 3 and isinstance(args[2], syntax.StrLit):
        problem = header_value_problem(args[2].value)
        if problem is not None:
            calls.error(f"{call.target}: {problem}", args[2].span)


def int_literal(e: syntax.Expr) -> int | None:
    """The value of an integer written as a literal (`201`, `-1`), else None (computed)."""
    if isinstance(e, syntax.IntLit):
        return e.value
    if isinstance(e, syntax.Unary) and e.op == "-" and isinstance(e.operand, syntax.IntLit):
        return -e.operand.value
    return None


def _check_request_literals(calls, call: syntax.Call) -> None:
    """`headers_of(["Name: value"])` and `test_request(db, "GET", "/path", ...)`: literal
    lines, methods and paths that test_client would refuse at run time are refused now."""
    args = call.args
    if call.target == "headers_of":
        lines = args[0].elements if args and isinstance(args[0], syntax.ListLit) else []
        for line in lines:
            problem = header_line_problem(line.value) if isinstance(line, syntax.StrLit) else None
            if problem is not None:
                calls.error(f"headers_of: {problem}", line.span)
        return
    for index, problem_of in ((1, method_problem), (2, target_problem)):
        literal = args[index] if len(args) > index else None
        if isinstance(literal, syntax.StrLit):
            problem = problem_of(literal.value)
            if problem is not None:
                calls.error(f"test_request: {problem}", literal.span)


#: The outbound client's builtins, by where their method and URL arguments are (-1: none).
OUTBOUND = {"http_get": (-1, 0), "http_send": (0, 1), "http_stub": (0, 1)}


def _check_outbound_literals(calls, call: syntax.Call) -> None:
    """`http_send("FETCH", "ftp://x", ...)`: a literal method or URL the client would refuse
    at run time (svc.rules.outbound_calls) is refused now."""
    for index, problem_of in zip(OUTBOUND[call.target or ""], (outbound_method_problem,
                                                               url_problem)):
        literal = call.args[index] if 0 <= index < len(call.args) else None
        if isinstance(literal, syntax.StrLit):
            problem = problem_of(literal.value)
            if problem is not None:
                calls.error(f"{call.target}: {problem}", literal.span)


def check_test_only(calls, call: syntax.Call) -> None:
    """A builtin of the test client used outside a test file."""
    if not calls.file.endswith(TEST_SUFFIX):
        calls.error(f"{call.target} can only be called in a test file (*{TEST_SUFFIX}), "
                    "which `svcc test` runs", call.func.span)
