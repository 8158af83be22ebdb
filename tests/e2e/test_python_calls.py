"""`@python` functions through `svcc run` over real sockets (tests/e2e/programs/python_calls.svc,
standard library functions only): a blocking call past the processing limit is a 504 while the
server answers others, and its thread is logged when the request gives up and when it ends;
an exception is the declared kind's status; a result of the wrong type is a 500 whose log
names the declaration. The in-process tests of the boundary are
tests/runtime/lib/test_python_calls.py."""

from __future__ import annotations

import threading
import time
from urllib.parse import quote

import pytest

from tests.helpers.svc_process import REPO, start


PROGRAM = REPO / "tests" / "e2e" / "programs" / "python_calls.svc"
DECLARED_NAP = f"python function nap ({PROGRAM}:6, time.sleep)"


@pytest.fixture(scope="module")
def server():
    proc = start([str(PROGRAM)])
    yield proc
    assert proc.stop() == 0


def test_a_blocking_call_past_the_limit_is_504_and_the_server_stays_healthy(server):
    answers = {}

    def hang():
        answers["nap"] = server.request("GET", "/nap?seconds=3.5")
    caller = threading.Thread(target=hang)
    started = time.monotonic()
    caller.start()
    time.sleep(0.5)
    hello = server.request("GET", "/hello")  # answered while the thread sleeps
    assert (hello.status, hello.json()) == (200, "hello")
    assert time.monotonic() - started < 1.5
    caller.join(10)
    assert answers["nap"].status == 504
    assert answers["nap"].json() == {"error": "request timed out"}
    log = server.log(until="finished after")
    assert (f"GET /nap?seconds=3.5: {DECLARED_NAP} was still running when its request gave "
            "up; its thread is left to finish request_id=") in log
    assert f"GET /nap?seconds=3.5: {DECLARED_NAP} finished after 3.5" in log
    assert server.request("GET", "/nap?seconds=0.01").json() == "rested"


def test_an_exception_is_the_declared_kind_with_its_message(server):
    r = server.request("GET", "/counts?text=" + quote("{not json"))
    assert r.status == 400
    assert r.json() == {"error": "Expecting property name enclosed in double quotes: line 1 "
                                 "column 2 (char 1)"}
    ok = server.request("GET", "/counts?text=" + quote('{"a": 1}'))
    assert (ok.status, ok.json()) == (200, {"a": 1})


def test_a_result_of_the_wrong_type_is_a_500_and_the_log_names_the_declaration(server):
    r = server.request("GET", "/number?text=" + quote('"seven"'))
    assert (r.status, r.json()) == (500, {"error": "internal error"})
    log = server.log(until="parse_number")
    line = next(line for line in log.splitlines() if "python function parse_number" in line)
    assert line.startswith('GET /number?text=%22seven%22: internal error: python function '
                           f'parse_number ({PROGRAM}:12, json.loads) returned a value '
                           'that is not of its declared type: Expected `int`, got `str` '
                           "(got str 'seven')")
    assert "seven" not in r.body.decode()
