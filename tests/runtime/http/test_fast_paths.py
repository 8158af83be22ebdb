"""The shortcuts taken on hot request paths keep every rule they stand in for.

Content-Type and Content-Length live in slots of the parser (not a per-request dict); the HTTP
version is checked only when a request could carry one we refuse; the collector is settled
before serving; a Response's header names are checked in full once. (The binder made for each route: test_route_binders.py.)
"""

from __future__ import annotations

import gc

import pytest

from svc.rules.contract import BODY_LIMIT
from svc.runtime.http import custom_response
from svc.runtime.http.protocol import HttpConnection, Reject, Request
from svc.runtime.http.server import GEN0_THRESHOLD, settle_collector
from svc.runtime.lib.support import SvcFault

# Its subject is the compiled request path: `make test` runs it again on the pure-Python modules.
pytestmark = pytest.mark.compiled_path


def test_content_type_and_length_belong_to_their_own_request():
    conn = HttpConnection()
    events = conn.feed(b"POST /a HTTP/1.1\r\nHost: t\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi"
                       b"GET /b HTTP/1.1\r\nHost: t\r\n\r\n"
                       b"POST /c HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n\r\nx")
    assert [(e.__class__, e.path, e.content_type, e.body) for e in events] == [
        (Request, "/a", b"text/plain", b"hi"), (Request, "/b", None, b""), (Request, "/c", None, b"x")]


def test_the_last_content_type_counts_and_a_second_length_is_refused():
    [req] = HttpConnection().feed(b"POST /a HTTP/1.1\r\nHost: t\r\nContent-Type: text/plain\r\n"
                                  b"content-type: application/json\r\nContent-Length: 2\r\n\r\n{}")
    assert req.content_type == b"application/json"
    [reject] = HttpConnection().feed(b"POST /a HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n"
                                     b"content-length: 2\r\n\r\n{}")
    assert (reject.__class__, reject.status) == (Reject, 400)
    assert "duplicate content-length" in reject.reason.lower()


def test_a_body_over_the_limit_is_refused_from_its_length_alone():
    head = f"POST /a HTTP/1.1\r\nHost: t\r\nContent-Length: {BODY_LIMIT + 1}\r\n\r\n".encode()
    [reject] = HttpConnection().feed(head)
    assert (reject.status, reject.reason) == (413, "request body too large")
    [req] = HttpConnection().feed(f"POST /a HTTP/1.1\r\nHost: t\r\nContent-Length: {BODY_LIMIT}\r\n\r\n".encode()
                                  + b"x" * BODY_LIMIT)
    assert len(req.body) == BODY_LIMIT


@pytest.mark.parametrize("version", [b"HTTP/2.0", b"HTTP/0.9"])
def test_a_post_of_an_unsupported_version_is_still_refused(version):
    events = HttpConnection().feed(b"POST /a " + version + b"\r\nContent-Type: application/json\r\n"
                                   b"Content-Length: 2\r\n\r\n{}")
    assert [(e.__class__, e.status) for e in events] == [(Reject, 400)]


def test_http_1_0_post_keeps_its_framing_and_closes():
    [req] = HttpConnection().feed(b"POST /a HTTP/1.0\r\nContent-Type: application/json\r\n"
                                  b"Content-Length: 2\r\n\r\n{}")
    assert (req.body, req.content_type, req.keep_alive) == (b"{}", b"application/json", False)


def test_settling_the_collector_freezes_and_raises_the_young_threshold():
    before = gc.get_threshold()
    try:
        garbage = []
        garbage.append(garbage)  # a cycle, unreachable once `del`eted
        del garbage
        settle_collector()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold()[0] >= GEN0_THRESHOLD
        assert gc.get_threshold()[1:] == before[1:]
        cycle = []
        cycle.append(cycle)
        del cycle
        assert gc.collect() >= 1  # cycles made after it are still collected
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_a_header_name_accepted_once_still_gets_every_value_checked():
    r = custom_response.respond(200, None)
    for _ in range(2):
        custom_response.set_header(r, "X-Trace", "one")
        for bad in ("a\rb", "a\nb", "a\0b"):
            with pytest.raises(SvcFault, match="set_header: header value"):
                custom_response.set_header(r, "X-Trace", bad)
            with pytest.raises(SvcFault, match="add_header: header value"):
                custom_response.add_header(r, "X-Trace", bad)
    assert r.fields == [("X-Trace", "one")]
    for refused in ("Content-Length", "Bad Name"):
        for _ in range(2):
            with pytest.raises(SvcFault):
                custom_response.add_header(r, refused, "1")
    assert "Content-Length" not in custom_response._ACCEPTED_NAMES


def test_the_memory_of_accepted_header_names_is_bounded():
    r = custom_response.respond(200, None)
    for n in range(2 * custom_response._ACCEPTED_KEPT):
        custom_response.add_header(r, f"X-N{n}", "v")
    assert len(custom_response._ACCEPTED_NAMES) <= custom_response._ACCEPTED_KEPT
    assert len(r.fields) == 2 * custom_response._ACCEPTED_KEPT
