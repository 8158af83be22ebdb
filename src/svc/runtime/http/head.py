"""A request, and the fast path that reads one whole in one compiled pass (protocol.py's).

`Request` is what both of `HttpConnection`'s paths make of a request (protocol.py re-exports
it, and `valid_request_id`). The slow path, httptools (llhttp), calls back into Python once
per URL piece, header field, end of head, body piece and end of message: those calls were
half of the instructions of a small GET or POST. `HeadReader.read` takes a whole request in
one call of this compiled module instead: one loop over the head's bytes (bytes methods would
cost ~700 instructions a call, a regular expression ~90 a byte), slices for the pieces kept.

It takes only a conservative subset of what llhttp takes, and it refuses nothing: for any
other bytes it answers None, and the connection hands them, from that request's first byte,
to httptools for good. So every refusal is httptools', and a request taken here is the
`Request` httptools would have made (tests/runtime/http/test_head_differential.py compares the
two over the protocol tests' hostile inputs and a seeded corpus of 100,000 requests). The subset:

- `METHOD SP /target SP HTTP/1.1|HTTP/1.0 CRLF` with one of the seven methods svc serves and a
  target of visible ASCII (0x21-0x7E) that starts with `/`;
- field lines `token ":" OWS value CRLF` whose values are visible ASCII with inner or trailing
  spaces and tabs (llhttp keeps the trailing ones, so do we), then CRLF;
- no Transfer-Encoding, Expect, Upgrade or Proxy-Connection field; Connection at most once,
  `keep-alive` or `close`; Content-Length at most once, 1 to 7 digits, at most BODY_LIMIT;
  Host at most once, valid, and present in HTTP/1.1;
- the head well within HEAD_LIMIT as protocol.py counts it (so never a 431), and the whole
  body in the bytes (a body only when no route terms are needed: `bodies` is True).

The grammar both paths share (the method names, the fields that matter, the Host shape) is
defined here too.
"""

from __future__ import annotations

import re
from typing import Any, Final, Optional, Union

from svc.rules.contract import BODY_LIMIT, HEAD_LIMIT

try:  # mypyc's native 64-bit integer (interpreted, an int)
    from mypy_extensions import i64
except ImportError:  # pragma: no cover - without mypy installed nothing is compiled
    i64 = int  # type: ignore[misc,assignment]

#: The methods svc serves, by their bytes.
METHODS: Final = {m.encode(): m
                  for m in ("GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS")}
#: The rare header fields that change how a request is framed or answered; protocol.py keeps
#: them in a dict that exists only when one is present (the fast path takes no request with
#: one but `Connection`). Content-Type and Content-Length, which every POST carries, have
#: slots of their own instead (measured: a dict per request, and the HTTP version string
#: built because of it, cost a POST ~2 µs).
SPECIAL: Final = {
    b"transfer-encoding": "transfer_encoding",
    b"expect": "expect",
    b"connection": "connection",
    b"upgrade": "upgrade",
}
#: The field every HTTP/1.1 request carries exactly once, and its shape: RFC 3986's host (an
#: IP literal in brackets, or a name, IPv4 address or nothing) and an optional port (then
#: the spaces llhttp leaves at the end of a value).
HOST: Final = b"host"
HOST_VALUE: Final = re.compile(rb"(?:\[[0-9A-Za-z:.!$&'()*+,;=~_%-]+\]"
                               rb"|[0-9A-Za-z.!$&'()*+,;=~_%-]*)(?::[0-9]*)?[ \t]*")
#: A request's own id for the log and the answer (svc.runtime.observability.serverlog);
#: kept when valid.
REQUEST_ID: Final = b"x-request-id"
#: The longest `X-Request-Id` kept from a request; a longer one is replaced.
REQUEST_ID_LIMIT: Final = 128
#: On the httptools path, a header name is lower-cased and looked up only when its length and
#: first letter could match one of these (hot path): `Accept` or `User-Agent` are not. The
#: fast path's own test is `_BY_SHAPE`, below.
SPECIAL_SHAPES: Final = frozenset(len(name) << 8 | name[0]
                                  for name in (*SPECIAL, b"content-type", b"content-length",
                                               REQUEST_ID, HOST))
#: llhttp reads `Proxy-Connection` as it reads `Connection`: the fast path leaves it to llhttp.
_PROXY_CONNECTION: Final = b"proxy-connection"
_FIELDS_THAT_MATTER: Final = (*SPECIAL, b"content-type", b"content-length", REQUEST_ID, HOST,
                              _PROXY_CONNECTION)


def _by_shape(names: tuple[bytes, ...]) -> tuple[tuple[Optional[tuple[bytes, bytes]], ...], ...]:
    """For each lower-case first letter and length, the one name of `names` of that shape, as
    (lower-case, Title-Case) spellings, or None: the fast path looks closer at a field only
    when its name could be one of them (a set or dict lookup costs ~230-440 instructions a
    field, two tuple indexes ~20)."""
    longest = max(len(name) for name in names)
    return tuple(tuple(next(((name, name.title()) for name in names
                             if name[0] == letter and len(name) == size), None)
                       for size in range(longest + 1))
                 for letter in range(128))


_BY_SHAPE: Final = _by_shape(_FIELDS_THAT_MATTER)
_LONGEST: Final = len(_BY_SHAPE[0]) - 1


def _table(allowed: bytes) -> bytes:
    """256 bytes, one per byte value: 1 for the `allowed` ones, else 0."""
    return bytes(byte in allowed for byte in range(256))


#: The bytes of a field name (RFC 9110's token).
_TOKEN: Final = _table(b"!#$%&'*+-.^_`|~0123456789"
                       b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
#: The methods taken here with the space after them, by their first byte.
_METHOD_WORDS: Final = tuple(tuple((name + b" ", method) for name, method in METHODS.items()
                                   if name[0] == letter) for letter in range(128))
#: The largest head taken here, in bytes as sent. protocol.py measures a head as if written
#: canonically, which adds at most one byte per field (`name:value` without a space); a head
#: this size or smaller can never be refused as too large.
_HEAD_TAKEN: Final = HEAD_LIMIT // 2
#: The longest Content-Length taken here (BODY_LIMIT has 7 digits).
_LENGTH_DIGITS: Final = len(str(BODY_LIMIT))


class Request:
    """One parsed request. `path` is the raw (percent-encoded) path as str, `query` raw bytes,
    `target` the request target as received (for the log: decoded only when a line is written).
    `keep_alive`: another request may follow this one (not after `Connection: close`, an
    HTTP/1.0 request without keep-alive, or an upgrade request). `started` is set by the
    server: perf_counter() when the request began, for the log. `rid` is its id: the one in
    its first `X-Request-Id` field when that one is valid (svc.runtime.observability.serverlog), else ""
    until the server makes one (with JSON logs, or when a line is written about it). `form`
    is None, or for a route with `Upload` parameters the `ReceivedForm` its body was received
    into (then `body` is b""), whose files the server closes when the request ends.

    A class of this compiled module: the compiled request path reads its fields as C struct
    members (a msgspec Struct's cost ~160 instructions a read, and a request is read ~10 times
    on its way, more with the access log on; measured with bench/instructions.py)."""

    __slots__ = ("method", "path", "query", "target", "_headers", "body", "keep_alive",
                 "content_type", "upgrade", "started", "rid", "form")

    def __init__(self, method: str, path: str, query: bytes, target: bytes,
                 headers: Union[list, bytes], body: bytes, keep_alive: bool,
                 content_type: Optional[bytes], upgrade: bool) -> None:
        self.method = method
        self.path = path
        self.query = query
        self.target = target
        #: The header list, or for a request the fast path took, its field lines as received:
        #: made into the list when it is first read (most requests never read it).
        self._headers = headers
        self.body = body
        self.keep_alive = keep_alive
        self.content_type = content_type
        self.upgrade = upgrade
        self.started = 0.0
        self.rid = ""
        self.form: Any = None

    @property
    def headers(self) -> list:
        """The header fields as (name, value) pairs as sent, in order."""
        headers = self._headers
        if isinstance(headers, bytes):
            headers = self._headers = _fields_of(headers)
        return headers

    def release(self) -> None:
        """Close the files of `form`, if any (the request has ended)."""
        form = self.form
        if form is not None:
            self.form = None
            form.close()

    def header(self, name: bytes) -> bytes | None:
        """The first value of a header, by lower-case name (`headers` keeps names as sent)."""
        for key, value in self.headers:
            if key.lower() == name:
                return value
        return None

    def __repr__(self) -> str:
        return f"Request({self.method} {self.path!r} query={self.query!r} body={len(self.body)}B)"


def valid_request_id(value: bytes) -> str | None:
    """The id in an `X-Request-Id` field when it is usable: 1 to 128 visible ASCII characters
    (0x21-0x7E: no spaces, no control characters) but `"` and `\\`, else None (the request
    then gets a new id from the server, and the field's value is never echoed). Such a value
    is safe in a header field and on a log line, and needs no escaping in a JSON string (so
    the access hook never looks for any)."""
    if not 0 < len(value) <= REQUEST_ID_LIMIT:
        return None
    for byte in value:
        if not 0x21 <= byte <= 0x7E or byte == 0x22 or byte == 0x5C:
            return None
    return value.decode("ascii")


class HeadReader:
    """Takes whole requests from a connection's bytes: `HttpConnection`'s fast path.

    `end` is where the request `read` took last ends; `valid_host` the connection's last valid
    Host value: a client sends the same one on every request, which is then compared, not
    matched again (~1,000 instructions less). The other attributes are the fields that matter
    of the request being read."""

    def __init__(self) -> None:
        self.end: i64 = 0
        self.valid_host = b"\0"
        self.host = False
        self.length: i64 = -1
        self.content_type: Optional[bytes] = None
        self.rid: Optional[bytes] = None
        self.connection: Optional[bytes] = None

    def read(self, data: bytes, start: i64, bodies: bool) -> Optional[Request]:
        """The request that starts at `data[start]` when it is taken whole here, else None.

        `bodies` is False when a body would need its route's terms (protocol.body_hook)."""
        limit: i64 = min(len(data), start + _HEAD_TAKEN)
        method = _method(data, start, limit)
        if not method:
            return None
        target_at = start + len(method) + 1
        at = target_at
        query_at: i64 = 0
        while at < limit and 32 < data[at] < 127:  # the target: visible ASCII, then SP
            if data[at] == 63 and not query_at:  # 63: ?
                query_at = at
            at += 1
        if at == target_at or data[target_at] != 47 or at >= limit or data[at] != 32:  # 47: /
            return None
        target_end = at
        if not _at(data, at + 1, limit, b"HTTP/1.") or not _at(data, at + 9, limit, b"\r\n"):
            return None
        minor = data[at + 8]
        if minor != 49 and minor != 48:  # HTTP/1.1 or HTTP/1.0
            return None
        lines_at = at + 11
        head_end = self._fields(data, lines_at, limit)
        if head_end < 0 or not self.host and minor == 49:  # HTTP/1.1 has a Host
            return None
        end = head_end + max(self.length, 0)
        if end > head_end and (not bodies or end > len(data)):
            return None
        self.end = end
        target = data[target_at:target_end]
        if query_at:
            path = data[target_at:query_at].decode("latin-1")
            query = data[query_at + 1:target_end]
        else:
            path = target.decode("latin-1")
            query = b""
        connection = self.connection
        keep_alive = connection != b"close" if minor == 49 else connection == b"keep-alive"
        request = Request(method, path, query, target, data[lines_at:head_end - 2],
                          data[head_end:end], keep_alive, self.content_type, False)
        if self.rid is not None:
            request.rid = valid_request_id(self.rid) or ""
        return request

    def _fields(self, data: bytes, at: i64, limit: i64) -> i64:
        """Reads the field lines from `data[at]` to the blank line after them, noting the fields
        that matter; where the head ends, or -1 when the request is not taken here."""
        self.host = False
        self.length = -1
        self.content_type = self.rid = self.connection = None
        while True:
            if at + 1 >= limit:
                return -1
            if data[at] == 13:  # CR: the blank line that ends the head
                return at + 2 if data[at + 1] == 10 else -1
            name_at = at
            while at < limit and _TOKEN[data[at]]:
                at += 1
            name_end = at
            if name_at == name_end or at >= limit or data[at] != 58:  # 58: the colon
                return -1
            at += 1
            while at < limit and (data[at] == 32 or data[at] == 9):  # OWS
                at += 1
            value_at = at
            while at < limit and (31 < data[at] < 127 or data[at] == 9):  # text: VCHAR, SP, HTAB
                at += 1
            if at + 1 >= limit or data[at] != 13 or data[at + 1] != 10:
                return -1
            lower = _field_that_matters(data, name_at, name_end)
            if lower and not self._note(lower, data, value_at, at):
                return -1
            at += 2

    def _note(self, lower: bytes, data: bytes, value_at: i64, value_end: i64) -> bool:
        """Notes a field that matters, named `lower`, whose value is `data[value_at:value_end]`;
        False when the request is not taken here."""
        if lower == HOST:
            if self.host:
                return False
            self.host = True
            valid = self.valid_host
            if value_end - value_at == len(valid) and _at(data, value_at, value_end, valid):
                return True  # every request's case, without a match (hot path)
            value = data[value_at:value_end]
            if HOST_VALUE.fullmatch(value) is None:
                return False
            self.valid_host = value
        elif lower == b"content-type":  # the last one counts, as on the httptools path
            self.content_type = data[value_at:value_end]
        elif lower == b"content-length":
            if self.length >= 0:
                return False
            self.length = _length(data, value_at, value_end)
            return 0 <= self.length <= BODY_LIMIT  # httptools refuses more
        elif lower == REQUEST_ID:
            if self.rid is None:
                self.rid = data[value_at:value_end]
        elif lower == b"connection":
            if self.connection is not None:
                return False
            self.connection = data[value_at:value_end].lower()
            return self.connection == b"keep-alive" or self.connection == b"close"
        else:  # Transfer-Encoding, Expect, Upgrade, Proxy-Connection
            return False
        return True


def _method(data: bytes, start: i64, limit: i64) -> str:
    """The method of the request line at `start` and the space after it, when it is one taken
    here, else ""."""
    if start >= limit or data[start] > 127:
        return ""
    for word, method in _METHOD_WORDS[data[start]]:
        if _at(data, start, limit, word):
            return method
    return ""


def _at(data: bytes, start: i64, limit: i64, word: bytes) -> bool:
    """Whether `word` is at `data[start]`, before `limit` (a slice and a compare, without the
    slice)."""
    if start + len(word) > limit:
        return False
    for index in range(len(word)):
        if data[start + index] != word[index]:
            return False
    return True


def _field_that_matters(data: bytes, start: i64, end: i64) -> bytes:
    """The lower-case name of the field that matters named by `data[start:end]`, else b""."""
    if end - start > _LONGEST:
        return b""
    spellings = _BY_SHAPE[data[start] | 32][end - start]  # | 32: lower-case the letter
    if spellings is None:
        return b""
    lower, title = spellings
    if _at(data, start, end, title) or _at(data, start, end, lower) \
            or data[start:end].lower() == lower:
        return lower
    return b""


def _length(data: bytes, start: i64, end: i64) -> i64:
    """The Content-Length in `data[start:end]` when it is 1 to 7 digits, else -1."""
    if not 0 < end - start <= _LENGTH_DIGITS:
        return -1
    length: i64 = 0
    for at in range(start, end):
        digit = data[at]
        if not 48 <= digit <= 57:
            return -1
        length = length * 10 + digit - 48
    return length


def _fields_of(lines: bytes) -> list:
    """The (name, value) pairs of field lines the fast path took (so already checked):
    `name ":" OWS value CRLF` each."""
    fields = []
    at: i64 = 0
    end: i64 = len(lines)
    while at < end:
        name_at = at
        while lines[at] != 58:  # the colon
            at += 1
        name = lines[name_at:at]
        at += 1
        while lines[at] == 32 or lines[at] == 9:  # OWS
            at += 1
        value_at = at
        while lines[at] != 13:
            at += 1
        fields.append((name, lines[value_at:at]))
        at += 2
    return fields
