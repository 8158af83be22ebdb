"""The outbound client's peer: aiohttp's client used directly from Python, behind the
smallest Python HTTP server (uvloop + httptools, as bench/peers/bare_uvloop.py).

Every request but GET /health calls UPSTREAM + "/small" with one shared `aiohttp.ClientSession`
(a keep-alive pool, redirects off) and answers its body as a JSON string, as bench/outbound.svc's
/proxy does; /health answers at once. Port from SVC_PORT.
"""

import asyncio
import json
import os

import aiohttp
import httptools

from bare_uvloop import serve

UPSTREAM = os.environ.get("UPSTREAM", "http://127.0.0.1:9") + "/small"
HEALTH = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 2\r\n"
          b"\r\nok")
session: aiohttp.ClientSession | None = None


def answer(body: bytes) -> bytes:
    return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
            % (len(body), body))


class ProxyProtocol(asyncio.Protocol):
    """One request at a time per connection (wrk does not pipeline)."""

    def connection_made(self, transport):
        self.transport = transport
        self.parser = httptools.HttpRequestParser(self)
        self.url = b""

    def data_received(self, data):
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self.transport.close()

    def on_url(self, url):
        self.url += url

    def on_message_complete(self):
        url, self.url = self.url, b""
        if url == b"/health":
            self.transport.write(HEALTH)
            return
        asyncio.ensure_future(self.proxy())

    async def proxy(self):
        try:
            async with session.get(UPSTREAM, allow_redirects=False) as upstream:
                text = await upstream.text()
            self.transport.write(answer(json.dumps(text, separators=(",", ":")).encode()))
        except aiohttp.ClientError:
            self.transport.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")


def start(loop):
    global session
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=256),
                                    cookie_jar=aiohttp.DummyCookieJar())


if __name__ == "__main__":
    serve(ProxyProtocol, start)
