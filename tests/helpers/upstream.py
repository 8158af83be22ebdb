"""A small HTTP/1.1 upstream on 127.0.0.1 for the outbound client's tests (http_get,
http_send): a thread per connection, keep-alive, and it counts the connections it accepted
and keeps every request it read, so a test can see what the client sent and how often it
connected. With `tls=(cert, key)` it speaks HTTPS.

Paths:
    /echo         200, JSON: method, path, query, header fields (lower-case names), body
    /user         200, {"id":7,"name":"ada"}
    /user_extra   200, the user with a field User does not have
    /user_wrong   200, the user with an id that is not a number
    /redirect     302 to /user
    /status/<n>   <n>, a short text body
    /never        reads the request and never answers (until the upstream stops)
    /declared_big a Content-Length of 10 MiB + 1 (and only a few bytes)
    /chunked_big  10 MiB + 1 bytes, chunked
    /gzip_big     10 MiB + 1 bytes gzip-compressed (about 10 KiB on the wire)
    /latin1       200, a body that is not UTF-8
    /connections  200, how many connections were accepted so far
"""

from __future__ import annotations

import gzip
import http.server
import json
import ssl
import threading
from urllib.parse import urlsplit

LIMIT = 10 * 1024 * 1024
USER = {"id": 7, "name": "ada"}
_GZIP_BIG = gzip.compress(b"z" * (LIMIT + 1))


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "_Server"

    def log_message(self, format, *args):  # noqa: A002 - quiet
        pass

    def _answer(self, status: int, body: bytes, content_type: str = "application/json",
                extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _any(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(length) if length else b""
        parts = urlsplit(self.path)
        seen = {"method": self.command, "path": parts.path, "query": parts.query,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": data.decode("utf-8", "replace")}
        self.server.requests.append(seen)
        path = parts.path
        if path == "/echo":
            self._answer(200, json.dumps(seen).encode())
        elif path == "/user":
            self._answer(200, json.dumps(USER).encode())
        elif path == "/user_extra":
            self._answer(200, json.dumps({**USER, "admin": True}).encode())
        elif path == "/user_wrong":
            self._answer(200, json.dumps({**USER, "id": "seven"}).encode())
        elif path == "/redirect":
            self._answer(302, b"", "text/plain", {"Location": "/user"})
        elif path.startswith("/status/"):
            self._answer(int(path.rsplit("/", 1)[1]), b"as asked", "text/plain")
        elif path == "/never":
            self.server.stopping.wait(30)
            self.close_connection = True
        elif path == "/declared_big":
            self.send_response(200)
            self.send_header("Content-Length", str(LIMIT + 1))
            self.end_headers()
            self.wfile.write(b"x" * 10)
            self.close_connection = True
        elif path == "/chunked_big":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            chunk = b"y" * 65536
            sent = 0
            try:
                while sent <= LIMIT:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    sent += len(chunk)
                self.wfile.write(b"0\r\n\r\n")
            except OSError:
                pass  # the client gave up at its limit
            self.close_connection = True
        elif path == "/gzip_big":
            self._answer(200, _GZIP_BIG, "text/plain", {"Content-Encoding": "gzip"})
        elif path == "/latin1":
            self._answer(200, "café".encode("latin-1"), "text/plain; charset=iso-8859-1")
        elif path == "/connections":
            self._answer(200, str(self.server.connections).encode(), "text/plain")
        else:
            self._answer(404, b"no such path", "text/plain")

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _any


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, tls: tuple[str, str] | None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.connections = 0
        self.requests: list[dict] = []
        self.stopping = threading.Event()
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.socket = context.wrap_socket(self.socket, server_side=True)

    def process_request(self, request, client_address):
        self.connections += 1
        super().process_request(request, client_address)

    def handle_error(self, request, client_address):
        pass  # a client that went away (a refused TLS handshake, a size limit)


class Upstream:
    """`with Upstream() as up:` serves on 127.0.0.1:`up.port` until the block ends."""

    def __init__(self, tls: tuple[str, str] | None = None) -> None:
        self.server = _Server(tls)
        self.port = self.server.server_address[1]
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def connections(self) -> int:
        return self.server.connections

    @property
    def requests(self) -> list[dict]:
        return self.server.requests

    def __enter__(self) -> Upstream:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.stopping.set()
        self.server.shutdown()
        self.server.server_close()
