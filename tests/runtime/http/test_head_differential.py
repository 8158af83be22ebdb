"""The fast path (head.py) against httptools: the same bytes give the same events.

Each stream is fed, in the same pieces, to an `HttpConnection` that starts on the fast path and
to one that runs httptools alone (the reference), and the events must be equal field by field
(a Request's method, path, query, target, header list, body, keep-alive, content type, upgrade
and id; a Reject's status, reason and the request it names; a Continue's fields), and so must
the connections' states after. The streams: every byte string the protocol and server tests
send (head_corpus.hostile_inputs), alone, pipelined and cut into pieces, and a seeded corpus
of 100,000 generated requests (head_corpus.streams). `make test` runs this module on the
compiled modules and again on their pure-Python source, so head.py is compared in both forms.
"""

from __future__ import annotations

from collections import Counter

import pytest

from svc import native
from svc.runtime.http.protocol import Continue, HttpConnection, Reject, Request
from tests.runtime.http import head_corpus
from tests.runtime.http.test_upload_protocol import ROUTER

# Its subject is the compiled request path: `make test` runs it again on the pure-Python modules.
pytestmark = pytest.mark.compiled_path

GET = b"GET /next HTTP/1.1\r\nHost: h\r\n\r\n"
#: The generated corpus: its seed, and how many requests. Pure Python compares a quarter of
#: them: there both connections run interpreted (httptools' callbacks too), 100,000 requests
#: took 16 s where the compiled modules take 5 s, and the compiled pass runs all of them.
SEED = 39
CORPUS_REQUESTS = 100_000


def described(event: object) -> tuple:
    if isinstance(event, Request):
        event.release()
        return ("Request", event.method, event.path, event.query, event.target,
                [tuple(field) for field in event.headers], event.body, event.keep_alive,
                event.content_type, event.upgrade, event.rid, type(event.form).__name__)
    if isinstance(event, Reject):
        return ("Reject", event.status, event.reason, event.method, event.target, event.detail)
    assert isinstance(event, Continue), event
    return ("Continue", event.method, event.path, event.target, event.content_type)


def run(pieces: list[bytes], fast: bool, hook: object = None) -> tuple[list, tuple, HttpConnection]:
    conn = HttpConnection(fast=fast)
    conn.body_hook = hook
    events = [[described(event) for event in conn.feed(piece)] for piece in pieces]
    state = (conn.closed, conn.upgraded, conn.in_body, conn.take_upgrade_data())
    conn.drop_body()
    return events, state, conn


def compare(pieces: list[bytes], hook: object = None) -> HttpConnection:
    """Feed both connections; fail on the first difference; the fast one, for its counts."""
    events, state, conn = run(pieces, True, hook)
    expected_events, expected_state, _ = run(pieces, False, hook)
    assert events == expected_events, pieces
    assert state == expected_state, pieces
    return conn


def _cut(data: bytes, size: int) -> list[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)] or [b""]


def test_the_hostile_inputs_of_the_tests_give_the_same_events():
    inputs = head_corpus.hostile_inputs()
    assert len(inputs) > 400  # the collector still finds the tests' byte strings
    taken = 0
    for data in inputs:
        for stream in (data, GET + data, data + GET, data * 2):
            taken += compare([stream]).fast_taken
            compare(_cut(stream, 7 if len(stream) < 4000 else 4000))
            compare([stream], ROUTER.body_hook)
        if len(data) < 2000:
            compare(_cut(data, 1))
    assert taken > len(inputs)  # and many of them were taken by the fast path


def test_a_generated_corpus_of_requests_gives_the_same_events():
    streams = head_corpus.streams(SEED, CORPUS_REQUESTS)
    assert sum(stream.requests for stream in streams) >= CORPUS_REQUESTS
    counts: Counter[str] = Counter()
    for index, stream in enumerate(streams):
        hook = ROUTER.body_hook if index % 10 == 0 else None
        try:
            conn = compare(stream.pieces, hook)
        except AssertionError:
            pytest.fail(f"stream {index} of head_corpus.streams({SEED}, {CORPUS_REQUESTS}) "
                        f"differs: {b''.join(stream.pieces)!r}")
        kind = "mutated" if stream.mutated else "odd" if stream.odd else "ordinary"
        counts[kind] += stream.requests
        counts[f"{kind}, fast"] += conn.fast_taken
        if kind == "ordinary" and len(stream.pieces) == 1 and hook is None:
            assert conn.fast_taken == stream.requests, b"".join(stream.pieces)
            counts["ordinary, whole"] += stream.requests
    print(f"\nfast path: {dict(counts)}")
    # Every ordinary request fed whole was taken by the fast path (above), and they are many;
    # of the other ordinary ones, those cut in the middle of a head or body were not, nor
    # those that follow them on their connection.
    assert counts["ordinary, whole"] > 0.15 * CORPUS_REQUESTS
    assert counts["ordinary, fast"] > 0.5 * counts["ordinary"]
