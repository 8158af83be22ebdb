"""`Response[T]`: a handler's answer with the status and header fields it chose.

`respond`, `set_header` and `add_header` are what generated code calls; each checks what the
compiler could not (a computed status or header) and raises `SvcFault` when it is refused,
so the request is answered 500 and the fault logged with its .svc line, like any fault.
`render` turns a finished Response into the bytes of the answer. Only routes whose result
kind is one of `contract.RESPONSE_KINDS` get here: other routes never look at this module.
"""

from __future__ import annotations

from svc.rules.contract import STATUS_MAX, STATUS_MIN, ResultKind, header_problem, status_problem
from svc.runtime.http import responses
from svc.runtime.lib.support import Html, SvcFault, copy

#: Statuses that never carry content (RFC 9110 §15.3.5, §15.4.5): the body is dropped and no
#: Content-Length is sent, whatever the T of the Response.
NO_CONTENT = frozenset({204, 304})
# The result kinds `_content` tells apart, looked up once (an Enum member's lookup costs a
# request ~900 instructions, measured).
_JSON_KIND, _HTML_KIND = ResultKind.RESPONSE_JSON, ResultKind.RESPONSE_HTML
_BYTES_KIND = ResultKind.RESPONSE_BYTES


class Response:
    """A status, a body (the T value) and the header fields set on it, in order."""

    __slots__ = ("status", "body", "fields")

    def __init__(self, status: int, body: object, fields: list[tuple[str, str]]) -> None:
        self.status = status
        self.body = body
        self.fields = fields

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Response) and self.status == other.status
                and self.body == other.body and self.fields == other.fields)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Response({self.status}, {self.body!r}, {self.fields!r})"

    def __svc_copy__(self) -> Response:
        """`copy(r)`: a Response whose body and fields change apart from this one's."""
        return Response(self.status, copy(self.body), list(self.fields))


def respond(status: int, body: object) -> Response:
    """`respond(status, body)`; a status outside 200-599 is a fault."""
    if not STATUS_MIN <= status <= STATUS_MAX:  # status_problem's test, without the call
        raise SvcFault(f"respond: {status_problem(status)}")
    return Response(status, body, [])


#: Header names already accepted: a handler sets the same few on every request, and a name's
#: check does not depend on anything else (measured: the full check of two fields cost a
#: Response route ~4k instructions per request). Bounded, as computed names are possible.
_ACCEPTED_NAMES: set[str] = set()
_ACCEPTED_KEPT = 256


def _checked(what: str, name: str, value: str) -> None:
    if name in _ACCEPTED_NAMES and "\r" not in value and "\n" not in value and "\0" not in value:
        return  # the value test is header_value_problem's, without building its message
    problem = header_problem(name, value)
    if problem is not None:
        raise SvcFault(f"{what}: {problem}")
    if len(_ACCEPTED_NAMES) < _ACCEPTED_KEPT:
        _ACCEPTED_NAMES.add(name)


def set_header(r: Response, name: str, value: str) -> None:
    """`set_header(r, name, value)`: the one field of that name (any case) from now on."""
    _checked("set_header", name, value)
    if r.fields:
        lower = name.lower()
        r.fields = [(k, v) for k, v in r.fields if k.lower() != lower]
    r.fields.append((name, value))


def add_header(r: Response, name: str, value: str) -> None:
    """`add_header(r, name, value)`: one more field of that name (several `Set-Cookie`)."""
    _checked("add_header", name, value)
    r.fields.append((name, value))


def _content(kind: ResultKind, body: object, floats: bool) -> tuple[bytes | None, bytes]:
    """(default content type, body bytes) by the T of the Response."""
    if kind is _JSON_KIND:
        return responses.JSON, responses.encode_result(body, floats)
    if kind is _HTML_KIND:
        if not isinstance(body, Html):
            raise TypeError(f"an Html Response holds {type(body).__name__}")
        return responses.HTML, body.text.encode("utf-8")
    if kind is _BYTES_KIND:
        if not isinstance(body, bytes):
            raise TypeError(f"a bytes Response holds {type(body).__name__}")
        return responses.OCTET_STREAM, body
    return None, b""  # RESPONSE_UNIT


def render(r: Response, kind: ResultKind, floats: bool, keep_alive: bool,
           send_body: bool, id_line: bytes = b"") -> bytes:
    """The whole answer. Raises (TypeError, msgspec.EncodeError, SvcFault) for a body that
    cannot be encoded; the caller answers 500 and logs it like any other fault.

    The fields are formatted as one text and encoded once (a name is a token, so ASCII, and
    ASCII is UTF-8), and the answer is assembled by `responses.render` in one formatting, as
    a plain answer is (measured: ~2k instructions a request less than a `head` and a join).
    `id_line` is the server's `X-Request-Id` field, or b"" (serverlog.py); a handler that set
    its own keeps it."""
    fields = r.fields
    extra = "".join([f"{name}: {value}\r\n" for name, value in fields]).encode("utf-8") \
        if fields else b""
    if id_line and not (fields and _sets_request_id(fields)):
        extra += id_line
    if r.status in NO_CONTENT:
        return responses.head(r.status, None, None, keep_alive, extra)
    content_type, body = _content(kind, r.body, floats)
    if content_type is not None and fields and _sets_content_type(fields):
        content_type = None  # the handler's own Content-Type replaces the default
    return responses.render(r.status, content_type, body, keep_alive, extra, send_body)


def _sets_request_id(fields: list[tuple[str, str]]) -> bool:
    for name, _ in fields:
        if len(name) == 12 and name.lower() == "x-request-id":
            return True
    return False


def _sets_content_type(fields: list[tuple[str, str]]) -> bool:
    for name, _ in fields:
        if len(name) == 12 and name.lower() == "content-type":
            return True
    return False
