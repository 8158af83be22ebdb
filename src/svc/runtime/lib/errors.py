"""The error makers that give an answer more than a status and a reason (issue 24).

`unprocessable(reason, fields)` is a 422 whose answer names what is wrong with each field,
`too_many_requests(reason, retry_after_s)` a 429 that says when to come back, and
`with_header(r, name, value)` puts a header field on any error's answer (`WWW-Authenticate` on
a 401, `Retry-After` on a 503). `error_fields(e)` reads an error's field reasons back.

An `Error` is a value: each of these makes a new SvcError and never changes the one it was
given, so an error kept in a variable and answered twice answers the same both times. What the
server refuses to send (a header name that is not a token, a value with CR, LF or NUL, a field
the server writes itself) is a fault naming the call, answered 500 and logged with the .svc
line, as `set_header` does; a literal is refused by the compiler already
(compiler/check/http_types.py, by the same rules of svc.rules.contract). The answer itself is rendered by
runtime/http/responses.py (`error_answer`).
"""

from __future__ import annotations

from svc.rules.contract import error_header_problem, retry_after_problem
from svc.runtime.lib.support import SvcError, SvcFault


def unprocessable(reason: str, fields: dict[str, str]) -> SvcError:
    """`unprocessable(reason, fields)`: kind unprocessable, a 422 answering
    `{"error": reason, "fields": fields}`. The map is copied: changing it afterwards does not
    change the error."""
    return SvcError("unprocessable", reason, None, (), dict(fields))


def too_many_requests(reason: str, retry_after_s: int) -> SvcError:
    """`too_many_requests(reason, retry_after_s)`: kind too_many_requests, a 429 with
    `Retry-After: <retry_after_s>`; a negative delay is a fault."""
    problem = retry_after_problem(retry_after_s)
    if problem is not None:
        raise SvcFault(f"too_many_requests: {problem}")
    return SvcError("too_many_requests", reason, None, (("Retry-After", str(retry_after_s)),))


def with_header(r: object, name: str, value: str) -> object:
    """`with_header(r, name, value)`: an error result with the one header field called name
    (any case) set to value on its answer, replacing one of that name it had; the error given
    is unchanged. An ok result is returned as it is (only errors carry fields here; a
    `Response[T]` has `set_header`), but name and value are checked either way."""
    problem = error_header_problem(name, value)
    if problem is not None:
        raise SvcFault(f"with_header: {problem}")
    if not isinstance(r, SvcError):
        return r
    lower = name.lower()
    headers = tuple(field for field in r.headers if field[0].lower() != lower) + ((name, value),)
    return SvcError(r.kind, r.message, r.detail, headers, r.fields)


def error_fields(e: SvcError) -> dict[str, str]:
    """`error_fields(e)`: the field reasons of an unprocessable error (a new map), empty for
    any other error."""
    return dict(e.fields) if e.fields else {}
