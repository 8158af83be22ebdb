"""The HTTP/1.1 connection state machine: bytes in, events out, no sockets.

`HttpConnection.feed(data)` returns, in order, the events the bytes complete:

- a `Request` (headers and de-chunked body complete);
- a `Continue` when an HTTP/1.1 request asked for `Expect: 100-continue` and its body is
  within the limit (the server still decides whether its route will take it);
- a `Reject` (400, 413, 431) after which the connection is answered and closed; the
  machine then ignores everything that follows.

It enforces the limits of docs/reference/http.md that are about bytes: 64 KiB of request line + headers,
1 MiB of body after de-chunking (413 at once when Content-Length says so), and refuses
request-smuggling shapes (Content-Length with Transfer-Encoding, duplicate Content-Length,
any transfer coding but `chunked`) and requests whose `Host` is missing (HTTP/1.1), given
twice or not a host[:port] (RFC 9112 §3.2). After an upgrade request (WebSocket) it stops parsing and
keeps the raw bytes that follow for the upgraded protocol. Deadlines are the server's job.

A route may set its own body limit, and a route with `Upload` parameters has its body
streamed into temporary files (uploads.py). The protocol learns a request's route when its
headers are complete, through `body_hook` (the router's `body_terms`, set by the connection;
None for a program with neither, when every body is 1 MiB at most and held in memory). The
hook is asked only about a request that has a body, before its `Continue`.

Two paths parse. httptools (llhttp) is the reference, and makes every refusal. With the
compiled modules in use a connection starts on a fast path instead: head.py takes each request
that arrives whole and of the common shape in one compiled call, with no Python call per
field; the first bytes it does not take send the connection to httptools for good, from that
request's first byte (docs/decisions/http.md, "One pass over a request head").
"""

from __future__ import annotations

from typing import Any, Final, Optional

import httptools

from svc import native
from svc.rules.contract import BODY_LIMIT, HEAD_LIMIT
from svc.runtime.http import head
from svc.runtime.http.head import (HOST, HOST_VALUE, REQUEST_ID, SPECIAL, SPECIAL_SHAPES,
                                   HeadReader, Request, valid_request_id)

#: Bound here, not imported: CPython 3.11 calls a method of a name a module imported through a
#: bound-method object made for each call (`_METHODS.get`, once a request: ~300 instructions).
_METHODS: Final = head.METHODS
_VERSIONS = ("1.1", "1.0")
#: The head is measured as if written canonically: `METHOD SP url SP HTTP/1.1 CRLF`, each
#: header `name: value CRLF`, then CRLF. That is 14 bytes plus the method, the URL and
#: 4 per header.
_HEAD_OVERHEAD = 14


class Reject:
    """The request cannot be served: answer `status` with `reason`, then close.

    `method` and `target` name the refused request for the access log when its request line
    was read whole (a body over the limit, say), and are "-" when it was not (garbage bytes).
    `detail` is for the server log only (the OS's words when an upload could not be stored).
    """

    __slots__ = ("status", "reason", "method", "target", "detail")

    def __init__(self, status: int, reason: str, method: str = "-", target: bytes = b"-",
                 detail: str = "") -> None:
        self.status = status
        self.reason = reason
        self.method = method
        self.target = target
        self.detail = detail

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Reject) and (self.status, self.reason) == (other.status, other.reason)

    def __repr__(self) -> str:
        return f"Reject({self.status}, {self.reason!r})"


class Continue:
    """The request whose headers just ended waits for `100 Continue` before sending its body.

    Carries what the server needs to refuse it at once instead (no route, wrong method, a
    body type the route does not take).
    """

    __slots__ = ("method", "path", "target", "content_type")

    def __init__(self, method: str, path: str, target: bytes, content_type: bytes | None) -> None:
        self.method = method
        self.path = path
        self.target = target
        self.content_type = content_type

    def __repr__(self) -> str:
        return f"Continue({self.method} {self.path!r})"


class _Refuse(Exception):
    """Raised inside a parser callback to stop parsing with a Reject."""

    def __init__(self, status: int, reason: str, detail: str = "") -> None:
        self.reject = Reject(status, reason, detail=detail)


#: Whether connections start on the fast path (head.py) unless told: when the compiled modules
#: are in use. Pure Python (SVC_NATIVE=0, or no build) runs httptools alone, the reference.
FAST_PATH = native.state == ""


class HttpConnection:
    """Parses one connection's byte stream. States: open, upgraded, closed.

    With `fast` (FAST_PATH unless told), it starts on the fast path: while every request
    arrives whole and within head.py's subset, `feed` takes each in one call of head.py and
    httptools is never run. The first bytes it does not take switch the connection to
    httptools for good, fed from that request's first byte: from then on all is as without
    `fast`."""

    __slots__ = ("fast", "fast_taken", "_reader", "_replay", "_parser", "_events", "_url",
                 "_headers", "_fed", "_head_bytes", "_keep_alive", "_message_ended", "_body",
                 "received", "_special", "_continue_at", "_content_type", "_content_length",
                 "_request_id", "_has_host", "_valid_host", "_limit", "_receiver", "body_hook", "paced",
                 "in_body", "upgraded", "closed", "_upgrade_buffer")

    def __init__(self, fast: bool = FAST_PATH) -> None:
        #: On the fast path: head.py took every request so far (the next bytes go to it first).
        self.fast = fast
        #: How many requests the fast path took (what tests and benchmarks read).
        self.fast_taken = 0
        self._reader = HeadReader()
        #: The request taken last by the fast path when it did not keep the connection alive:
        #: llhttp refuses what follows such a request, so it is fed to httptools first.
        self._replay = b""
        self._parser = httptools.HttpRequestParser(self)
        self._events: list = []
        self._url = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._fed = 0  # bytes of the chunk being parsed
        self._head_bytes = 0  # bytes received before it since the current message began
        self._keep_alive = True
        self._message_ended = False
        #: The pieces of the body being received; [b""] while they go to `_receiver` instead,
        #: so that the one test for a body at its end finds that one too.
        self._body: list[bytes] = []
        #: Bytes of the body being received, after de-chunking.
        self.received = 0
        #: The most bytes the body being received may have: its route's (BODY_LIMIT unless
        #: `body_hook` said otherwise for this request).
        self._limit = BODY_LIMIT
        #: Where an upload route's body goes (uploads.Receiver), while it arrives.
        self._receiver: Any = None
        #: `hook(method, path)` → the route's `routing.BodyTerms`, or None for the defaults;
        #: asked once per request that has a body. None: every route keeps the defaults.
        self.body_hook: Any = None
        #: The body being received may pass BODY_LIMIT: the server paces its deadline by the
        #: bytes received (BODY_RATE_MIN) instead of cutting it at the processing limit.
        self.paced = False
        self._special: dict[str, bytes] | None = None
        self._content_type: bytes | None = None
        self._content_length: bytes | None = None
        self._request_id: str | None = None  # the valid X-Request-Id of the request being read
        self._has_host = False  # the request being read had its Host field
        #: The connection's last valid Host value: a client sends the same one on every
        #: request, which is then compared, not matched again (~1,000 instructions less).
        self._valid_host = b"\0"
        self._continue_at = False
        #: Headers of a request are complete but its body is not (yet).
        self.in_body = False
        self.upgraded = False
        self.closed = False
        self._upgrade_buffer: list[bytes] = []

    # --- public ----------------------------------------------------------------------------

    def feed(self, data: bytes) -> list:
        """Consume bytes; return the events they complete, in order."""
        if self.closed or self.upgraded:
            if self.upgraded:
                self._upgrade_buffer.append(data)
            return []
        events = self._events = []
        self._fed = len(data)  # the chunk's whole size, also after the fast path took a part
        if self.fast:
            taken = self._take_whole_requests(data)
            if taken == len(data):
                return events
            self.fast = False
            self._message_ended = taken > 0
            data = data[taken:]
            if self._replay and not self._catch_up():
                return events
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade as exc:
            self._start_upgrade(data, exc)
        except httptools.HttpParserCallbackError as exc:
            refusal = exc.__context__
            if isinstance(refusal, _Refuse):  # raised by a callback: the request line is whole
                self._refuse(self._naming_the_request(refusal.reject))
            else:  # a bug of ours: still never raise out of feed
                self._refuse(Reject(400, "malformed request"))
        except httptools.HttpParserError as exc:
            reject = _parse_error(exc)
            if self._url or self.in_body:  # the request line was read: name the request
                reject = self._naming_the_request(reject)
            self._refuse(reject)
        else:
            if not self.in_body:
                if self._message_ended:  # this chunk ended a message; its tail may start another
                    self._message_ended = False
                    self._head_bytes = 0
                else:
                    self._guard_head(self._fed)
        return events

    def _take_whole_requests(self, data: bytes) -> int:
        """The fast path: append the requests head.py takes whole, from the start of `data`;
        return where it stopped (len(data) when it took everything). It stops at the first
        request it does not take, and takes nothing after one that closes the connection."""
        if self._replay:
            return 0
        start = 0
        size = len(data)
        events = self._events
        reader = self._reader
        bodies = self.body_hook is None
        while start < size:
            request = reader.read(data, start, bodies)
            if request is None:
                return start
            events.append(request)
            self.fast_taken += 1
            if not request.keep_alive:
                self._replay = data[start:reader.end]
                return reader.end
            start = reader.end
        return start

    def _catch_up(self) -> bool:
        """Feed httptools the request the fast path took last, which closed the connection,
        dropping its events: llhttp is then in the state it would have been in (refusing all
        but CR and LF). False, and the connection refused, if httptools did not take it (it
        always does: the fast path takes only what it takes)."""
        replay, self._replay = self._replay, b""
        events, self._events = self._events, []
        ended = self._message_ended
        try:
            self._parser.feed_data(replay)
        except httptools.HttpParserError:
            self._events = events
            self._refuse(Reject(400, "malformed request"))
            return False
        self._events = events
        self._message_ended = ended
        return True

    def target(self) -> tuple[str, bytes]:
        """(method, target as received) of the request being read, once its request line is
        complete.

        For the log line of a request refused or timed out before it was whole (a body that
        stops arriving); not on the hot path.
        """
        return self._parser.get_method().decode("latin-1"), self._url or b"-"

    def _naming_the_request(self, reject: Reject) -> Reject:
        method, target = self.target()
        return Reject(reject.status, reject.reason, method, target, reject.detail)

    def take_upgrade_data(self) -> bytes:
        """Bytes received after the upgrade request, for the upgraded protocol."""
        data = b"".join(self._upgrade_buffer)
        self._upgrade_buffer.clear()
        return data

    # --- limits ----------------------------------------------------------------------------

    def _guard_head(self, size: int) -> None:
        """Refuse a head that keeps growing without completing (431) before buffering it all."""
        self._head_bytes += size
        if self._head_bytes > HEAD_LIMIT:
            self._refuse(Reject(431, "request header fields too large"))

    def _refuse(self, reject: Reject) -> None:
        self._events.append(reject)
        self.closed = True
        self.in_body = False
        self.drop_body()

    def drop_body(self) -> None:
        """The body being received will never be used (refused here, or the server stops
        reading it: timed out, the client gone): close the files an upload's went to."""
        receiver = self._receiver
        if receiver is not None:
            self._receiver = None
            receiver.close()

    def _start_upgrade(self, data: bytes, exc: httptools.HttpParserUpgrade) -> None:
        self.upgraded = True
        offset = exc.args[0] if exc.args and isinstance(exc.args[0], int) else len(data)
        if data[offset:]:
            self._upgrade_buffer.append(data[offset:])

    # --- httptools callbacks ---------------------------------------------------------------

    def on_url(self, url: bytes) -> None:
        self._url += url  # b"" + url is url itself: no copy for a URL that arrives whole

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name, value))
        if (len(name) << 8 | name[0] | 32) in SPECIAL_SHAPES:  # | 32: lower-case the letter
            if value == self._valid_host and name == b"Host" and not self._has_host:
                self._has_host = True  # every request's case, without a call (hot path)
            else:
                self._note_special(name, value)

    def _note_special(self, name: bytes, value: bytes) -> None:
        lower = name.lower()
        if lower == HOST:  # every request has one: first
            if self._has_host:
                raise _Refuse(400, "more than one Host header")
            if HOST_VALUE.fullmatch(value) is None:
                raise _Refuse(400, "invalid Host header")
            self._has_host = True
            self._valid_host = value
            return
        if lower == b"content-type":  # the last one counts, as before
            self._content_type = value
            return
        if lower == b"content-length":
            if self._content_length is not None:
                raise _Refuse(400, f"duplicate {name.decode('latin-1')} header")
            self._content_length = value
            return
        if lower == REQUEST_ID:
            if self._request_id is None:  # the first field counts; an invalid one is dropped
                self._request_id = valid_request_id(value) or ""
            return
        attr = SPECIAL.get(lower)
        if attr is None:
            return
        special = self._special
        if special is None:
            special = self._special = {}
        if attr in special and attr == "transfer_encoding":
            raise _Refuse(400, f"duplicate {name.decode('latin-1')} header")
        special[attr] = value

    def on_headers_complete(self) -> None:
        parser = self._parser
        special = self._special
        # llhttp also admits HTTP/0.9 and 2.0; both parse as "not keep-alive" unless a
        # Connection header (kept in `special`) says otherwise, so the (slow) version string
        # is built only then: never for a keep-alive GET or POST.
        keep_alive = self._keep_alive = parser.should_keep_alive()
        if special is not None or not keep_alive:
            if parser.get_http_version() not in _VERSIONS:
                raise _Refuse(400, "unsupported HTTP version")
        if not self._has_host and parser.get_http_version() == "1.1":
            raise _Refuse(400, "missing Host header")  # HTTP/1.0 needs none
        # The bytes received since the message began bound its head: measure only past 64 KiB.
        if self._head_bytes + self._fed > HEAD_LIMIT and self._head_size() > HEAD_LIMIT:
            raise _Refuse(431, "request header fields too large")
        self.in_body = True
        if special is not None:
            self._check_framing(special)
        elif self._content_length is not None:
            if self.body_hook is None:
                if int(self._content_length) > BODY_LIMIT:
                    raise _Refuse(413, "request body too large")
            elif int(self._content_length) > 0:
                self._take_route_terms(int(self._content_length))

    def _head_size(self) -> int:
        """The head's size as if written canonically (see _HEAD_OVERHEAD)."""
        headers = sum(len(name) + len(value) + 4 for name, value in self._headers)
        return headers + len(self._url) + len(self._parser.get_method()) + _HEAD_OVERHEAD

    def _check_framing(self, special: dict[str, bytes]) -> None:
        coding = special.get("transfer_encoding")
        if coding is not None and coding.strip().lower() != b"chunked":
            raise _Refuse(400, "unsupported transfer coding")
        length = self._content_length
        size = -1 if length is None else int(length)  # -1: chunked, or no body
        if self.body_hook is not None and (coding is not None or size > 0):
            self._take_route_terms(size)
        elif size > BODY_LIMIT:
            raise _Refuse(413, "request body too large")
        expect = special.get("expect")
        if expect is not None and expect.strip().lower() == b"100-continue":
            # RFC 9110 §10.1.1: an HTTP/1.0 client's expectation is ignored
            if (coding is not None or (length is not None and int(length) > 0)) \
                    and self._parser.get_http_version() == "1.1":
                self._continue_at = True
                url = self._url
                raw_method = self._parser.get_method()
                path = url.partition(b"?")[0] if url[:1] == b"/" \
                    else _other_target(url, raw_method)[0]
                method = raw_method.decode("latin-1")
                self._events.append(Continue(method, path.decode("latin-1"), url,
                                             self._content_type))

    def _take_route_terms(self, size: int) -> None:
        """The route's terms for the body whose headers just ended (`size` from its
        Content-Length, -1 when chunked): its limit (413 now when `size` is over it), and for
        an upload route, the receiver its pieces go to (or its refusal: 400, 415)."""
        url = self._url
        raw_method = self._parser.get_method()
        path = url.partition(b"?")[0] if url[:1] == b"/" else _other_target(url, raw_method)[0]
        terms = self.body_hook(raw_method.decode("latin-1"), path.decode("latin-1"))
        limit = BODY_LIMIT if terms is None else terms.limit
        if size > limit:
            raise _Refuse(413, "request body too large")
        self._limit = limit
        self.paced = limit > BODY_LIMIT
        if terms is not None and terms.uploads is not None:
            receiver = terms.uploads.receive(self._content_type)
            if receiver.__class__ is Reject:
                raise _Refuse(receiver.status, receiver.reason)
            self._receiver = receiver
            self._body = [b""]

    def on_body(self, chunk: bytes) -> None:
        self.received += len(chunk)
        if self.received > self._limit:
            raise _Refuse(413, "request body too large")
        receiver = self._receiver
        if receiver is None:
            self._body.append(chunk)
            return
        problem = receiver.write(chunk)
        if problem is not None:
            raise _Refuse(problem.status, problem.reason, problem.detail)

    def on_message_complete(self) -> None:
        events = self._events
        if self._continue_at:
            # The body arrived in the same bytes as the headers: a 100 would only be noise.
            if events and events[-1].__class__ is Continue:
                events.pop()
            self._continue_at = False
        parser = self._parser
        url = self._url
        raw_method = parser.get_method()
        if url[:1] == b"/":
            path, _, query = url.partition(b"?")
        else:
            path, query = _other_target(url, raw_method)
        body = b""
        form: Any = None
        if self._body:
            receiver = self._receiver
            if receiver is None:
                body = b"".join(self._body)
            else:
                form = receiver.finish()
                if form.__class__ is Reject:
                    raise _Refuse(form.status, form.reason)
                self._receiver = None
            self._body = []
            self.received = 0
        content_type = self._content_type
        special = self._special
        if special is None:  # no framing or upgrade header: the common GET and POST
            upgrade = raw_method == b"CONNECT" and parser.should_upgrade()
        else:
            upgrade = _may_upgrade(parser, special, raw_method)
        # After an upgrade request the bytes are not HTTP: no request can follow it.
        request = Request(
            _METHODS.get(raw_method) or raw_method.decode("latin-1"), path.decode("latin-1"),
            query, url, self._headers, body, self._keep_alive and not upgrade, content_type,
            upgrade)
        if self._request_id is not None:
            request.rid = self._request_id
            self._request_id = None
        if form is not None:
            request.form = form
        events.append(request)
        self._url = b""
        self._headers = []
        self._special = None
        self._content_type = self._content_length = None
        self._has_host = False
        self.in_body = False
        self._message_ended = True


def _parse_error(exc: httptools.HttpParserError) -> Reject:
    """400 for bytes that are not HTTP; a Content-Length too big for 64 bits is a body too large."""
    if "Content-Length overflow" in str(exc):
        return Reject(413, "request body too large")
    return Reject(400, f"malformed request: {exc}")


def _may_upgrade(parser: httptools.HttpRequestParser, special: dict | None, method: bytes) -> bool:
    """llhttp's upgrade flag, asked only when an Upgrade header or CONNECT could have set it."""
    if (special is None or "upgrade" not in special) and method != b"CONNECT":
        return False
    return parser.should_upgrade()


def _other_target(url: bytes, method: bytes) -> tuple[bytes, bytes]:
    """`http://host/p?q` → (b"/p", b"q"); `OPTIONS *` (RFC 9110 §7.1, the server as a whole)
    → (b"*", b""); anything else that is not `/...` is refused."""
    if url[:7] == b"http://" or url[:8] == b"https://":
        # Any: httptools' stub types the parts as bytes, but an absent one is None, and the
        # compiled module would check the stub's type (a 400 for `http://h/p`).
        parsed: Any = httptools.parse_url(url)
        return parsed.path or b"/", parsed.query or b""
    if url == b"*" and method == b"OPTIONS":
        return b"*", b""
    raise _Refuse(400, "malformed request target")
