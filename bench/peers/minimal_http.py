"""The bare ceiling plus only what docs/reference/http.md asks of every answer: no routing, no JSON.

A yardstick for `bench/python_cost.py`, not a server to compare in the load benchmark: it
does per request the least any server obeying docs/reference/http.md must do (the request URL and
headers collected for the 64 KiB head limit and the framing rules, a `Date` header,
keep-alive, the connection wait deadline restarted after each answer) and nothing of svc's
own (routing, handler binding, the sans-I/O event list, pipelining order, phases).
"""

import asyncio
import time
from email.utils import formatdate

import httptools

HEAD_LIMIT = 65_536
WAIT_SECONDS = 10
_FRAMING = (b"content-length", b"transfer-encoding")


class DateLine:
    """The `Date:` line, recomputed when `refresh` is called (once a tick in a server)."""

    line = b""

    @classmethod
    def refresh(cls) -> None:
        cls.line = b"Date: " + formatdate(time.time(), usegmt=True).encode("ascii") + b"\r\n"


class MinimalProtocol(asyncio.Protocol):
    def connection_made(self, transport) -> None:
        self.transport = transport
        self.loop = asyncio.get_event_loop()
        self.parser = httptools.HttpRequestParser(self)
        self.url = b""
        self.headers: list = []
        self.head_size = 0
        self.framed = False
        self.deadline = 0.0

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self.transport.close()

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))
        self.head_size += len(name) + len(value) + 4
        if len(name) in (14, 17) and name.lower() in _FRAMING:
            self.framed = True

    def on_headers_complete(self) -> None:
        if self.head_size + len(self.url) > HEAD_LIMIT:
            raise ValueError("431")

    def on_message_complete(self) -> None:
        self.transport.write(b"HTTP/1.1 200 OK\r\n" + DateLine.line +
                             b"Content-Type: text/plain; charset=utf-8\r\nContent-Length: 2\r\n\r\nok")
        self.url = b""
        self.headers = []
        self.head_size = 0
        self.framed = False
        self.deadline = self.loop.time() + WAIT_SECONDS
        if not self.parser.should_keep_alive():
            self.transport.close()


def tick(loop: asyncio.AbstractEventLoop) -> None:
    """Refresh the Date line now and every 0.1 s, as svc's sweep does."""
    DateLine.refresh()
    loop.call_later(0.1, tick, loop)


if __name__ == "__main__":
    import bare_uvloop

    bare_uvloop.serve(MinimalProtocol, on_start=tick)
