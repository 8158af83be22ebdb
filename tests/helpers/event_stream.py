"""A server-sent event stream read from a real socket: one GET on its own connection, its head,
then its chunks (the runtime's tests and the end-to-end ones read streams alike)."""

from __future__ import annotations

from tests.helpers.http_testkit import Client


class Stream:
    """One GET on its own connection, read as an event stream: the head, then chunks."""

    def __init__(self, port: int, target: str, headers: dict[str, str] | None = None) -> None:
        self.client = Client(port)
        lines = [f"GET {target} HTTP/1.1", "Host: 127.0.0.1", "Accept: text/event-stream"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        self.client.send(("\r\n".join(lines) + "\r\n\r\n").encode())

    def head(self):
        return self.client.response(head=True)  # the status line and fields only

    def chunk(self) -> bytes:
        """The next chunk's data; b"" for the last chunk."""
        size = int(self.client._line().split(b";")[0], 16)
        data = self.client._exact(size)
        self.client._exact(2)
        return data

    def rest(self) -> list[bytes]:
        chunks = []
        while (data := self.chunk()):
            chunks.append(data)
        return chunks

    def close(self) -> None:
        self.client.close()


def events(chunk: bytes) -> list[dict[str, str]]:
    """The events of one chunk, each as its fields (`data` lines joined with a newline);
    comments and the `retry:` block are left out."""
    found = []
    for block in chunk.decode().split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(": ")
            fields[name] = fields[name] + "\n" + value if name in fields else value
        if "data" in fields:
            found.append(fields)
    return found
