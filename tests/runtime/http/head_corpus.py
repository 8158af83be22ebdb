"""The byte streams the fast path (head.py) is compared with httptools over.

- `hostile_inputs()`: every byte string the protocol and server tests send, read from their
  source (each bytes literal, and each expression of literals such as `b"a" * 70000`), so a
  hostile input added to those tests is compared here too;
- `streams(seed, requests)`: a seeded corpus of pipelined batches of requests, valid ones of
  every shape the fast path takes or leaves to httptools, a third of them mutated (bytes
  flipped, CR/LF/NUL/SP/0x80+ inserted, lines duplicated or removed, LF-only line ends,
  obs-folds, a line near the 64 KiB limit), each cut into pieces at random points.
"""

from __future__ import annotations

import ast
import random
from dataclasses import dataclass
from pathlib import Path

from svc.rules.contract import HEAD_LIMIT

HERE = Path(__file__).resolve().parent
TESTS = HERE.parents[1]
#: The test modules whose byte strings are the hostile inputs.
SOURCES = sorted([*HERE.glob("test_*.py"), TESTS / "runtime/observability/test_logs_and_metrics.py",
                  *TESTS.glob("e2e/test_http*.py")])


# --- the hostile inputs of the tests ------------------------------------------------------------

def _constant_bytes(node: ast.expr) -> bytes | None:
    """The value of an expression made only of literals and operators, when it is bytes."""
    if not all(isinstance(part, (ast.Constant, ast.BinOp, ast.Tuple, ast.operator, ast.Load,
                                 ast.UnaryOp, ast.unaryop))
               for part in ast.walk(node)):
        return None
    try:
        value = eval(compile(ast.Expression(node), "<literal>", "eval"), {"__builtins__": {}})
    except Exception:  # e.g. b"%d" % (1, 2): not a byte string the tests send
        return None
    return value if isinstance(value, bytes) and len(value) <= 4 * HEAD_LIMIT else None


def hostile_inputs() -> list[bytes]:
    """Each byte string of the SOURCES that could be (part of) a request, with the endings the
    tests add to a head (`head + b"\\r\\n"`, then a body)."""
    found: set[bytes] = set()
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.expr):
                value = _constant_bytes(node)
                if value is not None and len(value) > 4:
                    found.add(value)
    inputs = set(found)
    for value in found:
        inputs.update((value + b"\r\n", value + b"\r\n{}", value + b"\r\n\r\n"))
    return sorted(inputs)


# --- the generated corpus ---------------------------------------------------------------------

FAST_METHODS = [b"GET", b"GET", b"GET", b"POST", b"POST", b"HEAD", b"PUT", b"DELETE", b"PATCH",
                b"OPTIONS"]
OTHER_METHODS = [b"CONNECT", b"PROPFIND", b"get", b"TRACE", b"PRI", b"SEARCH", b"Get"]
#: llhttp's target bytes: visible ASCII, with the odd ones weighted up.
TARGET_CHARS = bytes(range(0x21, 0x7F)) + b"%%%??##//..;;&&==\"<>\\^`{|}"
VISIBLE = bytes(range(0x20, 0x7F))
NAMES = [b"Accept", b"User-Agent", b"X-Trace", b"Cookie", b"Authorization", b"Accept-Encoding",
         b"Cache-Control", b"Sec-Fetch-Mode", b"X-Forwarded-For", b"If-None-Match", b"Origin",
         b"X-User", b"Referer", b"X", b"a!#$%&'*+-.^_`|~9", b"Content-Language", b"Hostname"]
VALUES = [b"*/*", b"bench", b"gzip, deflate", b"max-age=0", b"a b\tc", b"\"quoted\"", b"x",
          b"()<>@,;:\\/[]?={}", b"Bearer ada", b"", b"1"]
HOSTS = [b"h", b"example.com", b"127.0.0.1:8080", b"[::1]:8080", b"", b"a.example:", b"my_host:1",
         b"xn--bcher-kva.example", b"h  "]
BAD_HOSTS = [b"a b", b"a/b", b"a:80x", b"a@b", b"[::1", b"h\x80"]
CONNECTIONS = [b"close", b"CLOSE", b"upgrade", b"close, foo", b"keep-alive ",
               b"Upgrade, keep-alive", b"te", b"keep-alive, close"]
REQUEST_IDS = [b"abc-123", b"a" * 128, b"a" * 129, b"has space", b"q\"uote", b"", b"back\\slash"]
SEPARATORS = [b": ", b": ", b": ", b":", b":  ", b":\t", b": \t"]
CONTENT_TYPES = [b"application/json", b"text/plain; charset=utf-8",
                 b"multipart/form-data; boundary=XyZ123", b"application/octet-stream"]
#: The share of generated requests with one odd trait (one the fast path leaves to httptools).
ODD = 0.15
#: How many distinct targets and field lines a corpus draws its requests from.
POOL = 3000


@dataclass
class Stream:
    """One connection's bytes, as the pieces `feed` is given; `requests` generated into it,
    `odd` of them with an odd trait, `mutated` when edited after."""

    pieces: list[bytes]
    requests: int
    odd: int
    mutated: bool


class Corpus:
    """The requests of one seed. Targets and field lines are drawn from pools made first (a
    request then costs a few draws: 100,000 of them take about a second to make)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.random = self.rng.random
        self.targets = [self._target() for _ in range(POOL)]
        self.lines = [self._case(self.pick(NAMES)) + self.pick(SEPARATORS) + self._value()
                      for _ in range(POOL)]
        self.hosts = [self._line(b"Host", host) for host in HOSTS for _ in range(3)]

    def pick(self, items):
        return items[int(self.random() * len(items))]

    def _case(self, name: bytes) -> bytes:
        roll = self.random()
        return name if roll < 0.8 else name.lower() if roll < 0.9 else name.upper()

    def _line(self, name: bytes, value: bytes) -> bytes:
        return self._case(name) + self.pick(SEPARATORS) + value

    def _target(self) -> bytes:
        rng = self.rng
        if rng.random() < 0.6:
            path = rng.choice([b"/", b"/health", b"/small", b"/users/7", b"/echo", b"/files",
                               b"/big"])
        else:
            path = b"/" + bytes(rng.choices(TARGET_CHARS, k=rng.randint(0, 24)))
        if rng.random() < 0.3:
            path += b"?" + bytes(rng.choices(TARGET_CHARS, k=rng.randint(0, 30)))
        return path

    def _value(self) -> bytes:
        rng = self.rng
        if rng.random() < 0.6:
            value = rng.choice(VALUES)
        else:
            value = bytes(rng.choices(VISIBLE, k=rng.randint(0, 40))).strip(b" ")
        if rng.random() < 0.05:
            value += rng.choice([b" ", b"\t", b"  "])  # llhttp keeps trailing whitespace
        return value

    def request(self) -> tuple[bytes, bool]:
        """One request, and whether it has an odd trait: else it is of a shape the fast path
        takes (any of its methods, targets, field names, values and spacing, a body or not,
        keeping the connection alive)."""
        random, pick = self.random, self.pick
        method = pick(FAST_METHODS)
        version = b"HTTP/1.1" if random() < 0.9 else b"HTTP/1.0"
        lines = self.rng.choices(self.lines, k=pick([0, 1, 2, 2, 3, 3, 4, 6, 12]))
        if version == b"HTTP/1.1" or random() < 0.5:
            lines.append(pick(self.hosts))
        if version == b"HTTP/1.0" or random() < 0.05:
            lines.append(self._line(b"Connection", pick([b"keep-alive", b"Keep-Alive"])))
        if random() < 0.1:
            lines.append(self._line(b"X-Request-Id", pick(REQUEST_IDS)))
        body = b""
        if method in (b"POST", b"PUT", b"PATCH") and random() < 0.7 or random() < 0.03:
            size = pick([0, 2, 5, 16, 40, 64, 200]) if random() < 0.97 \
                else self.rng.randint(1000, 9000)
            body = self.rng.randbytes(size) if random() < 0.2 else b"{}" * (size // 2)
            if random() < 0.6:
                lines.append(self._line(b"Content-Type", pick(CONTENT_TYPES)))
        parts = Parts(method, pick(self.targets), version, lines, body)
        odd = random() < ODD
        if odd:
            self._odd(parts)
        return parts.written(self), odd

    def _odd(self, parts: Parts) -> None:
        """Gives `parts` one trait the fast path leaves to httptools (to take or to refuse)."""
        pick, lines, size = self.pick, parts.lines, len(parts.body)
        kind = int(self.random() * 15)
        if kind == 0:
            parts.method = pick(OTHER_METHODS)
        elif kind == 1:
            parts.target = pick([b"*", b"http://h/p?q=1", b"https://h:8443/a/b?", b"http://h", b"p",
                                 b"/a\x80b"])
        elif kind == 2:
            parts.version = pick([b"HTTP/2.0", b"HTTP/0.9", b"HTTP/1.2", b"HTTP/1.10", b"http/1.1",
                                  b"HTTP/1.0"])
        elif kind == 3:  # no Host, or two, or a bad one
            parts.lines = [line for line in lines if line[:5].lower() != b"host:"]
        elif kind == 4:
            lines.append(self._line(b"Host", pick([*BAD_HOSTS, *HOSTS])))
        elif kind == 5:
            lines.append(self._line(b"Connection", pick(CONNECTIONS)))
        elif kind == 6:
            lines.append(pick([b"Proxy-Connection: close", b"Upgrade: websocket",
                               b"Expect: 100-continue", b"Expect: 100-Continue ", b"Expect: no",
                               b"Transfer-Encoding: gzip"]))
        elif kind in (7, 8):
            parts.chunked = True
        elif kind in (9, 10):  # a Content-Length of another shape, or two
            parts.length = pick([b"0" + str(size).encode(), str(size).encode() + b" ", b"+1", b"-1",
                                 b"", b"99999999999999999999999", b"1048577", b"12345678",
                                 str(size + 3).encode()])
        elif kind == 11:
            lines += [b"Content-Length: 2", b"content-length: 2"]
        elif kind == 12:  # bytes llhttp takes in a value (obs-text) or refuses (DEL)
            lines.append(pick([b"X-Obs: caf\xc3\xa9", b"X-Request-Id: \xff"]))
        elif kind == 13:
            lines.append(b"X-Del: a\x7fb")
        else:
            lines.append(self._line(b"Content-Length", str(size).encode()))  # doubled when a body

    def mutate(self, data: bytes) -> bytes:
        """A few edits of the kinds that break or bend HTTP framing."""
        rng = self.rng
        buf = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            kind = rng.randrange(9)
            pos = rng.randint(0, len(buf))
            if kind == 0 and buf:  # a byte flipped
                buf[min(pos, len(buf) - 1)] = rng.getrandbits(8)
            elif kind == 1:  # a byte inserted that matters to framing
                buf[pos:pos] = rng.choice([b"\r", b"\n", b"\0", b" ", b"\t", b":",
                                           bytes([rng.randint(0x80, 0xFF)])])
            elif kind == 2:  # a few bytes gone
                del buf[pos:pos + rng.randint(1, 6)]
            elif kind in (3, 4):  # a line duplicated or removed
                lines = bytes(buf).split(b"\r\n")
                at = rng.randrange(len(lines))
                lines[at:at + 1] = [lines[at]] * 2 if kind == 3 else []
                buf = bytearray(b"\r\n".join(lines))
            elif kind == 5:  # LF-only line ends, all or one
                buf = bytearray(bytes(buf).replace(b"\r\n", b"\n", rng.choice([1, -1])))
            elif kind == 6:  # an obs-fold
                at = bytes(buf).find(b"\r\n", pos)
                if at > 0:
                    buf[at:at] = b"\r\n " + bytes(rng.choices(b"xyz", k=3))
            elif kind == 7:  # CRLF inserted: a line or a head ended early
                buf[pos:pos] = b"\r\n"
            elif kind == 8 and rng.random() < 0.05:  # a field line near the 64 KiB limit
                at = bytes(buf).find(b"\r\n")
                if at > 0:
                    size = HEAD_LIMIT - rng.randint(-80, 400)
                    buf[at + 2:at + 2] = b"X-Big: " + b"b" * size + b"\r\n"
        return bytes(buf)

    def pieces(self, data: bytes) -> list[bytes]:
        """`data` whole, byte by byte, or cut at a few random points."""
        rng = self.rng
        if rng.random() < 0.6 or len(data) < 2:
            return [data]
        if rng.random() < 0.02 and len(data) < 2000:
            return [data[i:i + 1] for i in range(len(data))]
        cuts = sorted(rng.randint(1, len(data) - 1) for _ in range(rng.randint(1, 4)))
        return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)])]


@dataclass
class Parts:
    """A request before it is written: its field `lines` without the framing of `body`."""

    method: bytes
    target: bytes
    version: bytes
    lines: list[bytes]
    body: bytes
    chunked: bool = False
    length: bytes | None = None  # the Content-Length as sent, when not the body's

    def written(self, corpus: Corpus) -> bytes:
        lines = self.lines
        body = self.body
        if self.chunked:
            lines.append(corpus._line(b"Transfer-Encoding", b"chunked"))
            cut = corpus.rng.randint(0, len(body))
            chunks = [piece for piece in (body[:cut], body[cut:]) if piece]
            body = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n"
        elif body or self.length is not None or corpus.random() < 0.1:
            length = str(len(body)).encode() if self.length is None else self.length
            at = int(corpus.random() * (len(lines) + 1))
            lines.insert(at, corpus._line(b"Content-Length", length))
        if lines and corpus.random() < 0.5:  # Host not always first
            lines.insert(int(corpus.random() * len(lines)), lines.pop())
        line = self.method + b" " + self.target + b" " + self.version
        return b"\r\n".join([line, *lines, b"", b""]) + body


def streams(seed: int, requests: int) -> list[Stream]:
    """Streams of `requests` generated requests in all, 1 to 4 to a stream, a third mutated."""
    corpus = Corpus(seed)
    out: list[Stream] = []
    made = 0
    while made < requests:
        made_here = [corpus.request() for _ in range(corpus.pick([1, 1, 1, 2, 2, 3, 4]))]
        data = b"".join(data for data, _ in made_here)
        mutated = corpus.random() < 0.33
        if mutated:
            data = corpus.mutate(data)
        odd = sum(odd for _, odd in made_here)
        out.append(Stream(corpus.pieces(data), len(made_here), odd, mutated))
        made += len(made_here)
    return out
