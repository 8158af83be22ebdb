"""Local fan-out: the subscriptions of this process, by topic, each with a bounded queue.

A publish hands the same `bytes` object to every subscription of its topic (no copy), in
the order of publishes; a topic nobody here subscribes to costs one dict lookup. Nothing
here awaits or touches another process: the buses (postgres_bus.py, sqlite_bus.py) call
`Hub.publish` with what other processes published, and the service (service.py) with what
this one publishes.

Why a bounded queue per subscription, dropping the NEWEST messages that do not fit: a
subscriber is usually a browser behind a stream, and one that stopped reading (a sleeping
laptop, a stalled proxy) must not grow the server's memory, nor slow the publisher or the
other subscribers down. Dropping the newest rather than the oldest keeps what the reader
gets a gap-free prefix followed by one gap, which is easier to reason about ("I missed
everything after X until I caught up") and matches how a live stream reconnecting after a
gap behaves. The queue holds `DEFAULT_QUEUE_SIZE` (256) messages unless told otherwise:
enough for a burst a browser reads in a few milliseconds, small enough that 10,000 idle
subscriptions stay a few megabytes (tests/runtime/topics/test_hub.py measures it). Each
episode of drops is ONE warn line, written when the reader catches up (its queue empties) or
the subscription closes, naming the topic and how many messages were dropped.

A subscription has one reader (one task awaiting `next()` at a time), the stream or socket
handler that owns it, which must `close()` it when it ends (`with`/`async with` does).
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

from svc.runtime.topics import notices

#: Messages a subscription holds before it drops the newest.
DEFAULT_QUEUE_SIZE = 256
#: Messages a bus hands over between two turns of the event loop. A burst from another
#: process arrives in one read of the socket or one poll (hundreds of messages at once); the
#: bus lets the loop turn after this many, so readers empty their queues in between and a
#: reader that keeps up never loses a message to a burst larger than its queue.
BURST = 64


class Subscription:
    """One reader's view of one topic: the messages published since it began, as `bytes`.

    `await next()` returns the next message, or None once the subscription is closed (by
    its owner, or by the service stopping); `async for message in subscription` ends there.
    """

    __slots__ = ("topic", "_hub", "_queue", "_waiter", "_closed", "_dropping", "dropped")

    def __init__(self, hub: Hub, topic: str) -> None:
        self.topic = topic
        self._hub = hub
        self._queue: deque[bytes] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._closed = False
        self._dropping = 0  # dropped in the episode going on
        #: Messages this subscription has dropped, ever.
        self.dropped = 0

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self._queue)} queued"
        return f"Subscription({self.topic!r}, {state})"

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def queued(self) -> int:
        return len(self._queue)

    def _put(self, payload: bytes) -> bool:
        """A message for this reader (on the event loop); False when its queue is full."""
        queue = self._queue
        if len(queue) >= self._hub.queue_size:
            self._dropping += 1
            self.dropped += 1
            self._hub.dropped += 1
            return False
        queue.append(payload)
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)
        return True

    async def next(self) -> bytes | None:
        """The next message, waiting for one; None once closed."""
        queue = self._queue
        if not queue:
            if self._closed:
                return None
            if self._waiter is not None:
                raise RuntimeError(f"subscription to topic {self.topic!r} already has a "
                                   "reader waiting: one task reads a subscription")
            waiter = self._waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                if self._waiter is waiter:  # cancelled: no message was handed to it
                    self._waiter = None
            if not queue:
                return None  # woken by close()
        payload = queue.popleft()
        if self._dropping and not queue:
            self._end_episode()
        return payload

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> bytes:
        payload = await self.next()
        if payload is None:
            raise StopAsyncIteration
        return payload

    def close(self) -> None:
        """Stop receiving: queued messages are discarded and a waiting `next()` returns None.
        Closing again does nothing."""
        if self._closed:
            return
        self._hub._remove(self)
        self._shut()
        if self._dropping:
            self._end_episode()

    def _shut(self) -> None:
        """Closed: nothing queued, a waiting reader woken (to get None)."""
        self._closed = True
        self._queue.clear()
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _end_episode(self) -> None:
        count, self._dropping = self._dropping, 0
        notices.dropped(f"a subscriber of topic {self.topic!r} fell behind (its queue holds "
                        f"{self._hub.queue_size})", count)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    async def __aenter__(self) -> Subscription:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        self.close()


class Hub:
    """The subscriptions of one service in this process, by topic, and what they counted."""

    __slots__ = ("topics", "queue_size", "delivered", "dropped")

    def __init__(self, queue_size: int = DEFAULT_QUEUE_SIZE) -> None:
        if not isinstance(queue_size, int) or queue_size < 1:
            raise ValueError(f"a subscription's queue must hold at least 1 message "
                             f"(got {queue_size!r})")
        self.queue_size = queue_size
        #: topic → its subscriptions (a dict: ordered, and O(1) to remove one)
        self.topics: dict[str, dict[Subscription, None]] = {}
        self.delivered = 0  # messages put in a subscription's queue
        self.dropped = 0  # messages a full queue dropped

    def subscribe(self, topic: str) -> Subscription:
        subscription = Subscription(self, topic)
        found = self.topics.get(topic)
        if found is None:
            self.topics[topic] = {subscription: None}
        else:
            found[subscription] = None
        return subscription

    def publish(self, topic: str, payload: bytes) -> int:
        """Hand `payload` to every subscription of `topic` here; how many took it."""
        found = self.topics.get(topic)
        if found is None:
            return 0
        reached = 0
        for subscription in found:  # _put runs no reader code: the dict cannot change here
            if subscription._put(payload):
                reached += 1
        self.delivered += reached
        return reached

    def wants(self, topic: str) -> bool:
        """Whether anyone here subscribes to `topic` (a bus skips the others' messages)."""
        return topic in self.topics

    @property
    def subscribed(self) -> bool:
        """Whether this process has any subscription (SQLite polls only while it does)."""
        return bool(self.topics)

    def subscribers(self) -> dict[str, int]:
        """Subscriptions by topic, now (the gauge)."""
        return {topic: len(found) for topic, found in self.topics.items()}

    def _remove(self, subscription: Subscription) -> None:
        found = self.topics.get(subscription.topic)
        if found is not None:
            found.pop(subscription, None)
            if not found:
                del self.topics[subscription.topic]

    def close_all(self) -> None:
        """Close every subscription (the service stops): their readers get None. The drops
        of subscribers still behind are one line per topic, not one per subscriber (10,000
        subscribers of a topic may all be behind when a busy server stops)."""
        behind: dict[str, tuple[int, int]] = {}  # topic → (subscribers, messages dropped)
        for topic, found in self.topics.items():
            for subscription in found:
                if subscription._dropping:
                    subscribers, count = behind.get(topic, (0, 0))
                    behind[topic] = (subscribers + 1, count + subscription._dropping)
                    subscription._dropping = 0
                subscription._shut()
        self.topics.clear()
        for topic, (subscribers, count) in behind.items():
            were = "s were" if subscribers != 1 else " was"
            notices.dropped(f"{subscribers} subscriber{were} behind on topic {topic!r} when "
                            f"the service stopped (each queue holds {self.queue_size})", count)
