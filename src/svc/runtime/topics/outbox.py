"""What this process published for the other processes and has not sent yet: a bounded
queue in publish order, drained in batches by its bus's one sending task.

`publish` must never wait on the database (it is called from handlers, jobs and schedules,
and a live message is not worth a request's time), so it only appends here and the bus
sends later. One task sends, in order, over one connection (PostgreSQL) or one database
thread (SQLite): that is what keeps the messages of one publisher in order at every
receiver. Each message gets the next number of this process's sequence, which the receivers
use to refuse anything that would arrive out of order.

Bounded, dropping the newest, like a subscription's queue (hub.py) and for the same reason:
when the database cannot keep up, memory must not grow. It holds `OUTBOX_SIZE` (10,000)
messages and `OUTBOX_BYTES` (16 MiB) of payloads, whichever is reached first: a second or two
of a busy publisher's small messages, or a few large ones (a message may be 1 MiB). An
overflow episode is one warn line when the queue drains. While the bus is down (`open` is False) a publish is dropped at once: the
outage's own line says that messages published meanwhile are lost.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from svc.runtime.topics import notices

#: Messages, and bytes of their payloads, waiting to be sent before the newest are dropped.
OUTBOX_SIZE = 10_000
OUTBOX_BYTES = 16 * 2**20


class Outbox:
    """(sequence number, topic, payload) triples waiting to leave this process, oldest first."""

    __slots__ = ("items", "limit", "byte_limit", "bytes", "seq", "open", "lost", "overflow",
                 "_wake")

    def __init__(self, wake: Callable[[], None], limit: int = OUTBOX_SIZE,
                 byte_limit: int = OUTBOX_BYTES) -> None:
        """`wake()` tells the sending task there is something to send."""
        self.items: deque[tuple[int, str, bytes]] = deque()
        self.limit = limit
        self.byte_limit = byte_limit
        self.bytes = 0  # of the payloads waiting
        self.seq = 0  # the last number given to a message of this process
        self.open = False  # the bus opens it once it can send
        self.lost = 0  # dropped because the bus was down, or a batch failed to go
        self.overflow = notices.Drops(f"messages for other processes piled up faster than "
                                      f"the database took them (the queue holds {limit} "
                                      f"messages, {byte_limit // 2**20} MiB)")
        self._wake = wake

    def put(self, topic: str, payload: bytes) -> None:
        if not self.open:
            self.lost += 1
            return
        if len(self.items) >= self.limit or self.bytes + len(payload) > self.byte_limit:
            self.overflow.add()
            return
        self.seq += 1
        self.bytes += len(payload)
        self.items.append((self.seq, topic, payload))
        if len(self.items) == 1:
            self._wake()

    def take(self, most: int, most_bytes: int | None = None) -> list[tuple[int, str, bytes]]:
        """Up to `most` of the oldest messages, removed; with `most_bytes`, no more than that
        many bytes of payloads (but always the oldest message, however large)."""
        items = self.items
        if len(items) <= most and (most_bytes is None or self.bytes <= most_bytes):
            batch = list(items)
            items.clear()
            self.bytes = 0
        else:
            batch, size = [], 0
            while items and len(batch) < most:
                length = len(items[0][2])
                if batch and most_bytes is not None and size + length > most_bytes:
                    break
                batch.append(items.popleft())
                size += length
            self.bytes -= size
        if not items and self.overflow.count:
            self.overflow.end()
        return batch

    def close(self) -> int:
        """The bus went down: what was waiting is lost (counted), and so is every publish
        until `open` is set again. How many were waiting."""
        self.open = False
        waiting = len(self.items)
        self.lost += waiting
        self.items.clear()
        self.bytes = 0
        self.overflow.end()
        return waiting

    @property
    def not_sent(self) -> int:
        """Messages of this process that never left it, ever (the metrics)."""
        return self.lost + self.overflow.total
