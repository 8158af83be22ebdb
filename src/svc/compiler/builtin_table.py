"""Signatures of the built-in functions (docs/reference/builtins.md), as data the checker
interprets.

Most builtins have plain typed parameters. The rest accept a family of types; those families
are named by the `Kind` strings below, and `Builtin.returns` may name how the result type is
derived (from an argument, a type argument or the context) instead of giving a fixed type.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from svc.compiler.svctypes import HEADERS, Opt  # the HTTP builtins' types
from svc.compiler.svctypes import (
    BOOL, BYTES, DB, ERROR, F64, HTML, I32, I64, STR, TX, UNIT, ListOf, ResultOf, Type,
)

# Parameter kinds: an argument must be ...
INTEGER_OR_FLOAT = "number"  # i64, i32 or f64
FORMATTABLE = "formattable"  # i64, i32, f64 or bool (`str(x)`)
SIZED = "sized"  # str, bytes, view[bytes] or a List (`len`)
LIST = "list"  # any List[T]
ELEMENT = "element"  # a value of the element type of the first argument (`append`)
ANY = "any"  # any value type (not a view)
JSON = "json"  # a JSON-encodable value
TEXT = "text"  # str, bytes or view[bytes] (`json_decode`)
DB_ARG = "db_arg"  # scalar or T? of a scalar, or view[bytes]: a SQL argument
DB_OR_TX = "db_or_tx"  # a Db, or a Tx (the statement runs inside that transaction)
LITERAL_PATH = "literal_path"  # a string literal naming a file (`include_text`)
OK_VALUE = "ok_value"  # the T of the Result type taken from the context (`ok`)
SAME_AS_FIRST = "same_as_first"  # a value of the first argument's type (`assert_eq`)
STR_OR_LIST = "str_or_list"  # str or any List[T] (`contains`)
PART = "part"  # a str in a str, an element in a List (the second argument of `contains`)
BYTES_OR_VIEW = "bytes_or_view"  # bytes or view[bytes] (`to_str`)
SORTABLE_LIST = "sortable_list"  # List[i64], List[i32], List[f64] or List[str] (`sorted`)
RESPONSE = "response"  # any Response[T] (`set_header`, `add_header`)
RESPONSE_BODY = "response_body"  # what a handler may answer; typed by an expected Response[T]

Kind = str
ParamSpec = Union[Type, Kind]

# Derived result types:
SAME_AS_ARG = "same_as_arg"  # the first argument's type (`copy`)
FROM_CONTEXT = "from_context"  # the Result type the context expects (`ok`, `error`, ...)
RESULT_OF_TYPE_ARG = "result_of_type_arg"  # Result[T, Error] (`json_decode[T]`)
RESULT_LIST_OF_TYPE_ARG = "result_list_of_type_arg"  # Result[List[T], Error] (`db_all[T]`)
RESULT_OPT_OF_TYPE_ARG = "result_opt_of_type_arg"  # Result[T?, Error] (`db_one[T]`)
RESPONSE_OF_BODY = "response_of_body"  # Response[T], T the second argument's type (`respond`)

# Type-argument constraints:
ROW_CLASS = "row_class"  # a class whose fields are scalars or T? of scalars
JSON_TYPE = "json_type"  # a JSON-decodable type


@dataclass(frozen=True)
class Builtin:
    name: str
    params: tuple[ParamSpec, ...]
    returns: Union[Type, str]
    is_async: bool = False
    variadic: ParamSpec | None = None  # extra arguments after `params` (SQL arguments)
    type_param: str | None = None  # constraint of the one type argument, when generic


def _b(name: str, params: tuple, returns, **kw) -> tuple[str, Builtin]:
    return name, Builtin(name, params, returns, **kw)


_DEMO = dict(is_async=True)

BUILTINS: dict[str, Builtin] = dict(
    [
        # general
        _b("print", (STR,), UNIT),
        _b("len", (SIZED,), I64),
        _b("append", (LIST, ELEMENT), UNIT),
        _b("str", (FORMATTABLE,), STR),
        _b("i64", (INTEGER_OR_FLOAT,), I64),
        _b("i32", (INTEGER_OR_FLOAT,), ResultOf(I32)),
        _b("f64", (INTEGER_OR_FLOAT,), F64),
        _b("copy", (ANY,), SAME_AS_ARG),
        _b("parse_i64", (STR,), ResultOf(I64)),
        _b("env", (STR, STR), STR),
        _b("sleep", (I64,), UNIT, is_async=True),
        _b("json_encode", (JSON,), STR),
        _b("json_decode", (TEXT,), RESULT_OF_TYPE_ARG, type_param=JSON_TYPE),
        # results and errors
        _b("ok", (OK_VALUE,), FROM_CONTEXT),
        _b("error", (STR,), FROM_CONTEXT),
        _b("not_found", (STR,), FROM_CONTEXT),
        _b("internal_error", (STR,), FROM_CONTEXT),
        _b("fail", (ERROR,), FROM_CONTEXT),
        _b("error_kind", (ERROR,), STR),
        _b("error_message", (ERROR,), STR),
        _b("conflict", (STR,), FROM_CONTEXT),
        _b("unauthorized", (STR,), FROM_CONTEXT),
        _b("forbidden", (STR,), FROM_CONTEXT),
        # text (the standard library, runtime/stdlib.py)
        _b("trim", (STR,), STR),
        _b("lower", (STR,), STR),
        _b("upper", (STR,), STR),
        _b("contains", (STR_OR_LIST, PART), BOOL),
        _b("starts_with", (STR, STR), BOOL),
        _b("ends_with", (STR, STR), BOOL),
        _b("replace", (STR, STR, STR), STR),
        _b("split", (STR, STR), ListOf(STR)),
        _b("join", (ListOf(STR), STR), STR),
        _b("parse_f64", (STR,), ResultOf(F64)),
        _b("to_bytes", (STR,), BYTES),
        _b("to_str", (BYTES_OR_VIEW,), ResultOf(STR)),
        # lists
        _b("slice", (LIST, I64, I64), SAME_AS_ARG),
        _b("sorted", (SORTABLE_LIST,), SAME_AS_ARG),
        _b("reversed", (LIST,), SAME_AS_ARG),
        # numbers
        _b("min", (INTEGER_OR_FLOAT, SAME_AS_FIRST), SAME_AS_ARG),
        _b("max", (INTEGER_OR_FLOAT, SAME_AS_FIRST), SAME_AS_ARG),
        _b("abs", (INTEGER_OR_FLOAT,), SAME_AS_ARG),
        # time
        _b("now_ms", (), I64),
        _b("rfc3339", (I64,), STR),
        _b("parse_rfc3339", (STR,), ResultOf(I64)),
        # randomness and hashing
        _b("uuid4", (), STR),
        _b("random_token", (I64,), STR),
        _b("sha256_hex", (TEXT,), STR),
        _b("hmac_sha256_hex", (TEXT, TEXT), STR),
        _b("constant_time_eq", (STR, STR), BOOL),
        # HTTP: request headers, responses (runtime/compiled/headers.py, runtime/compiled/custom_response.py)
        _b("header", (HEADERS, STR), Opt(STR)),
        _b("cookie", (HEADERS, STR), Opt(STR)),
        _b("respond", (I64, RESPONSE_BODY), RESPONSE_OF_BODY),
        _b("set_header", (RESPONSE, STR, STR), UNIT),
        _b("add_header", (RESPONSE, STR, STR), UNIT),
        # tests (`svcc test`)
        _b("assert_true", (BOOL,), UNIT),
        _b("assert_eq", (ANY, SAME_AS_FIRST), UNIT),
        # HTML
        _b("html", (STR,), HTML),
        _b("include_text", (LITERAL_PATH,), STR),
        # database
        _b("db_open", (STR,), ResultOf(DB), is_async=True),
        _b("db_exec", (DB_OR_TX, STR), ResultOf(I64), is_async=True, variadic=DB_ARG),
        _b("db_all", (DB_OR_TX, STR), RESULT_LIST_OF_TYPE_ARG, is_async=True, variadic=DB_ARG,
           type_param=ROW_CLASS),
        _b("db_one", (DB_OR_TX, STR), RESULT_OPT_OF_TYPE_ARG, is_async=True, variadic=DB_ARG,
           type_param=ROW_CLASS),
        _b("db_begin", (DB,), ResultOf(TX), is_async=True),
        _b("db_commit", (TX,), ResultOf(UNIT), is_async=True),
        _b("db_rollback", (TX,), ResultOf(UNIT), is_async=True),
        _b("db_dialect", (DB_OR_TX,), STR),
        _b("db_migrate", (DB, ListOf(STR)), ResultOf(I64), is_async=True),
        # server
        _b("serve", (DB, I64), ResultOf(UNIT), is_async=True),
        # runtime test functions
        _b("task_demo", (I64,), ResultOf(I64), **_DEMO),
        _b("scope_demo", (I64,), ResultOf(I64), **_DEMO),
        _b("actor_demo", (I64,), ResultOf(I64), **_DEMO),
        _b("actor_pair_demo", (I64,), ResultOf(I64), **_DEMO),
        _b("supervisor_demo", (), ResultOf(I64), **_DEMO),
        _b("queue_demo", (I64,), ResultOf(I64), **_DEMO),
    ]
)

#: `range(n)` / `range(a, b)` is only legal as the iterable of a `for` loop.
RANGE = "range"

#: Every name a program may not define itself: the builtins, `range` and the type names.
TYPE_NAMES = frozenset({"i64", "i32", "f64", "bool", "str", "bytes", "unit", "Html", "Db", "Tx",
                        "Error", "List", "Result", "view", "Headers", "Response"})
#: The HTTP types, resolved by compiler/check/http_types.py.
HTTP_TYPE_NAMES = frozenset({"Headers", "Response"})
RESERVED_NAMES = frozenset(BUILTINS) | {RANGE} | TYPE_NAMES

#: Human-readable names of the parameter kinds, for "expected ..., found ..." messages.
KIND_TEXT = {
    INTEGER_OR_FLOAT: "a number (i64, i32 or f64)",
    FORMATTABLE: "i64, i32, f64 or bool",
    SIZED: "str, bytes, view[bytes] or a List",
    LIST: "a List",
    ANY: "a value",
    JSON: "a JSON-encodable value (class, List, number, str, bool, unit or T?)",
    TEXT: "str, bytes or view[bytes]",
    DB_ARG: "i64, i32, f64, bool, str, bytes or T? of those",
    DB_OR_TX: "a Db or a Tx",
    LITERAL_PATH: "a string literal",
    STR_OR_LIST: "str or a List",
    BYTES_OR_VIEW: "bytes or view[bytes]",
    SORTABLE_LIST: "List[i64], List[i32], List[f64] or List[str]",
    RESPONSE: "a Response[T]",
}
