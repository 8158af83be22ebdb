"""Enums, JSON values, single-column results and REGEXP over real HTTP, through `svcc run`, on
an SQLite file and on a database of the session's private PostgreSQL cluster: one program, one
SQL text per statement, the same answers on both. A bad REGEXP pattern is the client's
mistake, 400, and writes nothing (in a transaction: its other statement is rolled back with
it); a stored enum value that is no member is the server's, 500, and its log line says which
column, field and enum."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.svc_process import start

PROGRAM = Path(__file__).with_name("programs") / "db_data_types.svc"
ANN = {"id": 1, "name": "ann", "role": "admin", "tags": ["ops", "on call"],
       "home": {"city": "Oslo"}}
BOB = {"id": 2, "name": "bob", "role": "member", "tags": [], "home": None}


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def server(request, tmp_path_factory):
    if request.param == "sqlite":
        url = str(tmp_path_factory.mktemp("data_types") / "users.sqlite")
    else:
        url = request.getfixturevalue("postgres_cluster").create_database()
    server = start([str(PROGRAM)], env={"SVC_DB": url})
    for user in (ANN, BOB):
        assert server.request("POST", "/users", user).status == 204
    yield server
    assert server.stop() == 0


def test_enums_and_json_values_go_and_come_back(server):
    assert server.request("GET", "/users/1").json() == ANN
    assert server.request("GET", "/users?pattern=.").json() == [ANN, BOB]
    assert server.request("GET", "/roles?role=member").json() == {"names": ["bob"]}
    assert server.request("GET", "/roles?role=owner").status == 400  # no such member: binding
    assert server.request("GET", "/count").json() == 2


def test_a_bad_pattern_is_400_and_writes_nothing(server):
    answer = server.request("GET", "/users?pattern=%28a")
    assert (answer.status, answer.json()) == (
        400, {"error": "invalid regular expression: missing ): (a"})
    answer = server.request("POST", "/hit?first=ann&pattern=b%7B300%7D")
    assert (answer.status, answer.json()) == (
        400, {"error": "invalid regular expression: repetition count above 255: {300}"})
    assert server.request("GET", "/hits").json() == [0, 0]  # ann's +1 was rolled back
    assert server.request("POST", "/hit?first=ann&pattern=%5Eb").status == 204
    assert server.request("GET", "/hits").json() == [1, 10]
    log = server.log(until="invalid regular expression")
    assert "(in SQL: UPDATE users SET hits = hits + 10 WHERE name REGEXP ?1)" in log, log
    assert "Traceback" not in log


def test_a_stored_value_that_is_no_member_is_500_and_logged(server):
    assert server.request("POST", "/spoil/2?role=owner").status == 204
    try:
        answer = server.request("GET", "/users?pattern=b")
        assert (answer.status, answer.json()) == (500, {"error": "internal error"})
        log = server.log(until="no member of Role")
        assert ("column 'role' holds 'owner', which is no member of Role (admin, member) for "
                "field User.role") in log, log
        assert "Traceback" not in log
    finally:
        assert server.request("POST", "/spoil/2?role=member").status == 204
    assert server.request("GET", "/users?pattern=b").json() == [BOB]
