"""svc.toml's `[route_limits]` and `[proxies]` through real `svcc` processes: a login route
limited per client address, the client told apart through trusted proxies only (a direct
client's X-Forwarded-For never gives it a fresh bucket), one limit across `SVC_WORKERS`,
`[rate_limit]` keyed the same way, and bad tables refused at the key.

Every peer here is 127.0.0.1, so `[proxies] trusted = ["127.0.0.1"]` makes the test client a
proxy, and X-Forwarded-For stands for the clients behind it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.svc_process import run_to_end, start

pytestmark = pytest.mark.compiled_path

PROGRAM = """\
class Login:
    name: str
    password: str

@post("/login")
async def login(body: Login) -> Result[str, Error]:
    if body.password == "right":
        return ok("welcome")
    return unauthorized("wrong password")

@get("/items/{id}")
async def item(id: i64) -> Result[i64, Error]:
    return ok(id)

async def main() -> Result[unit, Error]:
    db = try await db_open("users.sqlite")
    return await serve(db, try parse_i64(env("SVC_PORT", "8080")))
"""

LOGIN_LIMIT = '[route_limits."POST /login"]\nrequests_per_second = 0.01\nburst = 3\n'
PROXIES = '[proxies]\ntrusted = ["127.0.0.1"]\n'
WRONG = {"name": "ada", "password": "wrong"}


def project(folder: Path, toml: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "main.svc").write_text(PROGRAM)
    (folder / "svc.toml").write_text('entry = "main.svc"\n' + toml)
    return folder


def serve(folder: Path, toml: str, env: dict[str, str] | None = None):
    return start(["--project", str(project(folder, toml))], env=env, cwd=folder)


def logins(server, count: int, headers: dict[str, str] | None = None) -> list[int]:
    return [server.request("POST", "/login", WRONG, headers=headers or {}).status
            for _ in range(count)]


def test_a_login_route_is_limited_per_client_behind_trusted_proxies(tmp_path: Path) -> None:
    server = serve(tmp_path, LOGIN_LIMIT + PROXIES)
    try:
        ada = {"X-Forwarded-For": "203.0.113.7"}
        assert logins(server, 3, ada) == [401, 401, 401]
        refused = server.request("POST", "/login", WRONG, headers=ada)
        assert refused.status == 429 and refused.json() == {"error": "too many requests"}
        assert refused.headers["retry-after"] == "100"  # one token at 0.01/s
        # the right password does not get past the limit either: the handler does not run
        right = server.request("POST", "/login", {"name": "ada", "password": "right"},
                               headers=ada)
        assert right.status == 429
        # another client behind the proxy has a bucket of its own
        assert logins(server, 4, {"X-Forwarded-For": "198.51.100.2"}) == [401] * 3 + [429]
        # what the client itself wrote on the left does not make a new client
        spoofed = {"X-Forwarded-For": "6.6.6.6, 203.0.113.7"}
        assert logins(server, 1, spoofed) == [429]
        # Forwarded (RFC 7239) when there is no X-Forwarded-For
        assert logins(server, 4, {"Forwarded": 'for="[2001:db8::1]:4711"'}) == [401] * 3 + [429]
        # the proxy itself (no field) is a client too; other routes are not limited
        assert logins(server, 4) == [401] * 3 + [429]
        assert all(server.request("GET", "/items/1").status == 200 for _ in range(5))
    finally:
        server.stop()
    assert "POST /login 429" in "".join(server.stderr)


def test_without_proxies_a_spoofed_header_gets_no_fresh_bucket(tmp_path: Path) -> None:
    server = serve(tmp_path, LOGIN_LIMIT)
    try:
        assert logins(server, 4, {"X-Forwarded-For": "203.0.113.7"}) == [401] * 3 + [429]
        for spoof in ("198.51.100.2", "10.9.9.9"):
            assert logins(server, 1, {"X-Forwarded-For": spoof}) == [429]
        assert logins(server, 1, {"Forwarded": "for=192.0.2.1"}) == [429]
    finally:
        server.stop()


def test_a_route_limit_holds_across_workers(tmp_path: Path) -> None:
    server = serve(tmp_path, LOGIN_LIMIT.replace("burst = 3", "burst = 5") + PROXIES,
                   env={"SVC_WORKERS": "2"})
    try:
        client = {"X-Forwarded-For": "203.0.113.7"}
        assert logins(server, 12, client) == [401] * 5 + [429] * 7
    finally:
        server.stop()


def test_a_route_limit_keys_on_the_declared_route_and_head_counts_for_get(
        tmp_path: Path) -> None:
    limit = '[route_limits."GET /items/{id}"]\nrequests_per_second = 0.01\nburst = 2\n'
    server = serve(tmp_path, limit)
    try:
        assert server.request("GET", "/items/1").status == 200
        assert server.request("HEAD", "/items/2").status == 200
        refused = server.request("GET", "/items/3")  # another id, the same route
        assert refused.status == 429
        assert logins(server, 2) == [401, 401]  # another route: its own (unlimited) way
    finally:
        server.stop()


def test_rate_limit_with_proxies_keys_on_the_client_address(tmp_path: Path) -> None:
    server = serve(tmp_path, "[rate_limit]\nrequests_per_second = 0.01\nburst = 2\n" + PROXIES)
    try:
        def items(forwarded: str) -> list[int]:
            return [server.request("GET", "/items/1", headers={"X-Forwarded-For": forwarded})
                    .status for _ in range(3)]

        assert items("203.0.113.7") == [200, 200, 429]
        assert items("198.51.100.2") == [200, 200, 429]
        assert items("6.6.6.6, 203.0.113.7") == [429, 429, 429]
    finally:
        server.stop()


def test_bad_tables_are_check_errors_at_their_key(tmp_path: Path) -> None:
    cases = [
        ('[route_limits."POST /logn"]\nrequests_per_second = 1.0\nburst = 2\n', "2:15",
         "'POST /logn' in svc.toml [route_limits] is not a route of the program (a method and "
         "a path exactly as declared, such as @post(\"/login\") → \"POST /login\"); did you "
         "mean 'POST /login'?"),
        ('[route_limits."post /login"]\nrequests_per_second = 1.0\nburst = 2\n', "2:15",
         "'post /login' in svc.toml [route_limits] must name a route as it is declared"),
        ('[route_limits."POST /login"]\nrequests_per_second = 1.0\n', "2:15",
         "svc.toml [route_limits.\"POST /login\"] has no 'burst'"),
        ('[route_limits."POST /login"]\nrequests_per_second = 1.0\nburst = 0\n', "4:1",
         "'burst' in svc.toml [route_limits.\"POST /login\"] must be a whole number"),
        ('[route_limits."POST /login"]\nrequests_per_second = 1.0\nburst = 2\nclient = "peer"\n',
         "5:1", "'client' in svc.toml [route_limits.\"POST /login\"] does not apply"),
        ('[proxies]\ntrusted = ["10.0.0.1/8"]\n', "3:1",
         "a network's address has bits set past its prefix (write 10.0.0.0/8)"),
        ('[proxies]\ntrusted = ["localhost"]\n', "3:1",
         "'trusted' in svc.toml [proxies] holds the string \"localhost\": not an IP address"),
        ('[proxies]\ntrusted = []\n', "3:1", "must name at least one address or network"),
        ('[proxies]\ntrusted = "127.0.0.1"\n', "3:1", "must be an array of addresses"),
        ('[proxies]\ntrust = ["127.0.0.1"]\n', "3:1", "unknown key 'trust' in svc.toml [proxies]"),
        (PROXIES + '[rate_limit]\nrequests_per_second = 1.0\nburst = 2\n'
         'client = "x-forwarded-for"\n', "7:1",
         "'client' in svc.toml [rate_limit] must be left out with [proxies]"),
    ]
    for index, (toml, where, expected) in enumerate(cases):
        folder = project(tmp_path / str(index), toml)
        done = run_to_end(["check", "--project", str(folder)])
        shown = done.stdout + done.stderr
        assert done.returncode == 1, shown
        assert expected in shown, shown
        assert f"svc.toml:{where}" in shown, shown
        assert "Traceback" not in shown


def test_openapi_lists_429_on_the_limited_route_only(tmp_path: Path) -> None:
    folder = project(tmp_path, LOGIN_LIMIT + PROXIES)
    done = run_to_end(["openapi", "--project", str(folder)])
    assert done.returncode == 0, done.stderr
    paths = json.loads(done.stdout)["paths"]
    assert paths["/login"]["post"]["responses"]["429"] == {
        "$ref": "#/components/responses/TooManyRequests"}
    assert "429" not in paths["/items/{id}"]["get"]["responses"]


def test_test_request_applies_route_limits_with_buckets_of_each_test(tmp_path: Path) -> None:
    """As `[rate_limit]` and `[guard_limits]`: a test sees its 429, the next starts full."""
    folder = project(tmp_path, LOGIN_LIMIT.replace("burst = 3", "burst = 2"))
    login = ('    r = await test_request(db, "POST", "/login", headers_of([]), '
             '"{\\"name\\":\\"ada\\",\\"password\\":\\"wrong\\"}")\n')
    (folder / "main_test.svc").write_text(
        "async def test_the_third_login_is_refused() -> Result[unit, Error]:\n"
        '    db = try await db_open(":memory:")\n'
        + (login + "    assert_eq(status(r), 401)\n") * 2
        + login + "    assert_eq(status(r), 429)\n"
        '    assert_eq(header(r, "retry-after"), Some("100"))\n'
        "    return ok(())\n\n"
        "async def test_another_test_starts_with_a_full_bucket() -> Result[unit, Error]:\n"
        '    db = try await db_open(":memory:")\n'
        + login + "    assert_eq(status(r), 401)\n"
        "    return ok(())\n")
    result = run_to_end(["test", "--project", str(folder)], cwd=folder)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed, 0 failed" in result.stdout
