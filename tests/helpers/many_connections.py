"""Thousands of simultaneous connections to a server under test, from one asyncio client.

Used by the 10,000-connection tests of the single server and of the workers: every connection
is opened (in waves the accept queue can take) before any asks, so the server really holds
them all at once.
"""

from __future__ import annotations

import asyncio
import resource

import pytest

WAVE = 500  # connections opened at once: what a listen backlog takes without dropping


def raise_open_file_limit(needed: int) -> tuple[int, int]:
    """Raise this process's soft open-file limit to its hard limit, failing the test when the
    hard limit is below `needed`; returns the old (soft, hard) pair to restore."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < needed:
        pytest.fail(f"the open-file hard limit ({hard}) is below {needed}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return soft, hard


async def open_connections(port: int, count: int) -> list[tuple]:
    """`count` open (reader, writer) pairs to 127.0.0.1:port."""
    streams = []
    for first in range(0, count, WAVE):
        wave = [asyncio.open_connection("127.0.0.1", port) for _ in range(min(WAVE, count - first))]
        streams.extend(await asyncio.gather(*wave))
    return streams


async def ask_health(streams: list[tuple]) -> list[bytes]:
    """Send GET /health on every connection, then read each answer as its status line plus
    its 2-byte body (`b"HTTP/1.1 200 OKok"`)."""
    for _reader, writer in streams:
        writer.write(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")

    async def answer(reader):
        head = await reader.readuntil(b"\r\n\r\n")
        return head.split(b"\r\n", 1)[0] + await reader.readexactly(2)

    return await asyncio.gather(*(answer(reader) for reader, _ in streams))
