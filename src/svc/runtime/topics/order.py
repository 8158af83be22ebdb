"""In order per publisher, at every receiver: the last sequence number seen from each.

Every process numbers what it sends (outbox.py) and its publisher id is drawn at random when
its service starts, so a restarted process is a new publisher starting at 1. A receiver
delivers a message only if its number is past the last one it delivered from that
publisher: a message can be lost (at most once) but never arrive after a later one of the
same publisher, whatever the transport did (a reconnection, a payload fetched from a table).
A number further ahead than the next one means messages of that publisher never reached
this process; they are counted (`missed`) for the metrics, not waited for.

The table is bounded: past `PUBLISHERS` publishers (processes restarted many times over a
long life) the one heard from least recently is forgotten, which can only let a message of
that publisher through without the check, never hold one back.
"""

from __future__ import annotations

#: Publishers remembered before the least recently heard from is forgotten.
PUBLISHERS = 4096


class Arrivals:
    """The last number delivered from each publisher, and what the gaps add up to."""

    __slots__ = ("last", "missed", "refused")

    def __init__(self) -> None:
        self.last: dict[str, int] = {}  # least recently heard from first
        self.missed = 0  # numbers skipped: sent by a publisher, never seen here
        self.refused = 0  # arrived after a later one (never delivered)

    def accept(self, publisher: str, seq: int) -> bool:
        """Whether a message numbered `seq` from `publisher` may be delivered now."""
        last = self.last.pop(publisher, None)
        if last is None:
            if len(self.last) >= PUBLISHERS:
                del self.last[next(iter(self.last))]
            self.last[publisher] = seq
            return True
        if seq <= last:
            self.last[publisher] = last
            self.refused += 1
            return False
        self.missed += seq - last - 1
        self.last[publisher] = seq
        return True
