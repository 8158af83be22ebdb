"""The ceiling for a Python HTTP server: uvloop + httptools answering fixed bytes.

Every request, whatever its method, path or body, gets the same 200 `ok`. No routing, no
JSON, no timers, no Date header: one read, one parse, one write. A real server written in
Python can approach this number but not pass it, so the benchmark reports every server as a
fraction of it. Port from SVC_PORT (default 8080).
"""

import asyncio
import os

import httptools
import uvloop

RESPONSE = (
    b"HTTP/1.1 200 OK\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\n"
    b"Content-Length: 2\r\n"
    b"\r\n"
    b"ok"
)


class FixedProtocol(asyncio.Protocol):
    """Parses requests only to find where each one ends, then writes the fixed answer."""

    def connection_made(self, transport):
        self.transport = transport
        self.parser = httptools.HttpRequestParser(self)
        self.keep_alive = True

    def data_received(self, data):
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self.transport.close()

    def on_message_complete(self):
        self.transport.write(RESPONSE)
        if not self.parser.should_keep_alive():
            self.transport.close()


async def main(port: int, protocol=FixedProtocol, on_start=None) -> None:
    loop = asyncio.get_running_loop()
    if on_start is not None:
        on_start(loop)
    server = await loop.create_server(protocol, "127.0.0.1", port, backlog=4096)
    print(f"listening on http://127.0.0.1:{port}", flush=True)
    async with server:
        await server.serve_forever()


def serve(protocol=FixedProtocol, on_start=None) -> None:
    """Serve `protocol` on 127.0.0.1:SVC_PORT until Ctrl+C (also used by minimal_http.py)."""
    try:
        uvloop.run(main(int(os.environ.get("SVC_PORT", "8080")), protocol, on_start))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    serve()
