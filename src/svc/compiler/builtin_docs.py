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
    _d("error_kind(e: Error) -> str", "The kind of an error: invalid, not_found, internal, "
       "database, timeout or busy."),
    _d("error_message(e: Error) -> str", "The message of an error."),
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
