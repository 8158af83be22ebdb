"""A `Response`'s answer bytes (custom_response.render): fields in order after the framing,
the handler's Content-Type instead of the default, HEAD and 204/304 without a body, and
`respond`'s status check."""

from __future__ import annotations

import pytest

from svc.rules.contract import ResultKind
from svc.runtime.http.custom_response import add_header, render, respond, set_header
from svc.runtime.lib.support import Html, SvcFault

# Its subject is the compiled request path: `make test` runs it again on the pure-Python modules.
pytestmark = pytest.mark.compiled_path


class User:
    __svc_fields__ = (("id", "i64", False),)

    def __init__(self, id: int) -> None:
        self.id = id


def split(answer: bytes) -> tuple[list[bytes], bytes]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return head.split(b"\r\n"), body


def test_fields_are_written_in_order_with_utf8_values():
    r = respond(201, {"id": 8})
    set_header(r, "Location", "/users/8")
    add_header(r, "Set-Cookie", "a=1")
    add_header(r, "Set-Cookie", "b=é")
    lines, body = split(render(r, ResultKind.RESPONSE_JSON, False, True, True))
    assert lines[0] == b"HTTP/1.1 201 Created"
    assert b"Content-Type: application/json" in lines
    assert b"Content-Length: %d" % len(body) in lines
    fields = [line for line in lines if line.split(b":")[0] in (b"Location", b"Set-Cookie")]
    assert fields == [b"Location: /users/8", b"Set-Cookie: a=1", "Set-Cookie: b=é".encode()]
    assert body == b'{"id":8}'


def test_the_handlers_content_type_replaces_the_default_and_head_sends_no_body():
    r = respond(200, Html("<p>hi</p>"))
    set_header(r, "content-type", "text/html; charset=latin1")
    lines, body = split(render(r, ResultKind.RESPONSE_HTML, False, False, False))
    assert [line for line in lines if line.lower().startswith(b"content-type")] == [
        b"content-type: text/html; charset=latin1"]
    assert b"Content-Length: 9" in lines and b"Connection: close" in lines
    assert body == b""


def test_a_bytes_response_is_written_as_it_is_and_its_type_can_be_chosen():
    """A download: no JSON, no base64; application/octet-stream unless the handler says."""
    data = bytes(range(256))
    lines, body = split(render(respond(200, data), ResultKind.RESPONSE_BYTES, False, True, True))
    assert body == data and b"Content-Type: application/octet-stream" in lines
    r = respond(200, b"%PDF-1.7")
    set_header(r, "Content-Type", "application/pdf")
    lines, body = split(render(r, ResultKind.RESPONSE_BYTES, False, True, True))
    assert [line for line in lines if line.lower().startswith(b"content-type")] == [
        b"Content-Type: application/pdf"] and body == b"%PDF-1.7"


@pytest.mark.parametrize("status", [204, 304])
def test_no_content_statuses_have_neither_body_nor_length(status):
    r = respond(status, User(1))
    set_header(r, "ETag", '"x"')
    lines, body = split(render(r, ResultKind.RESPONSE_JSON, False, True, True))
    assert body == b"" and b'ETag: "x"' in lines
    assert not any(line.startswith(b"Content-") for line in lines)


@pytest.mark.parametrize("status", [199, 600, -1])
def test_a_status_outside_200_599_is_a_fault(status):
    with pytest.raises(SvcFault, match=f"respond: status {status} is outside 200-599"):
        respond(status, User(1))
    assert respond(200, User(1)).status == 200 and respond(599, User(1)).status == 599
