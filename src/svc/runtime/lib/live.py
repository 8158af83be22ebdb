"""The builtins of topics and streams: `publish`, `subscribe`, `receive` (svc.runtime.topics),
`send_event`, `last_event_id` (an event stream, svc.runtime.http.events) and the `ws_*` ones
(a WebSocket, svc.runtime.http.sockets).

Generated code hands these svc values; the services carry bytes. So this module is the one
place messages become JSON and back: a message is encoded as a JSON body is (msgspec; an f64
that is inf or NaN is a fault, JSON cannot carry it) and decoded with the strict rules of
`json_decode[T]`, the type given by the compiler (codegen/builtin_calls.py,
`_with_message_type`).

A subscription ends with the function holding it: the checker lets it be neither stored nor
returned, so when that function returns or fails, the last reference goes and `Live.__del__`
closes it. A handler cancelled while it waits in `receive` (its client left: the usual case)
closes it there, at once: a cancelled frame is kept alive by its exception's traceback until
a garbage collection. A message a subscriber cannot decode (a process
of another version published it) is skipped with one warn line: live delivery is at most
once, and one bad message must not end a stream.
"""

from __future__ import annotations

from typing import Any

from svc.rules.contract import MESSAGE_LIMIT
from svc.runtime.http import events, sockets
from svc.runtime.http.responses import encode_result
from svc.runtime.lib.support import SvcError, json_decode
from svc.runtime.observability.serverlog import log_warn
from svc.runtime.topics import Subscription, start_topics


def _encode(message: Any) -> bytes:
    """A message's JSON, as the services carry it: as a handler's JSON result is encoded (an
    f64 that is inf or NaN is a fault)."""
    return encode_result(message, True)


async def publish(db: Any, topic: str, message: Any) -> None | SvcError:
    """`publish(db, t, message)`: to every subscriber of `topic` on db's database, now."""
    topics = await start_topics(db)
    if isinstance(topics, SvcError):
        return topics
    payload = _encode(message)
    if len(payload) > MESSAGE_LIMIT:
        return SvcError("invalid", f"a message to topic {topic!r} has at most {MESSAGE_LIMIT} "
                                   f"bytes of JSON (this one has {len(payload)})")
    topics.publish(topic, payload)
    return None


class Live:
    """A program's subscription (`Subscription[T]`): closed when the last reference goes."""

    __slots__ = ("inner",)

    def __init__(self, inner: Subscription) -> None:
        self.inner = inner

    def __repr__(self) -> str:
        return f"Live({self.inner!r})"

    def __del__(self) -> None:
        try:
            self.inner.close()
        except Exception:  # at interpreter exit, or on a loop already closed: nothing to free
            pass


async def subscribe(db: Any, topic: str) -> Live | SvcError:
    """`subscribe(db, t)`: live once this returns."""
    topics = await start_topics(db)
    if isinstance(topics, SvcError):
        return topics
    return Live(await topics.subscribe(topic))


async def receive(tp: Any, live: Live) -> Any:
    """`receive(s)`: the next message as a `tp`, None once the subscription is closed."""
    inner = live.inner
    while True:
        try:
            payload = await inner.next()
        except BaseException:  # cancelled (its client left): the subscription ends now, not
            inner.close()       # when a collection frees the frame the exception holds
            raise
        if payload is None:
            return None
        value = json_decode(tp, payload)
        if not isinstance(value, SvcError):
            return value
        log_warn("a message of the topic does not decode as the subscriber's type: skipped",
                 {"topic": inner.topic, "error": value.message})


def send_event(stream: events.EventStream, message: Any, event: str | None = None,
               id: str | None = None) -> bool:
    """`send_event(e, message, event, id)`: one server-sent event with message's JSON."""
    return events.send_event(stream, _encode(message), event, id)


def last_event_id(stream: events.EventStream) -> str | None:
    """`last_event_id(e)`."""
    return events.last_event_id(stream)


# --- WebSockets (svc.runtime.http.sockets) ----------------------------------------------------

async def ws_receive(tp: Any, sock: Any) -> Any:
    """`ws_receive(ws)`: the client's next message as a `tp` (bytes: a binary message; any
    other type: a text message's JSON), None once closed. A message that does not decode
    closes the socket with 1007 (sockets.py)."""
    return await sockets.receive(sock, _decoder(tp))


def _decoder(tp: Any):
    """The function that turns one received message into a `tp`, raising ValueError."""
    if tp is bytes:
        return _as_bytes

    def decode(data: str | bytes) -> Any:
        if isinstance(data, bytes):
            raise ValueError("a binary message where a JSON text message was expected")
        value = json_decode(tp, data)
        if isinstance(value, SvcError):
            raise ValueError(value.message)
        return value
    return decode


def _as_bytes(data: str | bytes) -> bytes:
    if isinstance(data, str):
        raise ValueError("a text message where a binary message was expected")
    return data


async def ws_send(sock: Any, message: Any) -> bool:
    """`ws_send(ws, message)`: bytes in a binary frame, any other value's JSON in a text one."""
    if isinstance(message, bytes):
        return await sockets.send(sock, message)
    return await sockets.send_json(sock, _encode(message))


def ws_close(sock: Any, code: int, reason: str) -> None:
    """`ws_close(ws, code, reason)`."""
    sockets.close(sock, code, reason)


def ws_forward(sock: Any, live: Live) -> None:
    """`ws_forward(ws, s)`: every message of the subscription sent to the client, by a task of
    the socket's, until either closes (sockets.py owns the task, and cancels it at close)."""
    sockets.forward(sock, live.inner)
