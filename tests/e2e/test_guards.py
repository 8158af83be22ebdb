"""Guards over real HTTP, with the compiled runtime and with SVC_NATIVE=0: a guard's Ok value
reaches the handler, its Err answers at once (the handler does not run, nothing is stored),
several guards run in order, a prefix guard covers the prefix and the paths under it but not
a sibling that only starts with the same letters, a guard reads the Db, a guard that faults
is a logged 500; `svcc routes` prints them, `svcc openapi` lists the security scheme and the
guards' errors, `svcc test` runs them through test_request, and a program that breaks a
guard rule does not compile."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from openapi_spec_validator import validate
from tests.helpers.openapi_check import Exchange, exchange_problems
from tests.helpers.svc_process import run_to_end, start

PROGRAM = Path(__file__).with_name("programs") / "guards" / "guards.svc"
ROOT = "Bearer root-token"
ADA = "Bearer ada-token"


@pytest.fixture(scope="module", params=["compiled", "pure"])
def server(request):
    env = {"SVC_NATIVE": "0"} if request.param == "pure" else {}
    server = start([str(PROGRAM)], env=env)
    yield server
    assert server.stop() == 0


def _answer(r) -> tuple[int, object]:
    return r.status, r.json()


def test_guard_value_reaches_the_handler(server):
    r = server.request("GET", "/me", headers={"Authorization": ADA})
    assert _answer(r) == (200, {"id": 2, "name": "ada"})
    r = server.request("GET", "/me", headers={"Authorization": ROOT})
    assert _answer(r) == (200, {"id": 1, "name": "root"})


def test_guard_error_answers_with_its_status_and_message(server):
    assert _answer(server.request("GET", "/me")) == (401, {"error": "sign in first"})
    r = server.request("GET", "/me", headers={"Authorization": "Bearer nope"})
    assert _answer(r) == (401, {"error": "unknown token"})
    r = server.request("GET", "/me", headers={"Authorization": "Basic abc"})
    assert _answer(r) == (401, {"error": "expected a bearer token"})


def test_handler_does_not_run_after_an_error(server):
    refused = server.request("POST", "/notes", {"text": "secret"})
    assert _answer(refused) == (401, {"error": "sign in first"})
    saved = server.request("POST", "/notes", {"text": "mine"}, headers={"Authorization": ADA})
    assert saved.status == 200
    note = saved.json()
    assert note["text"] == "mine" and note["by"] == "ada"
    # the refused note was never inserted: the next id follows the accepted one directly
    again = server.request("POST", "/notes", {"text": "two"}, headers={"Authorization": ROOT})
    assert again.json() == {"id": note["id"] + 1, "text": "two", "by": "root"}


def test_guards_run_in_declaration_order(server):
    neither = server.request("GET", "/ordered")
    assert _answer(neither) == (401, {"error": "first guard"})
    second_only = server.request("GET", "/ordered", headers={"X-Second": "1"})
    assert _answer(second_only) == (401, {"error": "first guard"})
    first_only = server.request("GET", "/ordered", headers={"X-First": "1"})
    assert _answer(first_only) == (403, {"error": "second guard"})
    both = server.request("GET", "/ordered", headers={"X-First": "1", "X-Second": "1"})
    assert _answer(both) == (200, "both passed")


def test_prefix_guard_covers_the_prefix_and_below_not_siblings(server):
    assert _answer(server.request("GET", "/admin")) == (401, {"error": "sign in first"})
    r = server.request("GET", "/admin", headers={"Authorization": ADA})
    assert _answer(r) == (403, {"error": "ada is not an admin"})
    r = server.request("GET", "/admin", headers={"Authorization": ROOT})
    assert _answer(r) == (200, "hello, root")
    r = server.request("GET", "/admin/stats/7", headers={"Authorization": ADA})
    assert r.status == 403
    r = server.request("GET", "/admin/stats/7", headers={"Authorization": ROOT})
    assert _answer(r) == (200, "day 7 for root (1)")
    # a bad path value is still a 400 from binding, after nothing ran
    assert server.request("GET", "/admin/stats/x", headers={"Authorization": ROOT}).status == 400
    assert _answer(server.request("GET", "/administrator")) == (200, "open to all")
    assert _answer(server.request("GET", "/open")) == (200, "open")


def test_guard_fault_is_a_logged_500(server):
    r = server.request("GET", "/crashy", headers={"X-Divisor": "0"})
    assert _answer(r) == (500, {"error": "internal error"})
    log = server.log(until="SvcFault: division by zero")
    assert "GET /crashy: internal error" in log
    # the fault's details for the operator point at the guard's own line
    assert re.search(r'guards\.svc", line \d+, in crashy\n', log), log
    assert _answer(server.request("GET", "/crashy", headers={"X-Divisor": "2"})) == (
        200, "no fault")
    r = server.request("GET", "/crashy", headers={"X-Divisor": "two"})
    assert r.status == 400  # parse_i64's Err, passed on by `try`: the guard's answer


def test_svcc_routes_prints_the_guards_in_order():
    result = run_to_end(["routes", str(PROGRAM)])
    assert result.returncode == 0, result.stderr
    rows = [re.split(r"\s{2,}", line.strip()) for line in result.stdout.splitlines()]
    assert rows[0] == ["METHOD", "PATH", "HANDLER", "GUARDS"]
    table = {(r[0], r[1]): r[2:] for r in rows[1:]}
    assert table[("GET", "/health")] == ["(built-in)", "-"]
    assert table[("GET", "/me")] == ["me", "require_user"]
    assert table[("GET", "/ordered")] == ["ordered", "first_check, second_check"]
    assert table[("GET", "/admin/stats/{day}")] == [
        "stats", "require_user (prefix /admin), require_admin (prefix /admin)"]
    assert table[("GET", "/administrator")] == ["not_admin", "-"]


def test_svcc_routes_on_a_bad_program_gives_diagnostics(tmp_path):
    bad = tmp_path / "bad.svc"
    bad.write_text('guard("/nowhere", nobody)\n\nasync def main() -> Result[unit, Error]:\n'
                   '    return ok(())\n')
    result = run_to_end(["routes", str(bad)])
    assert result.returncode == 1 and result.stdout == ""
    assert "unknown guard 'nobody'" in result.stderr and "bad.svc:1:" in result.stderr
    assert "Traceback" not in result.stderr


def test_openapi_lists_the_security_scheme_and_guard_errors():
    result = run_to_end(["openapi", str(PROGRAM)])
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    validate(document)
    schemes = document["components"]["securitySchemes"]
    assert schemes["bearer"] == {"type": "http", "scheme": "bearer"}
    me = document["paths"]["/me"]["get"]
    assert me["security"] == [{"bearer": []}]
    assert "401" in me["responses"] and "403" not in me["responses"]
    stats = document["paths"]["/admin/stats/{day}"]["get"]
    assert stats["security"] == [{"bearer": []}]
    assert {"401", "403"} <= set(stats["responses"])
    assert [p["name"] for p in stats["parameters"]] == ["day"]  # no Headers, no Db, no User
    assert "security" not in document["paths"]["/administrator"]["get"]
    assert "security" not in document["paths"]["/crashy"]["get"]  # never answers 401


@pytest.mark.parametrize("native", ["1", "0"])
def test_svcc_test_runs_the_guards_through_test_request(native):
    result = run_to_end(["test", str(PROGRAM)], env={"SVC_NATIVE": native})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 passed, 0 failed" in result.stdout


def test_a_handler_asking_for_an_unguarded_value_does_not_compile(tmp_path):
    source = PROGRAM.read_text().replace('@get("/administrator")\nasync def not_admin()',
                                         '@get("/administrator")\nasync def not_admin(a: Admin)')
    program = tmp_path / "guards.svc"
    program.write_text(source)
    result = run_to_end(["check", str(program)])
    assert result.returncode == 1
    assert ("handler 'not_admin' takes 'a: Admin', the value of guard 'require_admin', but no "
            "guard applies to GET /administrator") in result.stderr
    assert "Traceback" not in result.stderr


def test_svcc_routes_of_a_project_without_the_demo_routes(tmp_path):
    (tmp_path / "svc.toml").write_text('name = "api"\nentry = "api.svc"\n\n[server]\n'
                                       "demo_routes = false\n")
    (tmp_path / "api.svc").write_text(
        'from "auth.svc" import Key, has_key\n\nguard("/", has_key)\n\n'
        '@get("/items/{id}")\nasync def item(id: i64, key: Key) -> Result[str, Error]:\n'
        '    return ok(key.name)\n\nasync def main() -> Result[unit, Error]:\n    return ok(())\n')
    (tmp_path / "auth.svc").write_text(
        "class Key:\n    name: str\n\ndef has_key(h: Headers) -> Result[Key, Error]:\n"
        '    match header(h, "x-api-key"):\n        case Some(k): return ok(Key(name=k))\n'
        '        case None: return unauthorized("no key")\n')
    result = run_to_end(["routes", "--project", str(tmp_path)])
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "METHOD  PATH         HANDLER     GUARDS",
        "GET     /health      (built-in)  -",
        "GET     /ready       (built-in)  -",
        "GET     /items/{id}  item        has_key (prefix /)"]
    document = json.loads(run_to_end(["openapi", "--project", str(tmp_path)]).stdout)
    assert document["components"]["securitySchemes"] == {
        "header_x-api-key": {"type": "apiKey", "in": "header", "name": "x-api-key"}}
    assert document["paths"]["/items/{id}"]["get"]["security"] == [{"header_x-api-key": []}]
    assert "security" not in document["paths"]["/health"]["get"]


#: Requests whose answers (guards' errors and handlers' values) must validate against the
#: program's OpenAPI document: method, target, request header fields, JSON body.
TRAFFIC = [
    ("GET", "/me", {}, None), ("GET", "/me", {"authorization": ADA}, None),
    ("GET", "/me", {"authorization": "Bearer nope"}, None),
    ("POST", "/notes", {}, {"text": "x"}),
    ("POST", "/notes", {"authorization": ROOT}, {"text": "y"}),
    ("GET", "/ordered", {}, None), ("GET", "/ordered", {"x-first": "1"}, None),
    ("GET", "/ordered", {"x-first": "1", "x-second": "1"}, None),
    ("GET", "/admin", {"authorization": ADA}, None),
    ("GET", "/admin", {"authorization": ROOT}, None),
    ("GET", "/admin/stats/3", {"authorization": ROOT}, None), ("GET", "/administrator", {}, None),
    ("GET", "/crashy", {"x-divisor": "0"}, None),
]


def test_guarded_traffic_validates_against_the_openapi_document(server):
    document = json.loads(run_to_end(["openapi", str(PROGRAM)]).stdout)
    exchanges = []
    for method, target, headers, body in TRAFFIC:
        sent = dict(headers)
        raw = None
        if body is not None:
            raw = json.dumps(body).encode()
            sent["content-type"] = "application/json"
        r = server.request(method, target, raw=raw, headers=sent)
        exchanges.append(Exchange(method, target, sent, raw, r.status, r.headers, r.body))
    assert sorted({e.status for e in exchanges}) == [200, 401, 403, 500]
    assert exchange_problems(document, exchanges) == []
