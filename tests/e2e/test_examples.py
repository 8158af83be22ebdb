"""The hello and workload examples over real HTTP, run with `svcc run` like a user would."""

from __future__ import annotations

import pytest

from tests.helpers.svc_process import REPO, start

# Its subject is the compiled request path: `make test` runs it again on the pure-Python modules.
pytestmark = pytest.mark.compiled_path

HELLO = str(REPO / "examples" / "hello" / "hello.svc")
WORKLOAD = str(REPO / "examples" / "workload" / "workload.svc")


@pytest.fixture(scope="module")
def hello():
    server = start([HELLO])
    yield server
    assert server.stop() == 0


@pytest.fixture(scope="module")
def workload():
    server = start([WORKLOAD])
    yield server
    assert server.stop() == 0


def test_hello_index_is_html(hello):
    r = hello.request("GET", "/")
    assert r.status == 200 and r.headers["content-type"] == "text/html; charset=utf-8"
    assert b"<h1>Hello from svc</h1>" in r.body


def test_hello_greet(hello):
    r = hello.request("GET", "/greet/7")
    assert (r.status, r.json()) == (200, {"id": 7, "message": "hello, visitor 7"})
    assert r.headers["content-type"] == "application/json"
    for bad in ("/greet/0", "/greet/-3"):
        r = hello.request("GET", bad)
        assert (r.status, r.json()) == (400, {"error": "id must be at least 1"})
    assert hello.request("GET", "/greet/seven").status == 400


def test_hello_echo(hello):
    greeting = {"id": 3, "message": "héllo"}
    r = hello.request("POST", "/echo", greeting)
    assert (r.status, r.json()) == (200, greeting)
    assert hello.request("POST", "/echo", {"id": 3}).status == 400
    assert hello.request("GET", "/health").body == b"ok"


def test_workload_small_and_echo(workload):
    r = workload.request("GET", "/small")
    assert (r.status, r.json()) == (200, {"id": 1, "name": "ada", "age": 36})
    user = {"id": 5, "name": "bo", "age": 2147483647}
    assert workload.request("POST", "/echo", user).json() == user
    for bad in ({**user, "age": 2147483648}, {**user, "id": True}, {**user, "extra": 1},
                {"id": 5, "name": "bo"}, {**user, "name": None}):
        r = workload.request("POST", "/echo", bad)
        assert r.status == 400 and "error" in r.json(), bad


def test_workload_query(workload):
    r = workload.request("GET", "/query?limit=5&name=x")
    assert (r.status, r.json()) == (200, {"id": 5, "name": "x", "age": 30})
    for bad in ("/query?limit=five&name=x", "/query?name=x", "/query?limit=5"):
        assert workload.request("GET", bad).status == 400, bad


def test_workload_users_from_the_seeded_table(workload):
    assert workload.request("GET", "/users/1").json() == {"id": 1, "name": "user1", "age": 19}
    r = workload.request("GET", "/users/1000")
    assert r.status == 200 and r.json()["name"] == "user1000"
    assert workload.request("GET", "/users/1001").status == 404
    assert workload.request("GET", "/users/0").status == 404


def test_workload_database_file_from_svc_db(tmp_path):
    db = tmp_path / "users.sqlite"
    server = start([WORKLOAD], env={"SVC_DB": str(db)})
    try:
        assert server.request("GET", "/users/42").json()["id"] == 42
    finally:
        assert server.stop() == 0
    assert db.exists()
    again = start([WORKLOAD], env={"SVC_DB": str(db)})  # re-seeding an existing file is fine
    try:
        assert again.request("GET", "/users/1000").status == 200
    finally:
        assert again.stop() == 0
