"""The outbound HTTP client (http_get, http_send) through `svcc run`, over real sockets on
127.0.0.1: tests/e2e/programs/outbound.svc calling the upstream of tests/helpers/upstream.py
(and its HTTPS twin with a self-signed certificate). No test reaches another host."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from urllib.parse import quote

import pytest

import svc
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.test_logs_and_metrics import scrape
from tests.helpers.svc_process import REPO, free_port, start, svcc
from tests.helpers.upstream import USER, Upstream

PROGRAM = REPO / "tests" / "e2e" / "programs" / "outbound.svc"


@pytest.fixture(scope="module")
def upstream():
    with Upstream() as up:
        yield up


@pytest.fixture(scope="module")
def server(upstream):
    proc = start([str(PROGRAM)], env={"UPSTREAM": upstream.url})
    yield proc
    proc.stop()


def call(server, method: str, path: str, headers: list[str] | None = None, body: str = ""):
    return server.request("POST", "/call", {"method": method, "path": path,
                                            "headers": headers or [], "body": body})


@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "PATCH", "DELETE"])
def test_each_method_sends_its_fields_and_body(server, upstream, method):
    body = "" if method == "GET" else '{"n":1}'
    answer = call(server, method, "/echo?q=1", ["X-Trace: t-1", "Accept: application/json"],
                  body)
    assert answer.status == 200, answer.body
    seen = answer.json()
    assert seen["status"] == 200 and seen["content_type"] == "application/json"
    echoed = json.loads(seen["body"])
    assert echoed["method"] == method and echoed["path"] == "/echo" and echoed["query"] == "q=1"
    assert echoed["headers"]["x-trace"] == "t-1"
    assert echoed["headers"]["accept"] == "application/json"
    assert echoed["headers"]["user-agent"] == f"svc/{svc.__version__}"
    assert echoed["body"] == body
    if body:  # a body without a Content-Type in the headers is sent as JSON
        assert echoed["headers"]["content-type"] == "application/json"
        assert echoed["headers"]["content-length"] == str(len(body))


def test_a_content_type_given_is_kept(server):
    answer = call(server, "POST", "/echo", ["Content-Type: text/plain"], "plain words")
    echoed = json.loads(answer.json()["body"])
    assert echoed["headers"]["content-type"] == "text/plain"
    assert echoed["body"] == "plain words"


def test_a_requests_own_headers_are_passed_on_without_its_framing(server, upstream):
    answer = server.request("POST", "/forward", {"method": "PUT", "path": "", "headers": [],
                                                 "body": "héllo"},
                            headers={"X-Trace": "t-2", "Authorization": "Bearer abc"})
    assert answer.status == 200, answer.body
    echoed = json.loads(answer.json())
    assert echoed["method"] == "PUT" and echoed["body"] == "héllo"
    assert echoed["headers"]["x-trace"] == "t-2"
    assert echoed["headers"]["authorization"] == "Bearer abc"
    assert echoed["headers"]["host"] == f"127.0.0.1:{upstream.port}"
    assert echoed["headers"]["content-length"] == str(len("héllo".encode()))
    assert echoed["headers"]["content-type"] == "application/json"  # the request's own


def test_head_and_options(server):
    head = call(server, "HEAD", "/user").json()
    assert head["status"] == 200 and head["body"] == ""
    options = json.loads(call(server, "OPTIONS", "/echo").json()["body"])
    assert options["method"] == "OPTIONS"


def test_an_error_status_is_an_answer_not_an_error(server):
    seen = call(server, "GET", "/status/503").json()
    assert seen == {"status": 503, "body": "as asked", "location": None,
                    "content_type": "text/plain"}


def test_json_decode_of_the_answer(server):
    answer = server.request("GET", "/user?path=/user")
    assert answer.status == 200 and answer.json() == USER


def test_json_decode_is_strict(server):
    extra = server.request("GET", "/user?path=/user_extra")
    assert extra.status == 400
    assert "admin" in extra.json()["error"]
    wrong = server.request("GET", "/user?path=/user_wrong")
    assert wrong.status == 400
    assert "Expected `int`, got `str`" in wrong.json()["error"] or "id" in wrong.json()["error"]


def test_redirects_are_not_followed(server, upstream):
    before = len(upstream.requests)
    seen = call(server, "GET", "/redirect").json()
    assert seen["status"] == 302 and seen["location"] == "/user"
    assert [r["path"] for r in upstream.requests[before:]] == ["/redirect"]


def test_relayed_answer_has_no_duplicate_framing(server):
    answer = server.request("GET", "/relay?path=/user")
    assert answer.status == 200
    assert json.loads(answer.json()) == USER  # a Response[str] answers its text as JSON


def test_keep_alive_connections_are_reused(server, upstream):
    server.request("GET", "/many/1")  # the pool holds a connection now
    before = upstream.connections
    answer = server.request("GET", "/many/20")
    assert answer.status == 200 and answer.json() == 20 * 200
    for _ in range(5):
        assert server.request("GET", "/many/2").status == 200
    assert upstream.connections - before <= 1


def test_connection_refused_is_502_with_the_reason_in_the_log(server):
    port = free_port()  # nothing listens there
    url = quote(f"http://127.0.0.1:{port}/x?key=secret", safe="")
    kind = server.request("GET", f"/kind?url={url}")
    assert kind.json() == "bad_gateway: the upstream service failed"
    log = server.log(until=f"outbound GET http://127.0.0.1:{port}/x bad_gateway")
    assert re.search(rf"GET /kind\?url=\S+: outbound GET http://127\.0\.0\.1:{port}/x: "
                     r"bad_gateway error: cannot connect: .*request_id=", log), log
    outbound = [line for line in log.splitlines() if "outbound" in line]
    assert outbound and not any("secret" in line.partition("outbound")[2] for line in outbound)


def test_a_failed_call_returned_answers_502(upstream):
    proc = start([str(PROGRAM)], env={"UPSTREAM": f"http://127.0.0.1:{free_port()}"})
    try:
        answer = proc.request("GET", "/user?path=/user")
        assert answer.status == 502
        assert answer.json() == {"error": "the upstream service failed"}
        log = proc.log(until="GET /user?path=/user 502")
        # one line about the failure, where the call failed: not a second one for the
        # answer (the error carries the cause along for a job's last_error)
        assert log.count("cannot connect") == 1 and "bad_gateway error: cannot connect" in log, log
    finally:
        proc.stop()


def test_an_upstream_that_never_answers_is_504_within_the_limit(server):
    started = time.monotonic()
    answer = server.request("GET", "/relay?path=/never")
    elapsed = time.monotonic() - started
    assert answer.status == 504
    assert answer.json() == {"error": "the upstream service did not answer in time"}
    assert elapsed < 2.0  # the processing limit is 2 s; the call gave up before it
    log = server.log(until="GET /relay?path=/never 504")
    assert re.search(r"outbound GET http://127\.0\.0\.1:\d+/never: timeout error: no answer "
                     r"within 1\.\d\d s \(the request's remaining processing time\)", log), log


@pytest.mark.parametrize("path,reason", [
    ("/declared_big", "the answer's Content-Length 10485761 is over the limit of 10485760 bytes"),
    ("/chunked_big", "the answer is over the limit of 10485760 bytes"),
    ("/gzip_big", "the answer is over the limit of 10485760 bytes"),
    ("/latin1", "the answer is not UTF-8 text (byte 3)"),
])
def test_a_bad_answer_is_502_with_the_reason_in_the_log(server, path, reason):
    answer = server.request("GET", f"/relay?path={path}")
    assert answer.status == 502
    assert answer.json() == {"error": "the upstream service failed"}
    log = server.log(until=reason)
    assert f"{path}: bad_gateway error: {reason}" in log


def test_the_access_log_has_each_outbound_call(server):
    server.request("GET", "/user?path=/user")
    log = server.log(until="GET /user?path=/user 200")
    assert re.search(r"^outbound GET http://127\.0\.0\.1:\d+/user 200 \d+\.\dms$", log, re.M), log


def test_a_limit_set_in_the_environment(upstream):
    proc = start([str(PROGRAM)], env={"UPSTREAM": upstream.url,
                                      "SVC_HTTP_MAX_ANSWER_BYTES": "10"})
    try:
        assert proc.request("GET", "/user?path=/user").status == 502
        reason = f"the answer's Content-Length {len(json.dumps(USER))} is over the limit of 10"
        assert reason in proc.log(until="over the limit")
        small = proc.request("POST", "/call", {"method": "GET", "path": "/status/200",
                                               "headers": [], "body": ""})
        assert small.status == 200 and small.json()["body"] == "as asked"
    finally:
        proc.stop()


def test_a_bad_limit_in_the_environment_is_a_logged_500(upstream):
    proc = start([str(PROGRAM)], env={"UPSTREAM": upstream.url,
                                      "SVC_HTTP_MAX_ANSWER_BYTES": "lots"})
    try:
        assert proc.request("GET", "/user?path=/user").status == 500
        assert "SVC_HTTP_MAX_ANSWER_BYTES must be a positive integer (got 'lots')" in \
            proc.log(until="SVC_HTTP_MAX_ANSWER_BYTES")
    finally:
        proc.stop()


def test_json_access_lines_for_outbound_calls(upstream):
    proc = start([str(PROGRAM)], env={"UPSTREAM": upstream.url, "SVC_LOG_FORMAT": "json"})
    try:
        answer = proc.request("GET", "/user?path=/user")
        assert answer.status == 200
        lines = [json.loads(line) for line in proc.log(until='"path":"/user"').splitlines()
                 if line.startswith("{")]
        outbound = [line for line in lines if line["message"] == "outbound"]
        request = [line for line in lines if line["message"] == "request"]
        assert len(outbound) == 1 and len(request) == 1
        assert outbound[0]["request_id"] == request[0]["request_id"]
        assert outbound[0]["method"] == "GET" and outbound[0]["status"] == 200
        assert outbound[0]["url"] == f"{upstream.url}/user"
        assert outbound[0]["outcome"] == "ok" and outbound[0]["duration_ms"] > 0
        # a failed call's line has "status": null (issue 35: the key was left out)
        refused = f"http://127.0.0.1:{free_port()}/x"
        assert proc.request("GET", f"/kind?url={quote(refused, safe='')}").status == 200
        failed = [json.loads(line) for line in proc.log(until='"outcome":"bad_gateway"')
                  .splitlines() if line.startswith("{") and '"outcome":"bad_gateway"' in line]
        assert len(failed) == 1 and "status" in failed[0] and failed[0]["status"] is None
    finally:
        proc.stop()


def test_a_computed_method_the_client_does_not_send_is_a_logged_fault(server):
    assert server.request("GET", "/method/PATCH").json() == 200
    answer = server.request("GET", "/method/FETCH")
    assert answer.status == 500 and answer.json() == {"error": "internal error"}
    assert "http_send: the method must be one of GET, HEAD, POST, PUT, PATCH, DELETE, " \
           "OPTIONS (got 'FETCH')" in server.log(until="(got 'FETCH')")


def test_a_quiet_log_keeps_the_failures_details_only(upstream):
    proc = start([str(PROGRAM)], env={"UPSTREAM": upstream.url, "SVC_LOG": "quiet"})
    try:
        assert proc.request("GET", "/user?path=/user").status == 200
        refused = quote(f"http://127.0.0.1:{free_port()}/x", safe="")
        assert proc.request("GET", f"/kind?url={refused}").status == 200
        log = proc.log(until="bad_gateway error: cannot connect")
        assert "bad_gateway error: cannot connect" in log
        assert not re.search(r"^outbound ", log, re.M)  # no access lines, outbound or not
        assert "GET /user" not in log
    finally:
        proc.stop()


# --- TLS ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def self_signed(tmp_path_factory) -> tuple[str, str]:
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return str(cert), str(key)


def test_tls_certificates_are_verified(self_signed, upstream):
    with Upstream(tls=self_signed) as secure:
        proc = start([str(PROGRAM)], env={"UPSTREAM": upstream.url, "TLS_UPSTREAM": secure.url})
        try:
            answer = proc.request("GET", "/tls")
            assert answer.status == 502
            log = proc.log(until="TLS certificate verification failed")
            assert re.search(r"outbound GET https://127\.0\.0\.1:\d+/user: bad_gateway error: "
                             r"TLS certificate verification failed: .*self.signed", log), log
            assert secure.requests == []  # nothing was sent over the unverified connection
        finally:
            proc.stop()


# --- metrics -----------------------------------------------------------------------------------

@pytest.mark.parametrize("workers", ["1", "2"])
def test_outbound_metrics(upstream, workers, tmp_path):
    metrics_port = free_port()
    proc = start([str(PROGRAM)], env={"UPSTREAM": upstream.url,
                                      "SVC_DB": str(tmp_path / "m.sqlite"),
                                      "SVC_METRICS_PORT": str(metrics_port),
                                      "SVC_WORKERS": workers})
    try:
        for _ in range(3):
            assert proc.request("GET", "/user?path=/user").status == 200
        refused = quote(f"http://127.0.0.1:{free_port()}/x", safe="")
        assert proc.request("GET", f"/kind?url={refused}").status == 200
        host = f"127.0.0.1:{upstream.port}"
        ok_key = ("svc_http_client_requests_total",
                  (("host", host), ("method", "GET"), ("outcome", "200")))
        # with two workers each writes its counts once per tick: the calls may have been
        # answered by both, so the scrape is taken again until both workers' counts are in
        deadline = time.monotonic() + 15
        while True:
            found = {}
            for family in text_string_to_metric_families(scrape(metrics_port)[2]):
                for sample in family.samples:
                    found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
            failed = [v for (name, labels), v in found.items()
                      if name == "svc_http_client_requests_total"
                      and ("outcome", "bad_gateway") in labels]
            if (found.get(ok_key) == 3 and failed == [1]) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert found[ok_key] == 3
        assert failed == [1]
        assert found[("svc_http_client_request_duration_seconds_count", (("host", host),))] == 3
    finally:
        proc.stop()


# --- svcc test: stubs, and 127.0.0.1 only ---------------------------------------------------

STUB_TESTS = '''
from "outbound.svc" import user, kind

async def test_a_stub_answers() -> Result[unit, Error]:
    r = respond(200, "{\\"id\\":1,\\"name\\":\\"stub\\"}")
    set_header(r, "Content-Type", "application/json")
    http_stub("GET", "http://users.example/user", r)
    got = try await http_get("http://users.example/user", headers_of([]))
    assert_eq(status(got), 200)
    assert_eq(header(got, "content-type"), "application/json")
    u = try await user("/user")
    assert_eq(u.name, "stub")
    return ok(())

async def test_a_stub_answers_a_handler_through_test_request() -> Result[unit, Error]:
    http_stub("GET", "http://users.example/user", respond(200, "{\\"id\\":2,\\"name\\":\\"b\\"}"))
    db = try await db_open(":memory:")
    r = await test_request(db, "GET", "/user?path=/user", headers_of([]), "")
    assert_eq(status(r), 200)
    assert_eq(body(r), "{\\"id\\":2,\\"name\\":\\"b\\"}")
    return ok(())

async def test_stubs_do_not_carry_over() -> Result[unit, Error]:
    got = await kind("http://users.example/user")
    assert_eq(got, ok("bad_gateway: the upstream service failed"))
    return ok(())

async def test_another_host_is_never_reached() -> Result[unit, Error]:
    got = await kind("http://example.com/")
    assert_eq(got, ok("bad_gateway: the upstream service failed"))
    return ok(())

async def test_a_local_server_is_reached() -> Result[unit, Error]:
    got = try await http_get(env("UPSTREAM", "") + "/user", headers_of([]))
    assert_eq(status(got), 200)
    return ok(())

async def test_a_method_stubbed_is_that_method_only() -> Result[unit, Error]:
    http_stub("POST", "http://users.example/user", respond(201, ""))
    got = await kind("http://users.example/user")
    assert_eq(got, ok("bad_gateway: the upstream service failed"))
    return ok(())
'''


def test_svcc_test_stubs_and_local_servers(tmp_path, upstream):
    (tmp_path / "outbound.svc").write_text(PROGRAM.read_text().replace(
        'env("UPSTREAM", "http://127.0.0.1:9")', '"http://users.example"'))
    (tmp_path / "outbound_test.svc").write_text(STUB_TESTS)
    result = subprocess.run([*svcc(), "test", "outbound.svc"], cwd=tmp_path, text=True,
                            capture_output=True, timeout=120,
                            env={**os.environ, "UPSTREAM": upstream.url})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "6 passed, 0 failed" in result.stdout
    assert "no http_stub answers GET http://example.com/, and a test may call local hosts " \
           "only (127.0.0.1, localhost)" in result.stderr
    assert "Unclosed" not in result.stderr  # every session was closed with its test's loop


# --- svcc openapi --------------------------------------------------------------------------------

def test_openapi_lists_502_for_routes_that_call_out():
    from openapi_spec_validator import validate

    from tests.helpers.openapi_check import openapi_document

    document = openapi_document([str(PROGRAM)])
    validate(document)
    relay = document["paths"]["/relay"]["get"]["responses"]
    assert "502" in relay and "504" in relay
    assert relay["502"] == {"$ref": "#/components/responses/BadGateway"}
    assert "502" not in document["paths"]["/health"]["get"]["responses"]


# --- what a program that never calls out pays: nothing -----------------------------------------

@pytest.mark.parametrize("program,loaded", [
    ("examples/workload/workload.svc", False), ("tests/e2e/programs/outbound.svc", True)])
def test_the_client_library_is_loaded_only_by_programs_that_call_out(program, loaded):
    """The program is loaded and the server module imported, as `svcc run` does before
    serving: aiohttp (and svc.runtime.lib.outbound) are there only for the program that calls."""
    script = ("import sys\nfrom svc import pipeline, runner\nimport svc.runtime.http.server\n"
              f"compiled = pipeline.compile(pipeline.Target(file={str(REPO / program)!r}))\n"
              "runner.load_namespace(compiled.code)\n"
              "print('aiohttp' in sys.modules, 'svc.runtime.lib.outbound' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120, cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(loaded), str(loaded)]
