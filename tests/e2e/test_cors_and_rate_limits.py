"""svc.toml's `[cors]` and `[rate_limit]` through real `svcc run` processes: preflights allowed
and refused, the fields of ordinary answers, credentials and max-age, 429 with Retry-After
once a client's burst is spent, buckets that refill, /health and /ready never limited, one
limit across `SVC_WORKERS`, X-Forwarded-For only when configured, and a bad table refused at
start naming its key."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.helpers.svc_process import run_to_end, start

# Its subject is the compiled request path: `make test` runs it again on the pure-Python modules.
pytestmark = pytest.mark.compiled_path

PROGRAM = """\
class Note:
    text: str

@post("/notes")
async def add(note: Note) -> Result[Note, Error]:
    return ok(note)

@get("/notes")
async def notes() -> Result[List[Note], Error]:
    return ok([Note(text="first")])

async def main() -> Result[unit, Error]:
    db = try await db_open("notes.sqlite")
    return await serve(db, try parse_i64(env("SVC_PORT", "8080")))
"""

APP = "http://app.example:8000"
CORS = f"""\
[cors]
allow_origins = ["{APP}"]
allow_methods = ["GET", "POST"]
allow_headers = ["Content-Type", "X-Trace"]
expose_headers = ["X-Total"]
allow_credentials = true
max_age = 600
"""


def serve(folder: Path, toml: str, env: dict[str, str] | None = None):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "main.svc").write_text(PROGRAM)
    (folder / "svc.toml").write_text('entry = "main.svc"\n' + toml)
    return start(["--project", str(folder)], env=env, cwd=folder)


def preflight(server, path: str, origin: str, method: str, headers: str | None = None):
    asked = {"Origin": origin, "Access-Control-Request-Method": method}
    if headers is not None:
        asked["Access-Control-Request-Headers"] = headers
    return server.request("OPTIONS", path, headers=asked)


def cors_fields(response) -> dict[str, str]:
    return {k: v for k, v in response.headers.items() if k.startswith("access-control-")}


def test_preflights_are_answered_by_the_server(tmp_path: Path) -> None:
    server = serve(tmp_path, CORS)
    try:
        ok = preflight(server, "/notes", APP, "POST", "content-type,x-trace")
        assert ok.status == 204 and ok.body == b""
        assert "content-length" not in ok.headers
        assert cors_fields(ok) == {
            "access-control-allow-origin": APP,
            "access-control-allow-methods": "POST",
            "access-control-allow-headers": "content-type, x-trace",
            "access-control-allow-credentials": "true",
            "access-control-max-age": "600",
        }
        assert "Origin" in ok.headers["vary"]
        refusals = [
            (preflight(server, "/notes", "http://evil.example", "POST"),
             "CORS: the origin http://evil.example is not allowed"),
            (preflight(server, "/notes", APP, "POST", "content-type,authorization"),
             "CORS: the header authorization is not allowed"),
            (preflight(server, "/notes", APP, "PUT"), None),  # no route: 405, no CORS
        ]
        for response, reason in refusals:
            assert cors_fields(response) == {}, response.headers
            if reason is not None:
                assert response.status == 403 and response.json() == {"error": reason}
        assert refusals[2][0].status == 405
        assert preflight(server, "/nowhere", APP, "GET").status == 404
        # OPTIONS without Access-Control-Request-Method is not a preflight
        plain = server.request("OPTIONS", "/notes", headers={"Origin": APP})
        assert plain.status != 204 or "access-control-allow-methods" not in plain.headers
    finally:
        server.stop()
    assert "OPTIONS /notes 204" in "".join(server.stderr)


def test_answers_carry_the_fields_for_allowed_origins_only(tmp_path: Path) -> None:
    server = serve(tmp_path, CORS)
    try:
        allowed = server.request("POST", "/notes", {"text": "hi"}, headers={"Origin": APP})
        assert allowed.status == 200 and allowed.json() == {"text": "hi"}
        assert cors_fields(allowed) == {"access-control-allow-origin": APP,
                                        "access-control-allow-credentials": "true",
                                        "access-control-expose-headers": "X-Total"}
        assert allowed.headers["vary"] == "Origin"
        # another origin is served (CORS is the browser's to enforce) without the fields
        other = server.request("GET", "/notes", headers={"Origin": "http://evil.example"})
        assert other.status == 200 and cors_fields(other) == {}
        assert other.headers["vary"] == "Origin"
        # errors carry them too, so that a page can read them
        bad = server.request("POST", "/notes", raw=b"{", headers={
            "Origin": APP, "Content-Type": "application/json"})
        assert bad.status == 400 and bad.headers["access-control-allow-origin"] == APP
        health = server.request("GET", "/health", headers={"Origin": APP})
        assert health.status == 200 and health.headers["access-control-allow-origin"] == APP
    finally:
        server.stop()


def test_any_origin_is_a_star_and_without_cors_nothing_is_added(tmp_path: Path) -> None:
    server = serve(tmp_path / "star", '[cors]\nallow_origins = ["*"]\nallow_headers = ["*"]\n')
    try:
        answer = server.request("GET", "/notes", headers={"Origin": "http://x.example"})
        assert cors_fields(answer) == {"access-control-allow-origin": "*"}
        ok = preflight(server, "/notes", "http://y.example", "POST", "x-anything")
        assert ok.status == 204
        assert ok.headers["access-control-allow-origin"] == "*"
        assert ok.headers["access-control-allow-headers"] == "x-anything"
    finally:
        server.stop()
    server = serve(tmp_path / "none", "")
    try:
        asked = preflight(server, "/notes", APP, "POST", "content-type")
        assert cors_fields(asked) == {} and asked.status != 204 or \
            "access-control-allow-origin" not in asked.headers
        answer = server.request("GET", "/notes", headers={"Origin": APP})
        assert cors_fields(answer) == {} and "vary" not in answer.headers
    finally:
        server.stop()


LIMIT = "[rate_limit]\nrequests_per_second = 2.0\nburst = 3\n"


def test_a_client_over_its_burst_gets_429_with_retry_after_and_its_bucket_refills(
        tmp_path: Path) -> None:
    server = serve(tmp_path, LIMIT)
    try:
        statuses = [server.request("GET", "/notes").status for _ in range(3)]
        assert statuses == [200, 200, 200]
        refused = server.request("GET", "/notes")
        assert refused.status == 429
        assert refused.json() == {"error": "too many requests"}
        assert refused.headers["retry-after"] == "1"
        # probes are never limited, and do not spend the budget
        assert all(server.request("GET", path).status == 200
                   for path in ("/health", "/ready") for _ in range(5))
        time.sleep(0.6)  # a token back at 2 per second
        assert server.request("GET", "/notes").status == 200
        assert server.request("GET", "/notes").status == 429
        time.sleep(1.6)  # three back: the whole burst
        assert [server.request("GET", "/notes").status for _ in range(4)] == \
            [200, 200, 200, 429]
    finally:
        server.stop()
    assert "GET /notes 429" in "".join(server.stderr)


def test_retry_after_rounds_the_wait_up(tmp_path: Path) -> None:
    server = serve(tmp_path, "[rate_limit]\nrequests_per_second = 0.25\nburst = 1\n")
    try:
        assert server.request("GET", "/notes").status == 200
        refused = server.request("GET", "/notes")
        assert refused.status == 429 and refused.headers["retry-after"] == "4"
    finally:
        server.stop()


def test_the_limit_holds_across_workers(tmp_path: Path) -> None:
    """Each request comes on a new connection, which the kernel hands to any worker (by a hash
    of the address and port): the client still gets exactly its burst."""
    server = serve(tmp_path, "[rate_limit]\nrequests_per_second = 0.01\nburst = 6\n",
                   env={"SVC_WORKERS": "2"})
    try:
        statuses = [server.request("GET", "/notes").status for _ in range(20)]
        assert statuses == [200] * 6 + [429] * 14
    finally:
        server.stop()


def test_x_forwarded_for_counts_only_when_configured(tmp_path: Path) -> None:
    def spend(server, forwarded: str) -> list[int]:
        return [server.request("GET", "/notes", headers={"X-Forwarded-For": forwarded}).status
                for _ in range(3)]

    limit = "[rate_limit]\nrequests_per_second = 0.01\nburst = 2\n"
    server = serve(tmp_path / "peer", limit)
    try:  # not configured: the header is the client's word, and ignored
        assert spend(server, "10.0.0.1") == [200, 200, 429]
        assert spend(server, "10.0.0.2") == [429, 429, 429]
    finally:
        server.stop()
    server = serve(tmp_path / "proxy", limit + 'client = "x-forwarded-for"\n')
    try:  # the last address is the one the proxy appended
        assert spend(server, "10.0.0.1") == [200, 200, 429]
        assert spend(server, "10.0.0.2") == [200, 200, 429]
        assert spend(server, "6.6.6.6, 10.0.0.1") == [429, 429, 429]
    finally:
        server.stop()


def test_a_preflight_over_the_limit_is_429_with_cors_fields(tmp_path: Path) -> None:
    server = serve(tmp_path, CORS + "[rate_limit]\nrequests_per_second = 0.01\nburst = 1\n")
    try:
        assert preflight(server, "/notes", APP, "POST").status == 204
        refused = server.request("POST", "/notes", {"text": "x"}, headers={"Origin": APP})
        assert refused.status == 429
        assert refused.headers["access-control-allow-origin"] == APP  # the page can read it
    finally:
        server.stop()


def test_a_bad_table_stops_run_check_and_build_naming_the_key(tmp_path: Path) -> None:
    (tmp_path / "main.svc").write_text(PROGRAM)
    (tmp_path / "svc.toml").write_text('entry = "main.svc"\n[rate_limit]\n'
                                       'requests_per_second = 5\nburst = "ten"\n')
    for command in ("run", "check"):
        done = run_to_end([command, "--project", str(tmp_path)])
        assert done.returncode != 0
        assert "'burst' in svc.toml [rate_limit] must be a whole number" in done.stderr
        assert "svc.toml:4:1" in done.stderr
        assert "Traceback" not in done.stderr



GUARDED = """\
class User:
    name: str

def require_user(h: Headers) -> Result[User, Error]:
    match header(h, "x-user"):
        case Some(name): return ok(User(name=name))
        case None: return unauthorized("who are you?")

def require_header(h: Headers) -> Result[unit, Error]:
    return ok(())

@guard(require_user)
@get("/me")
async def me(user: User) -> Result[User, Error]:
    return ok(user)

@guard(require_header)
@get("/open")
async def open_route() -> Result[str, Error]:
    return ok("open")

async def main() -> Result[unit, Error]:
    db = try await db_open("users.sqlite")
    return await serve(db, try parse_i64(env("SVC_PORT", "8080")))
"""

PER_USER = "[guard_limits.require_user]\nrequests_per_second = 0.01\nburst = 2\n"


def serve_guarded(folder: Path, toml: str, env: dict[str, str] | None = None):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "main.svc").write_text(GUARDED)
    (folder / "svc.toml").write_text('entry = "main.svc"\n' + toml)
    return start(["--project", str(folder)], env=env, cwd=folder)


def test_a_limit_per_guard_value_is_a_limit_per_user(tmp_path: Path) -> None:
    server = serve_guarded(tmp_path, PER_USER)
    try:
        def as_user(name: str):
            return server.request("GET", "/me", headers={"X-User": name})

        assert [as_user("ada").status for _ in range(2)] == [200, 200]
        refused = as_user("ada")
        assert refused.status == 429 and refused.json() == {"error": "too many requests"}
        assert refused.headers["retry-after"] == "100"  # one token at 0.01/s
        # another user from the same address has a bucket of their own
        assert [as_user("bob").status for _ in range(3)] == [200, 200, 429]
        # a request the guard refuses spends nothing; other routes are not limited
        assert server.request("GET", "/me").status == 401
        assert all(server.request("GET", "/open").status == 200 for _ in range(5))
    finally:
        server.stop()


def test_guard_limits_hold_across_workers(tmp_path: Path) -> None:
    server = serve_guarded(tmp_path, PER_USER.replace("burst = 2", "burst = 5"),
                           env={"SVC_WORKERS": "2"})
    try:
        statuses = [server.request("GET", "/me", headers={"X-User": "ada"}).status
                    for _ in range(12)]
        assert statuses == [200] * 5 + [429] * 7
    finally:
        server.stop()


def test_bad_guard_limits_are_check_errors_naming_the_key(tmp_path: Path) -> None:
    cases = [
        ("[guard_limits.require_usr]\nrequests_per_second = 1.0\nburst = 2\n",
         "svc.toml:2:15: error: 'require_usr' in svc.toml [guard_limits] is not a guard of any "
         "route"),
        ("[guard_limits.require_header]\nrequests_per_second = 1.0\nburst = 2\n",
         "'require_header' in svc.toml [guard_limits] gives no value (its Ok is unit)"),
        ("[guard_limits.require_user]\nrequests_per_second = 1.0\n",
         "svc.toml [guard_limits.require_user] has no 'burst'"),
        ("[guard_limits.require_user]\nrequests_per_second = 1.0\nburst = 2\nclient = \"peer\"\n",
         "'client' in svc.toml [guard_limits.require_user] does not apply"),
        ("[guard_limits]\nrequire_user = 5\n",
         "'require_user' in svc.toml [guard_limits] must be a table named by a guard function"),
    ]
    for index, (toml, expected) in enumerate(cases):
        folder = tmp_path / str(index)
        folder.mkdir()
        (folder / "main.svc").write_text(GUARDED)
        (folder / "svc.toml").write_text('entry = "main.svc"\n' + toml)
        done = run_to_end(["check", "--project", str(folder)])
        assert done.returncode == 1, done.stdout
        shown = done.stdout + done.stderr
        assert expected.split("error: ")[-1] in shown, shown
        if expected.startswith("svc.toml:"):  # where: the guard's name in its header
            assert "--> svc.toml:" + expected.split(":")[1] + ":" + expected.split(":")[2] \
                in shown.replace(str(folder) + "/", ""), shown
        assert "Traceback" not in shown


def test_openapi_lists_429_on_every_route_when_rate_limited(tmp_path: Path) -> None:
    import json

    def document(toml: str, program: str = PROGRAM) -> dict:
        folder = tmp_path / str(len(toml))
        folder.mkdir()
        (folder / "main.svc").write_text(program)
        (folder / "svc.toml").write_text('entry = "main.svc"\n' + toml)
        done = run_to_end(["openapi", "--project", str(folder)])
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    limited = document(LIMIT)
    for method in ("get", "post"):
        responses = limited["paths"]["/notes"][method]["responses"]
        assert responses["429"] == {"$ref": "#/components/responses/TooManyRequests"}
    assert "Retry-After" in limited["components"]["responses"]["TooManyRequests"]["headers"]
    assert "429" not in limited["paths"]["/health"]["get"]["responses"]
    per_user = document(PER_USER, GUARDED)
    assert "429" in per_user["paths"]["/me"]["get"]["responses"]
    assert "429" not in per_user["paths"]["/open"]["get"]["responses"]
    plain = document(CORS)
    assert all("429" not in operation["responses"]
               for item in plain["paths"].values() for operation in item.values()
               if isinstance(operation, dict) and "responses" in operation)
