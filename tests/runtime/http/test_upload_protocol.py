"""Per-route body limits and upload bodies with bytes alone: the protocol (HttpConnection) with
the router's `body_terms` hook, as a connection sets it (docs/reference/http.md, "Limits"
and "Uploads")."""

from __future__ import annotations

import os

import pytest

from svc.rules.contract import BODY_LIMIT, Param, ParamSource as S, ResultKind as R, Route
from svc.runtime.http.protocol import Continue, HttpConnection, Reject, Request
from svc.runtime.http.routing import Router
from svc.runtime.http.uploads import PARTS_LIMIT, ReceivedForm, safe_name

# Its subject is the compiled request path: `make test` runs it again on the pure-Python modules.
pytestmark = pytest.mark.compiled_path

MIB = 2**20


async def _handler(*args):
    return None


ROUTES = (
    Route("POST", "/files", _handler, (Param("photo", S.UPLOAD, "Upload"),
                                       Param("doc", S.UPLOAD, "Upload", optional=True),
                                       Param("title", S.QUERY, "str", optional=True)),
          R.JSON, body_limit=10 * MIB),
    Route("POST", "/one", _handler, (Param("file", S.UPLOAD, "Upload"),), R.JSON,
          body_limit=10 * MIB),
    Route("POST", "/big", _handler, (Param("body", S.RAW, "bytes"),), R.JSON, body_limit=4 * MIB),
    Route("POST", "/small", _handler, (Param("body", S.RAW, "bytes"),), R.JSON, body_limit=10),
    Route("POST", "/plain", _handler, (Param("body", S.RAW, "bytes"),), R.JSON),
)
ROUTER = Router(ROUTES)


def connection(hook=ROUTER.body_hook) -> HttpConnection:
    conn = HttpConnection()
    conn.body_hook = hook
    return conn


def post(path: str, body: bytes = b"", *, ctype: str | None = None, length: int | None = None,
         extra: str = "") -> bytes:
    head = f"POST {path} HTTP/1.1\r\nHost: h\r\n{extra}"
    if ctype is not None:
        head += f"Content-Type: {ctype}\r\n"
    head += f"Content-Length: {len(body) if length is None else length}\r\n\r\n"
    return head.encode() + body


def chunked(path: str, pieces: list[bytes], ctype: str | None = None, end: bool = True) -> bytes:
    head = f"POST {path} HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n"
    if ctype is not None:
        head += f"Content-Type: {ctype}\r\n"
    body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces)
    return head.encode() + b"\r\n" + body + (b"0\r\n\r\n" if end else b"")


BOUNDARY = "XyZ123"
MULTIPART = f"multipart/form-data; boundary={BOUNDARY}"


def part(name: str, content: bytes, filename: str | bytes | None = None,
         ctype: str | None = None) -> bytes:
    disposition = f'form-data; name="{name}"'.encode()
    if filename is not None:
        raw = filename if isinstance(filename, bytes) else filename.encode()
        disposition += b'; filename="' + raw + b'"'
    lines = [b"--" + BOUNDARY.encode(), b"Content-Disposition: " + disposition]
    if ctype:
        lines.append(f"Content-Type: {ctype}".encode())
    return b"\r\n".join(lines) + b"\r\n\r\n" + content + b"\r\n"


def form(*parts: bytes) -> bytes:
    return b"".join(parts) + b"--" + BOUNDARY.encode() + b"--\r\n"


def received(events: list) -> ReceivedForm:
    [req] = events
    assert isinstance(req, Request), events
    assert isinstance(req.form, ReceivedForm) and req.body == b""
    return req.form


def content(upload) -> bytes:
    return os.pread(upload.file.fileno(), upload.size, 0) if upload.file else b""


# --- per-route limits ------------------------------------------------------------------------------

def test_a_route_limit_replaces_the_default_larger_or_smaller():
    [req] = connection().feed(post("/big", b"x" * (3 * MIB)))
    assert len(req.body) == 3 * MIB
    [reject] = connection().feed(post("/big", length=4 * MIB + 1))
    assert (reject.status, reject.reason) == (413, "request body too large")
    [reject] = connection().feed(post("/small", b"x" * 11))
    assert reject.status == 413
    [req] = connection().feed(post("/small", b"x" * 10))
    assert req.body == b"x" * 10
    # routes without body_limit, and paths no route has, keep 1 MiB
    [reject] = connection().feed(post("/plain", length=BODY_LIMIT + 1))
    assert reject.status == 413
    [reject] = connection().feed(post("/nowhere", length=BODY_LIMIT + 1))
    assert reject.status == 413


def test_a_chunked_body_is_refused_as_soon_as_it_passes_the_route_limit():
    conn = connection()
    assert conn.feed(chunked("/small", [b"12345", b"67890"], end=False)) == []
    [reject] = conn.feed(b"1\r\nx\r\n")
    assert reject.status == 413
    conn = connection()
    events = conn.feed(chunked("/big", [b"x" * MIB] * 2))
    assert len(events[0].body) == 2 * MIB


def test_the_hook_is_asked_only_about_requests_that_have_a_body():
    asked = []

    def hook(method, path):
        asked.append((method, path))
        return ROUTER.body_terms(method, path)

    conn = connection(hook)
    conn.feed(b"GET /one HTTP/1.1\r\nHost: h\r\n\r\n")
    conn.feed(post("/plain", b""))
    conn.feed(b"POST /plain HTTP/1.1\r\nHost: h\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n")
    assert asked == []
    conn.feed(post("/plain?q=1", b"ab"))
    conn.feed(chunked("/big", [b"ab"]))
    assert asked == [("POST", "/plain"), ("POST", "/big")]


def test_a_program_without_route_terms_gives_no_hook():
    plain = Router((ROUTES[-1],))
    assert plain.body_hook is None
    assert ROUTER.body_hook is not None


def test_a_body_over_1_mib_is_paced_and_the_default_is_not():
    conn = connection()
    conn.feed(post("/big", length=2 * MIB) + b"x" * 1000)
    assert conn.paced and conn.received == 1000
    conn = connection()
    conn.feed(post("/small", length=5) + b"x")
    assert not conn.paced


def test_expect_100_continue_asks_the_route_first():
    expect = "Expect: 100-continue\r\n"
    # 2 GiB to a 10 MiB route: 413 at once, and no 100
    [reject] = connection().feed(post("/one", length=2 * 2**30, extra=expect))
    assert (reject.__class__, reject.status) == (Reject, 413)
    # a body the route takes: 100 first, then the request
    conn = connection()
    [ask] = conn.feed(post("/one", length=5, extra=expect, ctype="text/plain"))
    assert isinstance(ask, Continue)
    assert received(conn.feed(b"hello")).files["file"].size == 5
    # two uploads and a body that is not multipart: 415 before the 100
    [reject] = connection().feed(post("/files", length=5, extra=expect, ctype="text/plain"))
    assert (reject.status, reject.reason) == (415, "unsupported media type: expected "
                                                   "multipart/form-data")


# --- upload bodies --------------------------------------------------------------------------------

def test_multipart_files_and_fields():
    body = form(part("title", b"Hello"), part("photo", b"\x89PNG...", "cat.png", "image/png"),
                part("photo", b"second", "again.png"), part("other", b"dropped", "x.bin"),
                part("title", b"later"))
    for step in (None, 1, 7, 64):
        conn = connection()
        data = post("/files", body, ctype=MULTIPART)
        if step is None:
            events = conn.feed(data)
        else:
            events = [e for i in range(0, len(data), step) for e in conn.feed(data[i:i + step])]
        got = received(events)
        photo = got.files["photo"]
        assert (photo.name, photo.content_type, photo.size) == ("cat.png", "image/png", 7)
        assert content(photo) == b"\x89PNG..."
        assert set(got.files) == {"photo"}
        assert got.fields == {b"title": b"Hello"}
        got.close()
        assert photo.file is None and photo.closed


def test_a_raw_body_is_the_one_upload():
    got = received(connection().feed(post("/one", b"raw bytes", ctype="image/png")))
    upload = got.files["file"]
    assert (upload.name, upload.content_type, upload.size) == ("", "image/png", 9)
    assert content(upload) == b"raw bytes"
    got.close()
    got = received(connection().feed(chunked("/one", [b"ab", b"cd"])))
    assert (got.files["file"].content_type, content(got.files["file"])) == (
        "application/octet-stream", b"abcd")
    got.close()


@pytest.mark.parametrize("body, reason", [
    (b"--other\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx\r\n--other--\r\n",
     "malformed multipart body: expected boundary character"),
    (b"--XyZ123\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx",
     "malformed multipart body: it ends before its closing boundary"),
    (b"--XyZ123\r\nBad Header: x\r\n\r\nx\r\n--XyZ123--\r\n",
     "malformed multipart body: found invalid character"),
    (b"--XyZ123\r\nContent-Type: text/plain\r\n\r\nx\r\n--XyZ123--\r\n",
     "malformed multipart body: a part has no Content-Disposition"),
    (b"--XyZ123\r\nContent-Disposition: form-data\r\n\r\nx\r\n--XyZ123--\r\n",
     "malformed multipart body: a part has no name"),
    (b"--XyZ123\r\nContent-Disposition: attachment; name=\"a\"\r\n\r\nx\r\n--XyZ123--\r\n",
     "malformed multipart body: a part's Content-Disposition is not form-data"),
    (b"--XyZ123\r\nContent-Disposition: form-data; name=\"a\"\rX\r\n\r\nx\r\n--XyZ123--\r\n",
     "malformed multipart body: did not find LF"),
    (b"", "malformed multipart body: it ends before its closing boundary"),
])
def test_a_malformed_multipart_body_is_400(body, reason):
    conn = connection()
    events = conn.feed(post("/files", body, ctype=MULTIPART) if body
                       else chunked("/files", [], ctype=MULTIPART))
    [reject] = events
    assert reject.status == 400 and reject.reason.startswith(reason), reject.reason
    assert conn.closed


def test_the_content_type_decides_at_the_headers():
    [reject] = connection().feed(post("/files", length=10, ctype="multipart/form-data"))
    assert (reject.status, reject.reason) == (
        400, "malformed multipart body: the Content-Type has no boundary")
    [reject] = connection().feed(post("/files", length=10,
                                      ctype="multipart/form-data; boundary=" + "b" * 300))
    assert reject.status == 400 and reject.reason.startswith("malformed multipart body: ")


def test_too_many_parts_and_too_much_form_data_are_refused():
    many = form(*[part(f"f{i}", b"") for i in range(PARTS_LIMIT + 1)])
    [reject] = connection().feed(post("/files", many, ctype=MULTIPART))
    assert (reject.status, reject.reason) == (400, "too many parts in the multipart body")
    fields = form(*[part(f"f{i}", b"v" * 200_000) for i in range(6)])
    [reject] = connection().feed(post("/files", fields, ctype=MULTIPART))
    assert (reject.status, reject.reason) == (413, "form fields too large")


def test_a_refused_body_closes_its_files_at_once():
    conn = connection()
    start = form(part("photo", b"x" * 1000, "a.bin"))[:-40]  # the file part, unfinished
    assert conn.feed(post("/files", length=len(start) + 100, ctype=MULTIPART) + start) == []
    upload = conn._receiver.files["photo"]
    assert upload.file is not None and upload.size > 0
    [reject] = conn.feed(b"\r\n--XyZ123\r\nBroken\r\n" + b"z" * 80)
    assert reject.status == 400
    assert upload.closed and upload.file is None
    # and when the server stops reading it (timed out, the client gone)
    conn = connection()
    conn.feed(post("/one", length=100) + b"x" * 50)
    upload = conn._receiver.upload
    conn.drop_body()
    assert upload.closed


@pytest.mark.parametrize("raw, safe", [
    (b"../../etc/passwd", "passwd"),
    (b"..\\..\\windows\\win.ini", "win.ini"),
    (b"C:\\Users\\me\\photo.jpg", "photo.jpg"),
    (b"a\x00b.txt", "ab.txt"),
    (b"\x1b[31mred\x7f\xc2\x85.txt", "[31mred.txt"),
    (b"..", ""), (b".", ""), (b"dir/..", ""), (b"", ""),
    (b"\xff\xfe.txt", "\ufffd\ufffd.txt"),
    ("é".encode() * 150, "é" * 127),  # 300 bytes: cut at 255, inside the 128th é
    (b"a" * 300, "a" * 255),
])
def test_file_names_are_made_safe(raw, safe):
    assert safe_name(raw) == safe
    assert len(safe.encode()) <= 255
    got = received(connection().feed(post("/files", form(part("photo", b"1", raw)),
                                          ctype=MULTIPART)))
    assert got.files["photo"].name == safe
    got.close()
