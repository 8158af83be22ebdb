"""Uploads and per-route body limits on a real socket (docs/reference/http.md, "Uploads" and
"Limits"): tests/helpers/upload_app.py served in a process of its own, with a TMPDIR of its
own, whose open temporary files are counted in /proc/<pid>/fd."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import socket
import struct
import threading
import time
from pathlib import Path

import pytest

from tests.helpers.http_testkit import Client, request, start_server
from tests.runtime.http.test_upload_protocol import MULTIPART, form, part

# Its subject is the compiled request path: `make test` runs it again on the pure-Python modules.
pytestmark = [pytest.mark.compiled_path,
              pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")]

UPLOAD_APP = Path(__file__).resolve().parents[2] / "helpers" / "upload_app.py"
MIB = 2**20


class UploadServer:
    def __init__(self, root: Path, env: dict[str, str] | None = None) -> None:
        self.tmp = root / "tmp"
        self.tmp.mkdir()
        self.proc = start_server(root, {"TMPDIR": str(self.tmp), **(env or {})}, app=UPLOAD_APP)
        self.port = self.proc.port

    def open_temporary_files(self) -> int:
        """The server's open files in its TMPDIR (anonymous ones show as `<tmp>/#123 (deleted)`)."""
        count = 0
        for fd in os.listdir(f"/proc/{self.proc.proc.pid}/fd"):
            try:
                target = os.readlink(f"/proc/{self.proc.proc.pid}/fd/{fd}")
            except OSError:
                continue
            count += target.startswith(str(self.tmp))
        return count

    def settles_at(self, expected: int, within: float = 3.0) -> bool:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if self.open_temporary_files() == expected:
                return True
            time.sleep(0.02)
        return False

    def healthy(self) -> bool:
        return request(self.port, "GET", "/health").body == b"ok"

    def post(self, target: str, body: bytes, ctype: str | None = MULTIPART):
        return request(self.port, "POST", target, body, {"Content-Type": ctype} if ctype else {})


@pytest.fixture(scope="module")
def uploads(tmp_path_factory):
    server = UploadServer(tmp_path_factory.mktemp("uploads"))
    yield server
    server.proc.stop()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def head(target: str, length: int | None = None, ctype: str | None = MULTIPART,
         extra: str = "") -> bytes:
    lines = f"POST {target} HTTP/1.1\r\nHost: x\r\n{extra}"
    if ctype:
        lines += f"Content-Type: {ctype}\r\n"
    lines += "Transfer-Encoding: chunked\r\n" if length is None else f"Content-Length: {length}\r\n"
    return (lines + "\r\n").encode()


# --- binding ----------------------------------------------------------------------------------------

def test_files_and_form_fields_bind_like_query_parameters(uploads):
    photo = os.urandom(300_000)
    body = form(part("photo", photo, "cat.jpg", "image/jpeg"), part("count", b"42"),
                part("flag", b"true"), part("title", b"from the form"))
    got = uploads.post("/files?title=from%20the%20query", body).json()
    assert got == {"photo": {"name": "cat.jpg", "type": "image/jpeg", "size": 300_000,
                             "sha256": sha(photo)},
                   "doc": None, "title": "from the query", "count": 42, "flag": True}
    got = uploads.post("/files", form(part("photo", b"1", "a"), part("title", b"t"))).json()
    assert (got["title"], got["count"], got["photo"]["type"]) == (
        "t", None, "application/octet-stream")
    # the same reasons as a query parameter's
    bad = uploads.post("/files?title=t", form(part("photo", b"1", "a"), part("count", b"4x")))
    assert (bad.status, bad.json()) == (400, {"error": "invalid query parameter 'count': "
                                                       "expected i64"})
    missing = uploads.post("/files", form(part("photo", b"1", "a")))
    assert missing.json() == {"error": "missing required query parameter 'title'"}
    assert uploads.settles_at(0)


def test_missing_and_optional_uploads(uploads):
    missing = uploads.post("/files?title=t", form(part("doc", b"d", "d.txt")))
    assert (missing.status, missing.json()) == (400, {"error": "missing file 'photo'"})
    # a field named like the upload is not a file
    field = uploads.post("/files?title=t", form(part("photo", b"not a file")))
    assert field.json() == {"error": "missing file 'photo'"}
    none = uploads.post("/optional", form(part("other", b"x")))
    assert none.json() == {"photo": None}
    both = uploads.post("/files?title=t", form(part("photo", b"p", "p"), part("doc", b"dd", "d")))
    assert both.json()["doc"]["size"] == 2
    assert uploads.settles_at(0)


def test_raw_bodies_and_the_415_of_two_uploads(uploads):
    data = os.urandom(2 * MIB)
    got = uploads.post("/one", data, "image/png").json()
    assert got == {"name": "", "type": "image/png", "size": 2 * MIB, "sha256": sha(data)}
    untyped = uploads.post("/one", b"abc", None).json()
    assert untyped["type"] == "application/octet-stream"
    empty = uploads.post("/one", b"", None).json()
    assert (empty["size"], empty["sha256"]) == (0, sha(b""))
    refused = uploads.post("/files?title=t", b"abc", "image/png")
    assert (refused.status, refused.json()) == (
        415, {"error": "unsupported media type: expected multipart/form-data"})
    with Client(uploads.port) as client:  # asked first: 100, then the body
        client.send(head("/one", 5, "text/plain", extra="Expect: 100-continue\r\n"))
        assert client.response().status == 100
        client.send(b"hello")
        assert client.response().json()["size"] == 5
    with Client(uploads.port) as client:  # refused before its body is sent
        client.send(head("/files?title=t", 5, "text/plain", extra="Expect: 100-continue\r\n"))
        assert client.response().status == 415
    assert uploads.settles_at(0)


# --- limits -----------------------------------------------------------------------------------------

def test_a_content_length_over_the_route_limit_is_413_before_any_body(uploads):
    with Client(uploads.port) as client:
        client.send(head("/one", 2 * 2**30, "application/octet-stream"))
        resp = client.response()  # answered with no body sent at all
        assert (resp.status, resp.json()) == (413, {"error": "request body too large"})
        assert client.closed_by_peer()
    with Client(uploads.port) as client:
        client.send(head("/one", 2 * 2**30, extra="Expect: 100-continue\r\n"))
        assert client.response().status == 413  # not a 100 first
    assert uploads.open_temporary_files() == 0 and os.listdir(uploads.tmp) == []


def test_a_chunked_upload_past_the_limit_is_413_and_its_file_closed(uploads):
    piece = b"x" * MIB
    with Client(uploads.port) as client:
        client.send(head("/one", ctype="application/octet-stream"))
        for _ in range(9):
            client.send(b"%x\r\n%s\r\n" % (len(piece), piece))
        assert uploads.settles_at(1)  # the file is open while the body arrives
        try:
            for _ in range(3):
                client.send(b"%x\r\n%s\r\n" % (len(piece), piece))
        except (BrokenPipeError, ConnectionResetError):
            pass
        resp = client.response()
        assert (resp.status, resp.json()) == (413, {"error": "request body too large"})
    assert uploads.settles_at(0)
    assert uploads.healthy()


def test_route_limits_of_json_and_bytes_routes(uploads):
    note = json.dumps({"text": "n" * (2 * MIB)}).encode()
    assert uploads.post("/notes/big", note, "application/json").json() == {"text": "n" * (2 * MIB)}
    assert uploads.post("/notes", note, "application/json").status == 413  # the default 1 MiB
    assert uploads.post("/notes/small", b'{"text":"' + b"s" * 100 + b'"}',
                        "application/json").status == 413
    assert uploads.post("/notes/small", b'{"text":"short"}', "application/json").json() == {
        "text": "short"}
    assert uploads.post("/raw/big", b"r" * (3 * MIB), None).json() == 3 * MIB
    assert uploads.post("/raw", b"r" * (MIB + 1), None).status == 413
    assert uploads.post("/raw/small", b"r" * 64, None).json() == 64
    assert uploads.post("/raw/small", b"r" * 65, None).status == 413
    small_upload = uploads.post("/small-upload", b"u" * 1001, None)
    assert small_upload.status == 413
    with Client(uploads.port) as client:  # chunked past a small limit
        client.send(head("/raw/small", ctype=None) + b"40\r\n" + b"a" * 64 + b"\r\n1\r\nb\r\n")
        assert client.response().status == 413


# --- malformed bodies -----------------------------------------------------------------------------

@pytest.mark.parametrize("body, reason", [
    (b"--wrong\r\n\r\n", "malformed multipart body: expected boundary character"),
    (form(part("photo", b"12345", "a"))[:-30], "malformed multipart body: it ends before"),
    (b"--XyZ123\r\nContent-Disposition: form-data; name=\"photo\"; filename=\"a\"\r\n"
     b"No-Colon-Here\r\n\r\nx\r\n--XyZ123--\r\n", "malformed multipart body: "),
    (b"--XyZ123\r\n\r\nx\r\n--XyZ123--\r\n",
     "malformed multipart body: a part has no Content-Disposition"),
])
def test_malformed_multipart_bodies_are_400_and_the_server_stays_healthy(uploads, body, reason):
    resp = uploads.post("/files?title=t", body)
    assert resp.status == 400 and resp.json()["error"].startswith(reason), resp.body
    assert uploads.healthy()
    assert uploads.settles_at(0)


def test_no_boundary_too_many_parts_and_too_many_fields(uploads):
    resp = uploads.post("/files?title=t", b"x", "multipart/form-data")
    assert resp.json() == {"error": "malformed multipart body: the Content-Type has no boundary"}
    many = form(*[part("f", b"") for _ in range(1001)])
    assert uploads.post("/files?title=t", many).json() == {
        "error": "too many parts in the multipart body"}
    fields = form(part("photo", b"p", "p"), *[part(f"f{i}", b"v" * 300_000) for i in range(4)])
    resp = uploads.post("/files?title=t", fields)
    assert (resp.status, resp.json()) == (413, {"error": "form fields too large"})
    assert uploads.healthy() and uploads.settles_at(0)


def test_file_names_never_reach_the_file_system_as_sent(uploads):
    names = {b"../../etc/passwd": "passwd", b"..\\..\\boot.ini": "boot.ini",
             b"nul\x00byte.txt": "nulbyte.txt", b"\x1b]0;bell\x07.txt": "]0;bell.txt",
             b"..": "", "ü".encode() * 200: "ü" * 127}
    for raw, safe in names.items():
        got = uploads.post("/one", form(part("file", b"x", raw)))
        assert got.json()["name"] == safe, raw
    assert os.listdir(uploads.tmp) == []


# --- files closed however the request ends -------------------------------------------------------

def test_an_interrupted_upload_leaves_no_file(uploads):
    client = Client(uploads.port)
    client.send(head("/files?title=t", 5 * MIB) + form(part("photo", b"p" * MIB, "p.bin"))[:-30])
    assert uploads.settles_at(1)
    client.close()  # gone midway
    assert uploads.settles_at(0)
    assert os.listdir(uploads.tmp) == []
    assert uploads.healthy()


def test_files_are_closed_when_the_handler_times_out_faults_or_its_client_leaves(uploads):
    start = time.monotonic()
    late = uploads.post("/hold?ms=3000", b"x" * 1000, None)
    assert late.status == 504 and time.monotonic() - start < 3.0
    assert uploads.settles_at(0)
    assert uploads.post("/crash", b"x" * 1000, None).status == 500
    assert uploads.settles_at(0)
    # the client resets the connection while its handler runs: closed at once, not when the
    # handler is done (a plain close is an EOF, which may be a half-close: answered first)
    client = Client(uploads.port)
    client.send(head("/hold?ms=1500", 1000, None) + b"y" * 1000)
    assert uploads.settles_at(1)
    client.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    client.close()
    assert uploads.settles_at(0, within=1.0)  # before the handler's sleep is over


def test_pipelined_uploads_are_answered_in_order_and_closed(uploads):
    with Client(uploads.port) as client:
        client.send(head("/hold?ms=300", 3, None) + b"abc" + head("/one", 2, None) + b"de"
                    + head("/one", 2, None, extra="Connection: close\r\n") + b"fg")
        sizes = [client.response().json()["size"] for _ in range(3)]
    assert sizes == [3, 2, 2]
    assert uploads.settles_at(0)


def test_read_and_move_through_the_server(uploads, tmp_path):
    assert uploads.post("/read", form(part("file", b"hello", "h.txt"))).json() == {"text": "hello"}
    big = uploads.post("/read", b"x" * (64 * MIB + 1), None)
    assert (big.status, big.json()) == (500, {"error": "internal error"})
    data = os.urandom(3 * MIB)
    target = tmp_path / "stored.bin"
    got = uploads.post(f"/move?to={target}", data, None).json()
    assert got == {"moved": str(target), "size": 3 * MIB, "still": 3 * MIB}
    assert target.read_bytes() == data
    assert uploads.settles_at(0) and os.listdir(uploads.tmp) == []
    assert "an upload over 64 MiB cannot be read into memory" in uploads.proc.log()


def test_a_stopped_server_leaves_nothing_behind(tmp_path):
    for how in (signal.SIGTERM, signal.SIGKILL):
        (tmp_path / how.name).mkdir()
        server = UploadServer(tmp_path / how.name)
        client = Client(server.port)
        try:
            client.send(head("/one", 5 * MIB, None) + b"k" * MIB)
            assert server.settles_at(1)
            started = time.monotonic()
            status = server.proc.stop(how)
            if how is signal.SIGTERM:  # after the grace the body still arriving is cut
                assert status == 0 and time.monotonic() - started < 5
            assert os.listdir(server.tmp) == []
        finally:
            client.close()
            server.proc.stop()


# --- the disk filling up --------------------------------------------------------------------------

def test_a_full_disk_is_507_and_the_next_request_works(tmp_path):
    server = UploadServer(tmp_path, {"UPLOAD_APP_FSIZE": str(MIB)})
    try:
        with Client(server.port) as client:
            client.send(head("/one", 3 * MIB, None))
            try:
                client.send(b"z" * (3 * MIB))
            except (BrokenPipeError, ConnectionResetError):
                pass
            resp = client.response()
            assert (resp.status, resp.json()) == (507, {"error": "insufficient storage"})
            assert resp.headers["connection"] == "close"
        assert server.settles_at(0)
        assert server.post("/one", b"small", None).json()["size"] == 5
        log = server.proc.log()
        assert re.search(r"POST /one: an upload could not be stored: File too large", log), log
        assert "Traceback" not in log
    finally:
        server.proc.stop()


# --- the rate deadline ------------------------------------------------------------------------------

def _send_steadily(client: Client, pieces: int, size: int, pause: float) -> None:
    for _ in range(pieces):
        client.send(b"s" * size)
        time.sleep(pause)


def test_a_steady_large_body_passes_the_old_2_seconds_and_its_handler_gets_its_own(uploads):
    # 64 KiB every 0.2 s (320 KiB/s) for ~3 s, then a handler that takes 1.5 s
    pieces, size = 15, 64 * 1024
    with Client(uploads.port) as client:
        start = time.monotonic()
        client.send(head("/hold?ms=1500", pieces * size, None))
        _send_steadily(client, pieces, size, 0.2)
        resp = client.response()
        elapsed = time.monotonic() - start
    assert resp.status == 200 and resp.json()["size"] == pieces * size
    assert elapsed > 4.0


def test_a_body_that_falls_below_the_rate_is_504(uploads):
    with Client(uploads.port) as client:
        start = time.monotonic()
        client.send(head("/one", 5 * MIB, None) + b"f" * (64 * 1024))  # buys one more second
        stopped = threading.Event()

        def trickle():
            while not stopped.is_set():
                try:
                    client.send(b"t" * 100)
                except OSError:
                    return
                stopped.wait(0.25)

        thread = threading.Thread(target=trickle)
        thread.start()
        try:
            resp = client.response()
        finally:
            stopped.set()
            thread.join()
        elapsed = time.monotonic() - start
    assert (resp.status, resp.json()) == (504, {"error": "request timed out"})
    assert 2.7 <= elapsed <= 4.5, elapsed
    assert uploads.settles_at(0)


def test_a_slow_body_to_a_default_route_keeps_the_2_seconds(uploads):
    with Client(uploads.port) as client:
        start = time.monotonic()
        client.send(head("/raw", 1000, None) + b"a" * 10)
        assert client.response().status == 504
        assert 1.8 <= time.monotonic() - start <= 3.0

