"""Uploads in a compiled program (`svcc run` of tests/e2e/programs/uploads.svc): a multipart
file moved where the handler says under its safe name with a form field bound like a query
parameter, raw bodies, several files, and the refusals a client gets for bodies over a route's
raised or lowered limit (at once, from Content-Length), malformed or missing parts, and a raw
body to a two-file route; the server goes on after each, and nothing is left in its TMPDIR."""

from __future__ import annotations

import hashlib
import os
import socket

import pytest

from tests.helpers.svc_process import start

PROGRAM = __import__("pathlib").Path(__file__).with_name("programs") / "uploads.svc"
BOUNDARY = "svc-e2e-boundary"
FORM = {"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}


def form(*parts: tuple[str, str | None, bytes]) -> bytes:
    """A multipart/form-data body of (field name, file name or None for a field, content)."""
    body = b""
    for name, filename, content in parts:
        disposition = f'form-data; name="{name}"' + (
            "" if filename is None else f'; filename="{filename}"')
        body += (f"--{BOUNDARY}\r\nContent-Disposition: {disposition}\r\n"
                 + ("" if filename is None else "Content-Type: application/pdf\r\n")
                 + "\r\n").encode() + content + b"\r\n"
    return body + f"--{BOUNDARY}--\r\n".encode()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("uploads")
    (folder / "kept").mkdir()
    (folder / "tmp").mkdir()
    running = start([str(PROGRAM)], env={"UPLOAD_DIR": str(folder / "kept"),
                                         "TMPDIR": str(folder / "tmp")})
    running.folder = folder
    yield running
    assert running.stop() == 0


def test_a_form_file_is_moved_under_its_safe_name_with_its_field(server):
    data = os.urandom(100_000)
    answer = server.request("POST", "/files", raw=form(("note", None, b"for the records"),
                                                       ("file", "../../etc/pass\x01wd.pdf", data)),
                            headers=FORM)
    assert answer.status == 200, answer.body
    assert answer.json() == {"name": "passwd.pdf",
                             "type": "application/pdf", "size": 100_000,
                             "sha256": hashlib.sha256(data).hexdigest(), "note": "for the records"}
    assert (server.folder / "kept" / "passwd.pdf").read_bytes() == data
    assert os.listdir(server.folder / "tmp") == []  # the temporary file never had a name


def test_a_raw_body_is_the_one_file_and_several_files_need_a_form(server):
    raw = server.request("POST", "/files?note=raw", raw=b"plain bytes",
                         headers={"Content-Type": "text/plain"})
    assert raw.status == 200 and raw.json()["size"] == 11 and raw.json()["name"] == "unnamed"
    both = server.request("POST", "/pair", raw=form(("a", "a.bin", b"12345"), ("b", "b.bin", b"1")),
                          headers=FORM)
    assert (both.status, both.json()) == (200, [5, 1])
    one = server.request("POST", "/pair", raw=form(("a", "a.bin", b"123")), headers=FORM)
    assert (one.status, one.json()) == (200, [3])
    refused = server.request("POST", "/pair", raw=b"12345", headers={"Content-Type": "text/plain"})
    assert (refused.status, refused.json()) == (
        415, {"error": "unsupported media type: expected multipart/form-data"})


def test_missing_and_malformed_parts_are_400s(server):
    missing = server.request("POST", "/files", raw=form(("other", "x.bin", b"1")), headers=FORM)
    assert (missing.status, missing.json()) == (400, {"error": "missing file 'file'"})
    cut = form(("file", "x.bin", b"123"))[:-20]  # the closing boundary never comes
    malformed = server.request("POST", "/files", raw=cut, headers=FORM)
    assert malformed.status == 400 and malformed.json()["error"].startswith("malformed multipart")
    assert server.request("POST", "/pair", raw=form(("a", "a.bin", b"1")), headers=FORM).status == 200


def test_bodies_over_a_routes_limit_are_refused_at_once(server):
    """2 GiB announced to the 256 KiB route: 413 before a byte of the body is sent (the
    connection is answered and closed); a JSON route whose limit is lower than 1 MiB refuses
    what the server would otherwise take."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(b"POST /files HTTP/1.1\r\nHost: x\r\nContent-Type: application/pdf\r\n"
                     b"Content-Length: 2147483648\r\n\r\n")
        answer = sock.recv(4096)
    assert answer.startswith(b"HTTP/1.1 413 ") and b'{"error":"request body too large"}' in answer
    big = server.request("POST", "/files", raw=os.urandom(300_000),
                         headers={"Content-Type": "application/pdf"})
    assert big.status == 413
    note = server.request("POST", "/notes", {"text": "x" * 100})
    assert (note.status, note.json()) == (413, {"error": "request body too large"})
    assert server.request("POST", "/notes", {"text": "short"}).json() == "short"
    assert os.listdir(server.folder / "tmp") == []
