"""The 0.2 error kinds over real HTTP: `unauthorized` 401, `forbidden` 403, `conflict` 409, and
SQLite constraint violations mapped as PostgREST maps them (UNIQUE, PRIMARY KEY and FOREIGN
KEY → 409, NOT NULL and CHECK → 400) with a reason naming the constraint kind only, while the
SQL and SQLite's message go to the server log with the request."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.helpers.svc_process import start

# Its subject is the compiled request path: `make test` runs it again on the pure-Python modules.
pytestmark = pytest.mark.compiled_path

PROGRAM = Path(__file__).with_name("programs") / "error_kinds.svc"


@pytest.fixture(scope="module")
def server():
    server = start([str(PROGRAM)])
    yield server
    assert server.stop() == 0


def _error(r, status) -> str:
    assert r.status == status, (r.status, r.body)
    assert r.headers["content-type"] == "application/json"
    body = r.json()
    assert list(body) == ["error"]
    return body["error"]


def test_unauthorized_forbidden_and_ok(server):
    assert _error(server.request("GET", "/me"), 401) == "missing token"
    assert _error(server.request("GET", "/me?token=nope"), 401) == "bad token"
    assert _error(server.request("GET", "/me?token=guest"), 403) == "guests may not see this"
    r = server.request("GET", "/me?token=admin-token")
    assert (r.status, r.json()) == (200, "hello, admin-token")


def test_unique_violation_is_409_and_loses_nothing(server):
    first = server.request("POST", "/users", {"name": "ada", "age": 36})
    assert first.status == 200 and first.json()["name"] == "ada"
    reason = _error(server.request("POST", "/users", {"name": "ada", "age": 40}), 409)
    assert reason == "conflicts with an existing row"
    log = server.log(until="UNIQUE constraint failed")
    line = next(line for line in log.splitlines() if "UNIQUE constraint failed" in line)
    assert line.startswith("POST /users: conflict error: UNIQUE constraint failed: users.name")
    assert "INSERT INTO users" in line
    # the first row is still there, unchanged, and a new name still works
    assert server.request("POST", "/users", {"name": "bob", "age": 1}).status == 200


def test_primary_key_violation_is_409(server):
    assert server.request("PUT", "/users/100", {"name": "carol", "age": 5}).status == 204
    reason = _error(server.request("PUT", "/users/100", {"name": "dave", "age": 5}), 409)
    assert reason == "conflicts with an existing row"
    assert "users.id" in server.log(until="users.id")


def test_foreign_key_violation_is_409(server):
    user = server.request("POST", "/users", {"name": "erin", "age": 2}).json()
    assert server.request("POST", "/posts", {"user_id": user["id"], "title": "t"}).status == 204
    reason = _error(server.request("POST", "/posts", {"user_id": 999, "title": "t"}), 409)
    assert reason == "violates a FOREIGN KEY constraint"
    # deleting a user a post refers to violates the same constraint
    reason = _error(server.request("DELETE", f"/users/{user['id']}"), 409)
    assert reason == "violates a FOREIGN KEY constraint"
    assert "FOREIGN KEY constraint failed" in server.log(until="FOREIGN KEY constraint failed")


def test_not_null_and_check_violations_are_400(server):
    reason = _error(server.request("POST", "/users", {"name": None, "age": 3}), 400)
    assert reason == "violates a NOT NULL constraint"
    reason = _error(server.request("POST", "/users", {"name": "frank", "age": -1}), 400)
    assert reason == "violates a CHECK constraint"
    log = server.log(until="CHECK constraint failed")
    assert "POST /users: invalid error: NOT NULL constraint failed: users.name" in log
    assert "POST /users: invalid error: CHECK constraint failed" in log
    # nothing was stored by the refused statements
    assert server.request("POST", "/users", {"name": "frank", "age": 1}).status == 200


def test_a_program_can_match_the_conflict_kind(server):
    server.request("POST", "/users", {"name": "gina", "age": 1})
    other = server.request("POST", "/users", {"name": "hal", "age": 1}).json()
    reason = _error(server.request("POST", f"/rename/{other['id']}", {"name": "gina", "age": 1}),
                    409)
    assert reason == "the name is taken (conflicts with an existing row)"
    r = server.request("POST", f"/rename/{other['id']}", {"name": "hank", "age": 1})
    assert r.json() == "1 renamed"


def test_the_client_never_sees_sql_or_table_names(server):
    r = server.request("POST", "/users", {"name": "ada", "age": 1})
    assert b"users" not in r.body and b"INSERT" not in r.body and b"UNIQUE" not in r.body


def test_a_body_that_is_not_utf8_is_a_400_from_to_str(server):
    r = server.request("POST", "/text", raw="zoë".encode(), headers={"Content-Type": "text/plain"})
    digest = hashlib.sha256("zoë".encode()).hexdigest()
    assert (r.status, r.json()) == (200, f"4 bytes, sha256 {digest}")
    reason = _error(server.request("POST", "/text", raw=b"ok\xff",
                                   headers={"Content-Type": "text/plain"}), 400)
    assert reason == "not valid UTF-8 (bad byte at offset 2)"
