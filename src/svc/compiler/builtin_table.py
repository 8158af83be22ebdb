"""The built-in functions: one record per builtin, the one place a builtin is defined.

A record holds what every part of the toolchain needs to know about a builtin:

- its signature as the reference (docs/reference/builtins.md) writes it, and a one-line
  summary: an editor's hover shows both; tests/docs/test_reference.py checks the reference
  has every signature as written here, and nothing else;
- its parameters and result, as data the checker interprets (compiler/check/calls.py);
- what a call lowers to: a function of the runtime, or a form the code generator writes itself
  (compiler/codegen/builtin_calls.py);
- the kinds of error it can return, which `svcc openapi` turns into the statuses a route can
  answer (compiler/check/error_kinds.py).

Adding a builtin is adding its record here, its runtime function and its reference entry.

Most builtins have plain typed parameters. The rest accept a family of types; those families
are named by the `Kind` strings below, and `Builtin.returns` may name how the result type is
derived (from an argument, a type argument or the context) instead of giving a fixed type.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from svc.compiler.svctypes import HEADERS, UPLOAD, Opt, ResponseOf  # the HTTP builtins' types
from svc.compiler.svctypes import MapOf  # the log builtins' fields
from svc.compiler.svctypes import (
    BOOL, BYTES, DB, ERROR, F64, HTML, I32, I64, STR, TX, UNIT, ListOf, ResultOf, Type,
)

# Parameter kinds: an argument must be ...
INTEGER_OR_FLOAT = "number"  # i64, i32 or f64
FORMATTABLE = "formattable"  # i64, i32, f64 or bool (`str(x)`)
SIZED = "sized"  # str, bytes, view[bytes], a List or a Map (`len`)
MAP = "map"  # any Map[str, T]
MAP_VALUE = "map_value"  # a value of the value type of the first argument, a Map (`set`)
LIST = "list"  # any List[T]
ELEMENT = "element"  # a value of the element type of the first argument (`append`)
ANY = "any"  # any value type (not a view)
JSON = "json"  # a JSON-encodable value
TEXT = "text"  # str, bytes or view[bytes] (`json_decode`)
DB_ARG = "db_arg"  # a SQL argument: scalar, enum, JSON value, T? of one (check/db_types.py)
DB_OR_TX = "db_or_tx"  # a Db, or a Tx (the statement runs inside that transaction)
LITERAL_PATH = "literal_path"  # a string literal naming a file (`include_text`)
LITERAL_JOB = "literal_job"  # a str literal naming a @job of the program (`enqueue`)
JOB_PAYLOAD = "job_payload"  # a value of that job's payload class (`enqueue`)
LITERAL_PATTERN = "literal_pattern"  # a str literal holding a valid regex (`matches`, ...)
OK_VALUE = "ok_value"  # the T of the Result type taken from the context (`ok`)
SAME_AS_FIRST = "same_as_first"  # a value of the first argument's type (`assert_eq`)
STR_OR_LIST = "str_or_list"  # str, any List[T] or any Map[str, T] (`contains`)
PART = "part"  # a str in a str, an element in a List, a key of a Map (`contains`)
BYTES_OR_VIEW = "bytes_or_view"  # bytes or view[bytes] (`to_str`)
SORTABLE_LIST = "sortable_list"  # List[i64], List[i32], List[f64] or List[str] (`sorted`)
RESPONSE = "response"  # any Response[T] (`set_header`, `add_header`)
RESPONSE_BODY = "response_body"  # what a handler may answer; typed by an expected Response[T]
HEADERS_OR_RESPONSE = "headers_or_response"  # a request's Headers or a Response[T] (`header`)
RESULT_ARG = "result_arg"  # any Result[T, Error]; typed by the Result the context expects
#                            (`with_header(unauthorized("..."), ...)`)
PYTHON_FUNCTION = "python_function"  # the name of a @python function (`python_stub`)
PYTHON_ANSWER = "python_answer"  # a value of that function's return type (`python_stub`)
TOPIC_NAME = "topic_name"  # a str literal naming a topic (`topic`, a Topic constant's value)
TOPIC = "topic"  # any Topic[T] (`publish`, `subscribe`)
SUBSCRIPTION = "subscription"  # any Subscription[T] (`receive`)
EVENTS = "events"  # any Events[T] (`send_event`)
SOCKET = "socket"  # any WebSocket[In, Out] (`ws_send`)
#: a value of the message type of the argument before: T of a Topic[T] or Events[T], Out of
#: a WebSocket[In, Out] (`publish`, `send_event`, `ws_send`)
MESSAGE = "message"
SOCKET_SUBSCRIPTION = "socket_subscription"  # a Subscription[Out] for the WebSocket[In, Out]
#                                              before it (`ws_forward`)

Kind = str
ParamSpec = Union[Type, Kind]

# Derived result types:
SAME_AS_ARG = "same_as_arg"  # the first argument's type (`copy`)
OPT_OF_MAP_VALUE = "opt_of_map_value"  # T? for a first argument Map[str, T] (`get`)
FROM_CONTEXT = "from_context"  # the Result type the context expects (`ok`, `fail`)
#: The error makers (`error`, `not_found`, ...): the Error itself where the context expects an
#: Error (`let e: Error = not_found("..")`, kept and returned later with fail), else as
#: FROM_CONTEXT. Either way the call makes the same value: a Result is unboxed at run time.
ERROR_OR_RESULT = "error_or_result"
RESULT_OF_TYPE_ARG = "result_of_type_arg"  # Result[T, Error] (`json_decode[T]`)
RESULT_LIST_OF_TYPE_ARG = "result_list_of_type_arg"  # Result[List[T], Error] (`db_all[T]`)
RESULT_OPT_OF_TYPE_ARG = "result_opt_of_type_arg"  # Result[T?, Error] (`db_one[T]`)
RESPONSE_OF_BODY = "response_of_body"  # Response[T], T the second argument's type (`respond`)
BODY_OF_RESPONSE = "body_of_response"  # T, the first argument being a Response[T] (`body`)
TYPE_ARG = "type_arg"  # T itself (`config[T]`)
TOPIC_FROM_CONTEXT = "topic_from_context"  # the Topic[T] the constant declares (`topic`)
RESULT_SUBSCRIPTION = "result_subscription"  # Result[Subscription[T], Error] for the
#                                               Topic[T] argument (`subscribe`)
OPT_OF_MESSAGE = "opt_of_message"  # T? for a Subscription[T] (`receive`), In? for a
#                                    WebSocket[In, Out] (`ws_receive`)

# Type-argument constraints:
ROW_CLASS = "row_class"  # a class (fields by name), or a scalar or enum (one column): db_types.py
JSON_TYPE = "json_type"  # a JSON-decodable type
CONFIG_CLASS = "config_class"  # a class whose fields are i64, i32, f64, bool, str, enums or T?


@dataclass(frozen=True)
class RuntimeCall:
    """A call that compiles to `svc.runtime.<module>.<function>(...)`: a generic builtin's
    type argument first (as a run-time type), then the call's arguments, then, when
    `call_site`, the call's `file:line` (an assertion's failure names its own line), then,
    when `tx_scope`, the calling function's list of the transactions it began (codegen
    wraps a function making such a call so that they end with it)."""
    module: str  # of svc.runtime: "lib.support", "lib.stdlib", "db", "http.headers", ...
    function: str
    call_site: bool = False
    tx_scope: bool = False


@dataclass(frozen=True)
class SpecialForm:
    """A call that compiles to code of its own, written by compiler/codegen/builtin_calls.py:
    no runtime function does what it does, or not as cheaply."""
    name: str


UNBOXED = SpecialForm("unboxed")  # ok(x), fail(e): the value itself (a Result is unboxed)
NUMBER_CONVERSION = SpecialForm("number_conversion")  # i64(x), f64(x): nothing if x has the type
ERROR_FIELD = SpecialForm("error_field")  # error_kind(e), error_message(e): e.kind, e.message
LIST_APPEND = SpecialForm("list_append")  # append(xs, x): the list's own append method
EMBEDDED_TEXT = SpecialForm("embedded_text")  # include_text(f): the text, read when compiling
ABS_BY_TYPE = SpecialForm("abs_by_type")  # abs(x): stdlib abs64, abs32 or absf, by x's type
WITH_ROUTES = SpecialForm("with_routes")  # serve(db, port): server.serve(db, port, routes,
#   jobs, schedules); test_request(...): test_client.test_request(..., routes); run_jobs(db):
#   jobs.run_jobs(db, jobs), run_jobs_now(db) alike (the entry module's tables,
#   codegen/builtin_calls.py)
HEADER_BY_TYPE = SpecialForm("header_by_type")  # header(x, name): of a Headers or a Response
ENQUEUE_JOB = SpecialForm("enqueue_job")  # enqueue(db, "name", p): jobs.enqueue(db, "name",
#                                           p, the job's attempts, its deadline in ms)
PYTHON_STUB = SpecialForm("python_stub")  # python_stub(f, answer):
#   python_calls.python_stub("f", answer): the function's name, not the function
TOPIC_NAME_VALUE = SpecialForm("topic_name_value")  # topic("name"): the name, a constant
WITH_MESSAGE_TYPE = SpecialForm("with_message_type")  # receive(s), ws_receive(ws): the function
#   of the same name in runtime/lib/live.py, given the message type first, as a run-time type
#   (it decodes the JSON)
MIGRATE = SpecialForm("migrate")  # db_migrate(db, steps) as it is; db_migrate(db): the steps
#   svc.toml's [migrations] declares, embedded per dialect (migrations.db_migrate_declared)

Lowering = Union[RuntimeCall, SpecialForm]

# Kinds of error a builtin can return (language.md §6):
INVALID = frozenset({"invalid"})
#: A database call: database (500), busy (503), timeout (504); a UNIQUE, PRIMARY KEY or
#: FOREIGN KEY violation is conflict, NOT NULL and CHECK invalid.
DATABASE_ERRORS = frozenset({"database", "busy", "timeout", "conflict", "invalid"})
#: An outbound call (http_get, http_send): no answer in time (504), any other failure (502).
OUTBOUND_ERRORS = frozenset({"timeout", "bad_gateway"})
#: The runtime self-tests: an n out of range is invalid; a failed child, actor or worker internal.
DEMO_ERRORS = frozenset({"invalid", "internal"})


@dataclass(frozen=True)
class Builtin:
    """One builtin. The checker reads `params`, `returns`, `is_async`, `variadic` and
    `type_param`; the code generator `lowering`; the editor `signature` and `summary`;
    `svcc openapi` `errors`."""
    name: str
    signature: str  # as the reference writes it: `async db_one[T](db: Db, ...) -> Result[...]`
    summary: str  # one sentence
    params: tuple[ParamSpec, ...]
    returns: Union[Type, str]
    lowering: Lowering
    is_async: bool = False
    variadic: ParamSpec | None = None  # extra arguments after `params` (SQL arguments)
    type_param: str | None = None  # constraint of the one type argument, when generic
    errors: frozenset[str] = frozenset()  # the kinds of the errors it can make
    test_only: bool = False  # callable in *_test.svc files only (`test_request`)
    fewest: int | None = None  # the fewest arguments, when the last params may be left out
    # What a call does outside the database that running the handler again would repeat
    # (compiler/effects: a route whose calls have none is retried after a clash); "" for
    # none. db_exec/db_all/db_one/enqueue given a Db, and db_begin, are judged there.
    effect: str = ""


def _b(signature: str, params: tuple, returns: Union[Type, str], lowering: Lowering | str,
       summary: str, *, errors: frozenset[str] = frozenset(), variadic: ParamSpec | None = None,
       type_param: str | None = None, call_site: bool = False, tx_scope: bool = False,
       test_only: bool = False, fewest: int | None = None, effect: str = "") -> tuple[str, Builtin]:
    """A record from its signature (which gives the name and whether it is async) and the
    rest; a lowering written "module.function" is a call of that runtime function."""
    name = signature.removeprefix("async ").split("(")[0].split("[")[0]
    if isinstance(lowering, str):
        module, _, function = lowering.rpartition(".")
        lowering = RuntimeCall(module, function, call_site, tx_scope)
    return name, Builtin(name, signature, summary, params, returns, lowering,
                         signature.startswith("async "), variadic, type_param, errors, test_only,
                         fewest, effect)


BUILTINS: dict[str, Builtin] = dict([
    # general
    _b("print(text: str)", (STR,), UNIT, "lib.support.print_",
       "Writes the text and a newline to standard output.", effect="writes to standard output"),
    _b("len(x) -> i64", (SIZED,), I64, "lib.support.len_",
       "The length of a str (in UTF-8 bytes), bytes, view[bytes], List or Map (its keys)."),
    _b("append(xs: List[T], value: T)", (LIST, ELEMENT), UNIT, LIST_APPEND,
       "Adds value at the end of the list xs."),
    _b("str(x) -> str", (FORMATTABLE,), STR, "lib.support.format_value",
       "An i64, i32, f64 or bool as text."),
    _b("i64(x) -> i64", (INTEGER_OR_FLOAT,), I64, NUMBER_CONVERSION,
       "Any number as an i64 (an f64 is truncated toward zero)."),
    _b("i32(x) -> Result[i32, Error]", (INTEGER_OR_FLOAT,), ResultOf(I32), "lib.support.to_i32",
       "Any number narrowed to i32, or an invalid error when it does not fit.", errors=INVALID),
    _b("f64(x) -> f64", (INTEGER_OR_FLOAT,), F64, NUMBER_CONVERSION, "Any number as an f64."),
    _b("copy(x: T) -> T", (ANY,), SAME_AS_ARG, "lib.support.copy",
       "A deep copy of a value (lists and class instances are shared otherwise)."),
    _b("parse_i64(text: str) -> Result[i64, Error]", (STR,), ResultOf(I64), "lib.support.parse_i64",
       "Reads a decimal integer from text, or an invalid error.", errors=INVALID),
    _b("env(name: str, default: str) -> str", (STR, STR), STR, "lib.support.env",
       "The environment variable name, or default when it is not set."),
    _b("config[T]() -> T", (), TYPE_ARG, "lib.config.config",
       "The program's configuration as a T, read at start: each field from the environment "
       "variable SVC_CONFIG_<FIELD>, else svc.toml's [config] table.",
       type_param=CONFIG_CLASS),
    _b("async sleep(ms: i64)", (I64,), UNIT, "lib.support.sleep",
       "Waits ms milliseconds without blocking other tasks."),
    _b("json_encode(value) -> str", (JSON,), STR, "lib.support.json_encode",
       "A value of a JSON type as compact JSON text."),
    _b("json_decode[T](text) -> Result[T, Error]", (TEXT,), RESULT_OF_TYPE_ARG,
       "lib.support.json_decode", "Decodes JSON text (str, bytes or view[bytes]) into a T, or an "
       "invalid error saying what and where.", errors=INVALID, type_param=JSON_TYPE),
    _b("json_decode_lenient[T](text) -> Result[T, Error]", (TEXT,), RESULT_OF_TYPE_ARG,
       "lib.support.json_decode_lenient", "As json_decode[T], but object fields that T's "
       "classes do not declare are ignored, at any depth (another service's answer).",
       errors=INVALID, type_param=JSON_TYPE),
    # results and errors
    _b("ok(value: T)", (OK_VALUE,), FROM_CONTEXT, UNBOXED,
       "The success of a Result, holding value (ok(()) for Result[unit, Error])."),
    _b("error(reason: str)", (STR,), ERROR_OR_RESULT, "lib.support.error",
       "An error of kind invalid (a 400 from a handler).", errors=INVALID),
    _b("not_found(reason: str)", (STR,), ERROR_OR_RESULT, "lib.support.not_found",
       "An error of kind not_found (a 404 from a handler).", errors=frozenset({"not_found"})),
    _b("internal_error(reason: str)", (STR,), ERROR_OR_RESULT, "lib.support.internal_error",
       "An error of kind internal (a 500; the reason goes to the log only).",
       errors=frozenset({"internal"})),
    _b("fail(e: Error)", (ERROR,), FROM_CONTEXT, UNBOXED,
       "An error that is e itself, kind and message kept."),
    _b("error_kind(e: Error) -> str", (ERROR,), STR, ERROR_FIELD,
       "The kind of an error: invalid, not_found, conflict, unauthorized, forbidden, "
       "unprocessable, too_many_requests, internal, database, timeout, busy or bad_gateway."),
    _b("error_message(e: Error) -> str", (ERROR,), STR, ERROR_FIELD, "The message of an error."),
    _b("conflict(reason: str)", (STR,), ERROR_OR_RESULT, "lib.support.conflict",
       "An error of kind conflict (a 409 from a handler).", errors=frozenset({"conflict"})),
    _b("unauthorized(reason: str)", (STR,), ERROR_OR_RESULT, "lib.support.unauthorized",
       "An error of kind unauthorized (a 401 from a handler).",
       errors=frozenset({"unauthorized"})),
    _b("forbidden(reason: str)", (STR,), ERROR_OR_RESULT, "lib.support.forbidden",
       "An error of kind forbidden (a 403 from a handler).", errors=frozenset({"forbidden"})),
    # errors whose answers say more (runtime/lib/errors.py)
    _b("unprocessable(reason: str, fields: Map[str, str])", (STR, MapOf(STR)), ERROR_OR_RESULT,
       "lib.errors.unprocessable", "An error of kind unprocessable (a 422 from a handler) naming "
       "what is wrong with each field: {\"error\": reason, \"fields\": fields}.",
       errors=frozenset({"unprocessable"})),
    _b("too_many_requests(reason: str, retry_after_s: i64)", (STR, I64), ERROR_OR_RESULT,
       "lib.errors.too_many_requests", "An error of kind too_many_requests (a 429 from a handler) "
       "whose answer carries Retry-After: retry_after_s (0 or more).",
       errors=frozenset({"too_many_requests"})),
    _b("with_header(r: Result[T, Error], name: str, value: str) -> Result[T, Error]",
       (RESULT_ARG, STR, STR), SAME_AS_ARG, "lib.errors.with_header",
       "An error result with the header field called name (any case) set to value on its "
       "answer (WWW-Authenticate on a 401, Retry-After on a 503); an ok result as it is."),
    _b("error_fields(e: Error) -> Map[str, str]", (ERROR,), MapOf(STR), "lib.errors.error_fields",
       "The field reasons of an unprocessable error (a new map); empty for other errors."),
    # text (the standard library, runtime/lib/stdlib.py)
    _b("trim(text: str) -> str", (STR,), STR, "lib.stdlib.trim",
       "The text without Unicode whitespace at either end."),
    _b("lower(text: str) -> str", (STR,), STR, "lib.stdlib.lower",
       "The text in lower case (Unicode case mapping)."),
    _b("upper(text: str) -> str", (STR,), STR, "lib.stdlib.upper",
       "The text in upper case (Unicode case mapping; ß becomes SS)."),
    _b("contains(x, part) -> bool", (STR_OR_LIST, PART), BOOL, "lib.stdlib.contains",
       "Whether a str holds part as a substring, a List an element == part, or a Map the "
       "key part."),
    _b("starts_with(text: str, prefix: str) -> bool", (STR, STR), BOOL, "lib.stdlib.starts_with",
       "Whether text begins with prefix."),
    _b("ends_with(text: str, suffix: str) -> bool", (STR, STR), BOOL, "lib.stdlib.ends_with",
       "Whether text ends with suffix."),
    _b("index_of(text: str, part: str) -> i64", (STR, STR), I64, "lib.stdlib.index_of",
       "Where part first occurs in text, in UTF-8 bytes as len and text[a:b] count, or -1."),
    _b("replace(text: str, old: str, new: str) -> str", (STR, STR, STR), STR, "lib.stdlib.replace",
       "Every non-overlapping old replaced by new (an empty old changes nothing)."),
    _b("split(text: str, sep: str) -> List[str]", (STR, STR), ListOf(STR), "lib.stdlib.split",
       "The pieces of text between the seps (an empty sep gives [text])."),
    _b("join(parts: List[str], sep: str) -> str", (ListOf(STR), STR), STR, "lib.stdlib.join",
       "The parts with sep between each two."),
    _b("parse_f64(text: str) -> Result[f64, Error]", (STR,), ResultOf(F64), "lib.stdlib.parse_f64",
       "Reads a decimal number from text, or an invalid error (no NaN or infinities).",
       errors=INVALID),
    _b("to_bytes(text: str) -> bytes", (STR,), BYTES, "lib.stdlib.to_bytes",
       "The UTF-8 bytes of text."),
    _b("to_str(data) -> Result[str, Error]", (BYTES_OR_VIEW,), ResultOf(STR), "lib.stdlib.to_str",
       "UTF-8 bytes or view[bytes] as a str, or an invalid error.", errors=INVALID),
    # regular expressions (svc/rules/patterns.py: RE2's syntax, linear-time matching)
    _b("matches(text: str, pattern: str) -> bool", (STR, LITERAL_PATTERN), BOOL,
       "lib.stdlib.matches", "Whether the pattern (a literal) matches anywhere in text; ^...$ for "
       "the whole text."),
    _b("find_all(text: str, pattern: str) -> List[str]", (STR, LITERAL_PATTERN), ListOf(STR),
       "lib.stdlib.find_all", "The text of every non-overlapping match of the pattern (a literal), "
       "left to right."),
    _b("replace_re(text: str, pattern: str, replacement: str) -> str",
       (STR, LITERAL_PATTERN, STR), STR, "lib.stdlib.replace_re",
       "Every non-overlapping match of the pattern (a literal) replaced; $1, ${name} name "
       "groups, $$ is a $."),
    # lists
    _b("slice(xs: List[T], start: i64, end: i64) -> List[T]", (LIST, I64, I64), SAME_AS_ARG,
       "lib.stdlib.slice_",
       "A new list of the elements from start up to end, both clamped to 0..len(xs)."),
    _b("sorted(xs: List[T]) -> List[T]", (SORTABLE_LIST,), SAME_AS_ARG, "lib.stdlib.sorted_",
       "A new list of the elements in ascending order (i64, i32, f64 or str)."),
    _b("reversed(xs: List[T]) -> List[T]", (LIST,), SAME_AS_ARG, "lib.stdlib.reversed_",
       "A new list of the elements in reverse order."),
    # maps (Map[str, T], a dict)
    _b("get(m: Map[str, T], key: str) -> T?", (MAP, STR), OPT_OF_MAP_VALUE, "lib.maps.get",
       "The value stored under key, or None when the map has no such key."),
    _b("set(m: Map[str, T], key: str, value: T)", (MAP, STR, MAP_VALUE), UNIT, "lib.maps.set_",
       "Stores value under key (replacing the value there; a new key goes last)."),
    _b("keys(m: Map[str, T]) -> List[str]", (MAP,), ListOf(STR), "lib.maps.keys",
       "A new list of the map's keys, in the order they were first set."),
    # numbers
    _b("min(a: T, b: T) -> T", (INTEGER_OR_FLOAT, SAME_AS_FIRST), SAME_AS_ARG, "lib.stdlib.min_",
       "The smaller of two numbers of one type."),
    _b("max(a: T, b: T) -> T", (INTEGER_OR_FLOAT, SAME_AS_FIRST), SAME_AS_ARG, "lib.stdlib.max_",
       "The larger of two numbers of one type."),
    _b("abs(x: T) -> T", (INTEGER_OR_FLOAT,), SAME_AS_ARG, ABS_BY_TYPE,
       "The absolute value of a number; a fault for the minimum integer."),
    # time
    _b("now_ms() -> i64", (), I64, "lib.stdlib.now_ms",
       "The current Unix time in milliseconds (UTC wall clock)."),
    _b("rfc3339(ms: i64) -> str", (I64,), STR, "lib.stdlib.rfc3339",
       "A Unix time in milliseconds as RFC 3339 text in UTC, with three fraction digits."),
    _b("parse_rfc3339(text: str) -> Result[i64, Error]", (STR,), ResultOf(I64),
       "lib.stdlib.parse_rfc3339",
       "RFC 3339 text (Z or an offset) as Unix milliseconds, or an invalid error.",
       errors=INVALID),
    # randomness and hashing
    _b("uuid4() -> str", (), STR, "lib.stdlib.uuid4", "A random UUID in lower-case canonical form."),
    _b("random_token(n: i64) -> str", (I64,), STR, "lib.stdlib.random_token",
       "n (1 to 1024) secure random bytes as URL-safe base64 without padding."),
    _b("sha256_hex(data) -> str", (TEXT,), STR, "lib.stdlib.sha256_hex",
       "The SHA-256 digest of a str, bytes or view[bytes] in lower-case hex."),
    _b("hmac_sha256_hex(key, message) -> str", (TEXT, TEXT), STR, "lib.stdlib.hmac_sha256_hex",
       "The HMAC-SHA256 of message under key (each str, bytes or view[bytes]) in lower-case "
       "hex."),
    _b("constant_time_eq(a: str, b: str) -> bool", (STR, STR), BOOL, "lib.stdlib.constant_time_eq",
       "Whether a == b, in a time that does not depend on where they differ."),
    # passwords (runtime/lib/passwords.py: scrypt on the runtime's thread pool)
    _b("async hash_password(password: str) -> str", (STR,), STR, "lib.passwords.hash_password",
       "A slow salted hash of password (scrypt, its parameters in the text) to store, made off "
       "the event loop."),
    _b("async verify_password(password: str, hash: str) -> Result[bool, Error]", (STR, STR),
       ResultOf(BOOL), "lib.passwords.verify_password",
       "Whether password is the one hash was made from; an internal error when hash is not "
       "such a hash.", errors=frozenset({"internal"})),
    # HTTP: request headers, responses (runtime/http/headers.py, custom_response.py)
    _b("header(h, name: str) -> str?", (HEADERS_OR_RESPONSE, STR), Opt(STR), HEADER_BY_TYPE,
       "The header field called name (any case) of a request's Headers or of a Response, "
       "several fields of one name joined with \", \", or None."),
    _b("cookie(h: Headers, name: str) -> str?", (HEADERS, STR), Opt(STR),
       "http.headers.cookie", "The value of the first cookie called name in the "
       "request's Cookie header(s), or None."),
    _b("respond(status: i64, body: T) -> Response[T]", (I64, RESPONSE_BODY), RESPONSE_OF_BODY,
       "http.custom_response.respond",
       "A handler's answer with its own status (200-599) and body."),
    _b("set_header(r: Response[T], name: str, value: str)", (RESPONSE, STR, STR), UNIT,
       "http.custom_response.set_header",
       "Sets the one header field called name (any case) of the response."),
    _b("add_header(r: Response[T], name: str, value: str)", (RESPONSE, STR, STR), UNIT,
       "http.custom_response.add_header",
       "Adds one more header field called name to the response (Set-Cookie)."),
    _b("status(r: Response[T]) -> i64", (RESPONSE,), I64, "http.test_client.status",
       "The status of a Response: the one its handler chose, or the one the server answered."),
    _b("body(r: Response[T]) -> T", (RESPONSE,), BODY_OF_RESPONSE, "http.test_client.body",
       "The body of a Response[T]: its T value (the text of the answer from test_request)."),
    _b("headers_of(lines: List[str]) -> Headers", (ListOf(STR),), HEADERS,
       "http.test_client.headers_of",
       "A request's Headers made of \"Name: value\" lines, to pass to a handler, test_request, "
       "http_get or http_send."),
    _b("async test_request(db: Db, method: str, path: str, headers: Headers, body: str) -> "
       "Response[str]", (DB, STR, STR, HEADERS, STR), ResponseOf(STR), WITH_ROUTES,
       "The program's answer to an HTTP request, made in process through the real server path "
       "(test files only).", test_only=True, effect="sends a test request (tests only)"),
    # uploads: the files a request brought (runtime/lib/uploads.py)
    _b("upload_name(u: Upload) -> str", (UPLOAD,), STR, "lib.uploads.upload_name",
       "The file's name as the client gave it, reduced to a safe base name (no folders, no "
       "control characters, at most 255 bytes; \"\" when none is left)."),
    _b("upload_type(u: Upload) -> str", (UPLOAD,), STR, "lib.uploads.upload_type",
       "The file's content type as the client gave it, or application/octet-stream."),
    _b("upload_size(u: Upload) -> i64", (UPLOAD,), I64, "lib.uploads.upload_size",
       "The file's size in bytes."),
    _b("async upload_read(u: Upload) -> Result[bytes, Error]", (UPLOAD,), ResultOf(BYTES),
       "lib.uploads.upload_read",
       "The file's content, read off the event loop; an internal error over 64 MiB.",
       errors=frozenset({"internal"})),
    _b("async upload_sha256(u: Upload) -> str", (UPLOAD,), STR, "lib.uploads.upload_sha256",
       "The SHA-256 digest of the file in lower-case hex, worked out off the event loop."),
    _b("async upload_move(u: Upload, path: str) -> Result[unit, Error]", (UPLOAD, STR),
       ResultOf(UNIT), "lib.uploads.upload_move",
       "Puts the file at path (its folder must exist), whole or not at all, replacing what is "
       "there; busy when the disk is full.", errors=frozenset({"invalid", "busy", "internal"}),
       effect="writes a file"),
    # topics, event streams and WebSockets (runtime/lib/live.py)
    _b("topic(name) -> Topic[T]", (TOPIC_NAME,), TOPIC_FROM_CONTEXT, TOPIC_NAME_VALUE,
       "Declares a topic of T messages: only as a constant, NAME: Topic[T] = topic(\"name\")."),
    _b("async publish(db: Db, t: Topic[T], message: T) -> Result[unit, Error]",
       (DB, TOPIC, MESSAGE), ResultOf(UNIT), "lib.live.publish",
       "Sends message to the topic's subscribers in every process on db's database: live, at "
       "most once, in order per publisher.",
       errors=DATABASE_ERRORS, effect="publishes a message"),
    _b("async subscribe(db: Db, t: Topic[T]) -> Result[Subscription[T], Error]", (DB, TOPIC),
       RESULT_SUBSCRIPTION, "lib.live.subscribe",
       "A subscription to the topic on db's database, until the function holding it ends.",
       errors=DATABASE_ERRORS),
    _b("async receive(s: Subscription[T]) -> T?", (SUBSCRIPTION,), OPT_OF_MESSAGE, WITH_MESSAGE_TYPE,
       "Waits for the subscription's next message; None once it is closed (the server stops)."),
    _b("send_event(e: Events[T], message: T, event: str?, id: str?) -> bool",
       (EVENTS, MESSAGE, Opt(STR), Opt(STR)), BOOL, "lib.live.send_event",
       "Sends message as one server-sent event (JSON data:, and event:, id: if given); the "
       "first starts the stream. False when it was dropped.", fewest=2, effect="sends an event"),
    _b("last_event_id(e: Events[T]) -> str?", (EVENTS,), Opt(STR), "lib.live.last_event_id",
       "The Last-Event-ID a reconnecting client sent, or None."),
    _b("async ws_receive(ws: WebSocket[In, Out]) -> In?", (SOCKET,), OPT_OF_MESSAGE, WITH_MESSAGE_TYPE,
       "Waits for the client's next message, an In (else the socket closes 1007); None once closed."),
    _b("async ws_send(ws: WebSocket[In, Out], message: Out) -> bool", (SOCKET, MESSAGE), BOOL,
       "lib.live.ws_send",
       "Sends message to the client (JSON in a text frame; bytes in a binary one), waiting "
       "while the client is behind; False once the socket is closed.",
       effect="sends a WebSocket message"),
    _b("ws_close(ws: WebSocket[In, Out], code: i64, reason: str)", (SOCKET, I64, STR), UNIT,
       "lib.live.ws_close",
       "Closes the socket with code (1000-1003, 1007-1014, 3000-4999) and reason.",
       effect="closes a WebSocket"),
    _b("ws_forward(ws: WebSocket[In, Out], s: Subscription[Out])", (SOCKET, SOCKET_SUBSCRIPTION),
       UNIT, "lib.live.ws_forward",
       "Sends the subscription's messages to the client in the background until it closes.",
       effect="sends WebSocket messages"),
    # calling other services (runtime/lib/outbound.py, on aiohttp's client)
    _b("async http_get(url: str, headers: Headers) -> Result[Response[str], Error]",
       (STR, HEADERS), ResultOf(ResponseOf(STR)), "lib.outbound.http_get",
       "Sends a GET request to url (http:// or https://) with the header fields; the answer "
       "whatever its status (redirects not followed), or a timeout or bad_gateway error.",
       errors=OUTBOUND_ERRORS, effect="calls another service"),
    _b("async http_send(method: str, url: str, headers: Headers, body: str) -> "
       "Result[Response[str], Error]", (STR, STR, HEADERS, STR), ResultOf(ResponseOf(STR)),
       "lib.outbound.http_send",
       "Sends a request (GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS) with the header "
       "fields and body to url; the answer whatever its status, or a timeout or bad_gateway "
       "error.", errors=OUTBOUND_ERRORS, effect="calls another service"),
    _b("http_stub(method: str, url: str, answer: Response[str])", (STR, STR, ResponseOf(STR)),
       UNIT, "lib.outbound.http_stub",
       "Answers the test's later calls of method on exactly url with answer, without a "
       "connection (test files only).", test_only=True,
       effect="changes the outbound stubs (tests only)"),
    _b("python_stub(f, answer: Result[T, Error])", (PYTHON_FUNCTION, PYTHON_ANSWER), UNIT,
       PYTHON_STUB, "Answers the test's later calls of the @python function f with answer, "
       "without calling Python (test files only).", test_only=True,
       effect="changes the Python stubs (tests only)"),
    # tests (`svcc test`)
    _b("assert_true(condition: bool)", (BOOL,), UNIT, "lib.assertions.assert_true",
       "Fails the running test when condition is False.", call_site=True,
       effect="asserts (tests only)"),
    _b("assert_eq(left: T, right: T)", (ANY, SAME_AS_FIRST), UNIT, "lib.assertions.assert_eq",
       "Fails the running test when the two values differ, showing both.", call_site=True,
       effect="asserts (tests only)"),
    # HTML
    _b("html(text: str) -> Html", (STR,), HTML, "lib.support.html", "Text to answer as an HTML page."),
    _b("include_text(file) -> str", (LITERAL_PATH,), STR, EMBEDDED_TEXT,
       "The text of a file (a string literal, relative to this .svc file), read when the "
       "program is compiled."),
    # database (runtime/db)
    _b("async db_open(path: str) -> Result[Db, Error]", (STR,), ResultOf(DB), "db.db_open",
       "Opens (or creates) an SQLite database file; \":memory:\" is a private in-memory "
       "database.", errors=DATABASE_ERRORS),
    _b("async db_exec(db: Db, sql: str, args…) -> Result[i64, Error]", (DB_OR_TX, STR),
       ResultOf(I64), "db.db_exec",
       "Runs one SQL statement with its ? arguments (scalars, enums, JSON values; a List in "
       "IN (?n) stands for its values); the number of rows changed.",
       errors=DATABASE_ERRORS, variadic=DB_ARG),
    _b("async db_all[T](db: Db, sql: str, args…) -> Result[List[T], Error]", (DB_OR_TX, STR),
       RESULT_LIST_OF_TYPE_ARG, "db.db_all",
       "Runs a query; every row as a T: a class whose fields the columns fill by name, or a "
       "scalar or enum, the value of the only column.",
       errors=DATABASE_ERRORS, variadic=DB_ARG, type_param=ROW_CLASS),
    _b("async db_one[T](db: Db, sql: str, args…) -> Result[T?, Error]", (DB_OR_TX, STR),
       RESULT_OPT_OF_TYPE_ARG, "db.db_one",
       "Runs a query; the first row as a T (a class, or a scalar or enum: the only column's "
       "value), or None when there is none (or that value is NULL).",
       errors=DATABASE_ERRORS, variadic=DB_ARG, type_param=ROW_CLASS),
    _b("async db_begin(db: Db) -> Result[Tx, Error]", (DB,), ResultOf(TX), "db.db_begin",
       "Starts a transaction; db_exec, db_all and db_one given the Tx run inside it.",
       errors=DATABASE_ERRORS, call_site=True, tx_scope=True),
    _b("async db_commit(tx: Tx) -> Result[unit, Error]", (TX,), ResultOf(UNIT), "db.db_commit",
       "Makes the transaction's changes permanent; the Tx is finished.",
       errors=DATABASE_ERRORS),
    _b("async db_rollback(tx: Tx) -> Result[unit, Error]", (TX,), ResultOf(UNIT),
       "db.db_rollback", "Undoes the transaction's changes; the Tx is finished.",
       errors=DATABASE_ERRORS),
    _b("db_dialect(db: Db) -> str", (DB_OR_TX,), STR, "db.db_dialect",
       "\"sqlite\" or \"postgresql\": which database the handle talks to."),
    _b("async db_migrate(db: Db, steps: List[str]) -> Result[i64, Error]", (DB, ListOf(STR)),
       ResultOf(I64), MIGRATE, "Applies the steps not yet applied, in order, each in a "
       "transaction; how many it applied. db_migrate(db), without steps, applies the "
       "migrations svc.toml's [migrations] declares for db's database.",
       errors=DATABASE_ERRORS, fewest=1, effect="changes the database's schema"),
    # durable jobs (runtime/background/jobs.py)
    _b("async enqueue(db: Db, job: str, payload: C) -> Result[i64, Error]",
       (DB_OR_TX, LITERAL_JOB, JOB_PAYLOAD), ResultOf(I64), ENQUEUE_JOB,
       "Queues a run of the @job named by the literal job with payload (its class), in the "
       "transaction when db is a Tx; the job's id.", errors=DATABASE_ERRORS),
    _b("async run_jobs(db: Db) -> Result[i64, Error]", (DB,), ResultOf(I64), WITH_ROUTES,
       "Runs, one at a time, every job due now (and those they enqueue) until none is due, as "
       "the server would; how many runs it made (test files only).", errors=DATABASE_ERRORS,
       test_only=True, effect="runs jobs"),
    _b("async run_jobs_now(db: Db) -> Result[i64, Error]", (DB,), ResultOf(I64), WITH_ROUTES,
       "As run_jobs, but every queued job waiting for its next attempt is due now (its backoff "
       "skipped); how many runs it made (test files only).", errors=DATABASE_ERRORS,
       test_only=True, effect="runs jobs"),
    # server
    _b("async serve(db: Db, port: i64) -> Result[unit, Error]", (DB, I64), ResultOf(UNIT),
       WITH_ROUTES, "Serves the program's routes over HTTP on 127.0.0.1:port until stopped.",
       errors=INVALID, effect="serves"),
    # logs (runtime/observability/serverlog.py): one line on stderr, with the request id inside a request
    _b("log_info(message: str, fields: Map[str, str])", (STR, MapOf(STR)), UNIT,
       "observability.serverlog.log_info", "Writes one log line at level info: the message, the fields and, "
       "inside a request, its request id (text or JSON, as SVC_LOG_FORMAT says).",
       effect="writes a log line"),
    _b("log_warn(message: str, fields: Map[str, str])", (STR, MapOf(STR)), UNIT,
       "observability.serverlog.log_warn", "Writes one log line at level warn: the message, the fields and, "
       "inside a request, its request id.", effect="writes a log line"),
    _b("log_error(message: str, fields: Map[str, str])", (STR, MapOf(STR)), UNIT,
       "observability.serverlog.log_error", "Writes one log line at level error: the message, the fields "
       "and, inside a request, its request id.", effect="writes a log line"),
    # runtime test functions (runtime/lib/concurrency.py)
    _b("async task_demo(n: i64) -> Result[i64, Error]", (I64,), ResultOf(I64),
       "lib.concurrency.task_demo", "A runtime self-test (tasks).", errors=DEMO_ERRORS,
       effect="runs a runtime self-test"),
    _b("async scope_demo(n: i64) -> Result[i64, Error]", (I64,), ResultOf(I64),
       "lib.concurrency.scope_demo", "A runtime self-test (task scopes).", errors=DEMO_ERRORS,
       effect="runs a runtime self-test"),
    _b("async actor_demo(n: i64) -> Result[i64, Error]", (I64,), ResultOf(I64),
       "lib.concurrency.actor_demo", "A runtime self-test (actors).", errors=DEMO_ERRORS,
       effect="runs a runtime self-test"),
    _b("async actor_pair_demo(n: i64) -> Result[i64, Error]", (I64,), ResultOf(I64),
       "lib.concurrency.actor_pair_demo", "A runtime self-test (two actors).", errors=DEMO_ERRORS,
       effect="runs a runtime self-test"),
    _b("async supervisor_demo() -> Result[i64, Error]", (), ResultOf(I64),
       "lib.concurrency.supervisor_demo", "A runtime self-test (supervisors).", errors=DEMO_ERRORS,
       effect="runs a runtime self-test"),
    _b("async queue_demo(n: i64) -> Result[i64, Error]", (I64,), ResultOf(I64),
       "lib.concurrency.queue_demo", "A runtime self-test (queues).", errors=DEMO_ERRORS,
       effect="runs a runtime self-test"),
])

#: `range(n)` / `range(a, b)` is only legal as the iterable of a `for` loop, where the checker
#: types it itself (a record could not say "one or two i64"); it compiles to Python's range.
RANGE = "range"
RANGE_LOWERING = RuntimeCall("lib.support", "range_")

#: The HTTP types, resolved by compiler/check/http_types.py.
HTTP_TYPE_NAMES = frozenset({"Headers", "Response", "Upload"})
#: The types of topics and streams, resolved by compiler/check/live_types.py.
LIVE_TYPE_NAMES = frozenset({"Topic", "Subscription", "Events", "WebSocket"})
TYPE_NAMES = frozenset({"i64", "i32", "f64", "bool", "str", "bytes", "unit", "Html", "Db", "Tx",
                        "Error", "List", "Result", "view", "Map"}) | HTTP_TYPE_NAMES | LIVE_TYPE_NAMES
#: Every name a program may not define itself: the builtins, `range` and the type names.
RESERVED_NAMES = frozenset(BUILTINS) | {RANGE} | TYPE_NAMES

#: Human-readable names of the parameter kinds, for "expected ..., found ..." messages.
KIND_TEXT = {
    INTEGER_OR_FLOAT: "a number (i64, i32 or f64)",
    FORMATTABLE: "i64, i32, f64 or bool",
    SIZED: "str, bytes, view[bytes], a List or a Map",
    MAP: "a Map[str, T]",
    LIST: "a List",
    ANY: "a value",
    JSON: "a JSON-encodable value (class, List, number, str, bool, unit or T?)",
    TEXT: "str, bytes or view[bytes]",
    DB_ARG: "i64, i32, f64, bool, str, bytes, an enum, a List, Map[str, T] or class that JSON "
            "can carry, or T? of those",
    DB_OR_TX: "a Db or a Tx",
    LITERAL_PATH: "a string literal",
    LITERAL_PATTERN: "a string literal",
    STR_OR_LIST: "str, a List or a Map",
    BYTES_OR_VIEW: "bytes or view[bytes]",
    SORTABLE_LIST: "List[i64], List[i32], List[f64] or List[str]",
    RESPONSE: "a Response[T]",
    HEADERS_OR_RESPONSE: "Headers or a Response[T]",
    RESULT_ARG: "a Result[T, Error]",
    PYTHON_FUNCTION: "the name of a @python function",
    PYTHON_ANSWER: "a value of the @python function's return type",
    TOPIC_NAME: "a string literal",
    TOPIC: "a Topic[T]",
    SUBSCRIPTION: "a Subscription[T]",
    EVENTS: "an Events[T]",
    SOCKET: "a WebSocket[In, Out]",
}
