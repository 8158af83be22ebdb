"""What each builtin is, in one line, with its signature as users write it.

Kept beside `builtins.py` (the signatures the checker interprets) so an editor's hover and
the reference (docs/reference/builtins.md) say the same thing; a test checks that every
builtin has exactly one entry here and that its signature is the one the reference gives.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BuiltinDoc:
    signature: str  # as the reference writes it, e.g. `parse_i64(text: str) -> Result[i64, Error]`
    summary: str  # one sentence


def _d(signature: str, summary: str) -> tuple[str, BuiltinDoc]:
    name = signature.removeprefix("async ").split("(")[0].split("[")[0]
    return name, BuiltinDoc(signature, summary)


DOCS: dict[str, BuiltinDoc] = dict([
    # general
    _d("print(text: str)", "Writes the text and a newline to standard output."),
    _d("len(x) -> i64", "The length of a str (in UTF-8 bytes), bytes, view[bytes] or List."),
    _d("append(xs: List[T], value: T)", "Adds value at the end of the list xs."),
    _d("str(x) -> str", "An i64, i32, f64 or bool as text."),
    _d("i64(x) -> i64", "Any number as an i64 (an f64 is truncated toward zero)."),
    _d("i32(x) -> Result[i32, Error]", "Any number narrowed to i32, or an invalid error when "
       "it does not fit."),
    _d("f64(x) -> f64", "Any number as an f64."),
    _d("copy(x: T) -> T", "A deep copy of a value (lists and class instances are shared "
       "otherwise)."),
    _d("parse_i64(text: str) -> Result[i64, Error]", "Reads a decimal integer from text, or "
       "an invalid error."),
    _d("env(name: str, default: str) -> str", "The environment variable name, or default "
       "when it is not set."),
    _d("async sleep(ms: i64)", "Waits ms milliseconds without blocking other tasks."),
    _d("json_encode(value) -> str", "A value of a JSON type as compact JSON text."),
    _d("json_decode[T](text) -> Result[T, Error]", "Decodes JSON text (str, bytes or "
       "view[bytes]) into a T, or an invalid error saying what and where."),
    # results and errors
    _d("ok(value: T)", "The success of a Result, holding value (ok(()) for Result[unit, Error])."),
    _d("error(reason: str)", "An error of kind invalid (a 400 from a handler)."),
    _d("not_found(reason: str)", "An error of kind not_found (a 404 from a handler)."),
    _d("internal_error(reason: str)", "An error of kind internal (a 500; the reason goes to "
       "the log only)."),
    _d("fail(e: Error)", "An error that is e itself, kind and message kept."),
    _d("error_kind(e: Error) -> str", "The kind of an error: invalid, not_found, conflict, "
       "unauthorized, forbidden, internal, database, timeout or busy."),
    _d("error_message(e: Error) -> str", "The message of an error."),
    _d("conflict(reason: str)", "An error of kind conflict (a 409 from a handler)."),
    _d("unauthorized(reason: str)", "An error of kind unauthorized (a 401 from a handler)."),
    _d("forbidden(reason: str)", "An error of kind forbidden (a 403 from a handler)."),
    # text
    _d("trim(text: str) -> str", "The text without Unicode whitespace at either end."),
    _d("lower(text: str) -> str", "The text in lower case (Unicode case mapping)."),
    _d("upper(text: str) -> str", "The text in upper case (Unicode case mapping; ß becomes "
       "SS)."),
    _d("contains(x, part) -> bool", "Whether a str holds part as a substring, or a List holds "
       "an element == part."),
    _d("starts_with(text: str, prefix: str) -> bool", "Whether text begins with prefix."),
    _d("ends_with(text: str, suffix: str) -> bool", "Whether text ends with suffix."),
    _d("replace(text: str, old: str, new: str) -> str", "Every non-overlapping old replaced "
       "by new (an empty old changes nothing)."),
    _d("split(text: str, sep: str) -> List[str]", "The pieces of text between the seps (an "
       "empty sep gives [text])."),
    _d("join(parts: List[str], sep: str) -> str", "The parts with sep between each two."),
    _d("parse_f64(text: str) -> Result[f64, Error]", "Reads a decimal number from text, or "
       "an invalid error (no NaN or infinities)."),
    _d("to_bytes(text: str) -> bytes", "The UTF-8 bytes of text."),
    _d("to_str(data) -> Result[str, Error]", "UTF-8 bytes or view[bytes] as a str, or an "
       "invalid error."),
    # lists
    _d("slice(xs: List[T], start: i64, end: i64) -> List[T]", "A new list of the elements "
       "from start up to end, both clamped to 0..len(xs)."),
    _d("sorted(xs: List[T]) -> List[T]", "A new list of the elements in ascending order (i64, "
       "i32, f64 or str)."),
    _d("reversed(xs: List[T]) -> List[T]", "A new list of the elements in reverse order."),
    # numbers
    _d("min(a: T, b: T) -> T", "The smaller of two numbers of one type."),
    _d("max(a: T, b: T) -> T", "The larger of two numbers of one type."),
    _d("abs(x: T) -> T", "The absolute value of a number; a fault for the minimum integer."),
    # time
    _d("now_ms() -> i64", "The current Unix time in milliseconds (UTC wall clock)."),
    _d("rfc3339(ms: i64) -> str", "A Unix time in milliseconds as RFC 3339 text in UTC, with "
       "three fraction digits."),
    _d("parse_rfc3339(text: str) -> Result[i64, Error]", "RFC 3339 text (Z or an offset) as "
       "Unix milliseconds, or an invalid error."),
    # randomness and hashing
    _d("uuid4() -> str", "A random UUID in lower-case canonical form."),
    _d("random_token(n: i64) -> str", "n (1 to 1024) secure random bytes as URL-safe base64 "
       "without padding."),
    _d("sha256_hex(data) -> str", "The SHA-256 digest of a str, bytes or view[bytes] in "
       "lower-case hex."),
    _d("hmac_sha256_hex(key, message) -> str", "The HMAC-SHA256 of message under key (each "
       "str, bytes or view[bytes]) in lower-case hex."),
    _d("constant_time_eq(a: str, b: str) -> bool", "Whether a == b, in a time that does not "
       "depend on where they differ."),
    # HTTP: request headers and responses
    _d("header(h: Headers, name: str) -> str?", "The request header field called name (any "
       "case), several fields of one name joined with \", \", or None."),
    _d("cookie(h: Headers, name: str) -> str?", "The value of the first cookie called name "
       "in the request's Cookie header(s), or None."),
    _d("respond(status: i64, body: T) -> Response[T]", "A handler's answer with its own "
       "status (200-599) and body."),
    _d("set_header(r: Response[T], name: str, value: str)", "Sets the one header field "
       "called name (any case) of the response."),
    _d("add_header(r: Response[T], name: str, value: str)", "Adds one more header field "
       "called name to the response (Set-Cookie)."),
    # tests (`svcc test`)
    _d("assert_true(condition: bool)", "Fails the running test when condition is False."),
    _d("assert_eq(actual: T, expected: T)", "Fails the running test when the two values "
       "differ, showing both."),
    # HTML
    _d("html(text: str) -> Html", "Text to answer as an HTML page."),
    _d("include_text(file) -> str", "The text of a file (a string literal, relative to this "
       ".svc file), read when the program is compiled."),
    # database
    _d("async db_open(path: str) -> Result[Db, Error]", "Opens (or creates) an SQLite "
       "database file; \":memory:\" is a private in-memory database."),
    _d("async db_exec(db: Db, sql: str, args…) -> Result[i64, Error]", "Runs one SQL "
       "statement with its ? arguments; the number of rows changed."),
    _d("async db_all[T](db: Db, sql: str, args…) -> Result[List[T], Error]", "Runs a query; "
       "every row as a T (columns fill the fields of the same name)."),
    _d("async db_one[T](db: Db, sql: str, args…) -> Result[T?, Error]", "Runs a query; the "
       "first row as a T, or None when there is none."),
    _d("async db_begin(db: Db) -> Result[Tx, Error]", "Starts a transaction; db_exec, db_all "
       "and db_one given the Tx run inside it."),
    _d("async db_commit(tx: Tx) -> Result[unit, Error]", "Makes the transaction's changes "
       "permanent; the Tx is finished."),
    _d("async db_rollback(tx: Tx) -> Result[unit, Error]", "Undoes the transaction's changes; "
       "the Tx is finished."),
    _d("db_dialect(db: Db) -> str", "\"sqlite\" or \"postgresql\": which database the handle "
       "talks to."),
    _d("async db_migrate(db: Db, steps: List[str]) -> Result[i64, Error]", "Applies the steps "
       "not yet applied, in order, each in a transaction; how many it applied."),
    # server
    _d("async serve(db: Db, port: i64) -> Result[unit, Error]", "Serves the program's routes "
       "over HTTP on 127.0.0.1:port until stopped."),
    # runtime test functions
    _d("async task_demo(n: i64) -> Result[i64, Error]", "A runtime self-test (tasks)."),
    _d("async scope_demo(n: i64) -> Result[i64, Error]", "A runtime self-test (task scopes)."),
    _d("async actor_demo(n: i64) -> Result[i64, Error]", "A runtime self-test (actors)."),
    _d("async actor_pair_demo(n: i64) -> Result[i64, Error]", "A runtime self-test (two "
       "actors)."),
    _d("async supervisor_demo() -> Result[i64, Error]", "A runtime self-test (supervisors)."),
    _d("async queue_demo(n: i64) -> Result[i64, Error]", "A runtime self-test (queues)."),
])
