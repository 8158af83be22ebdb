"""The arguments of db_exec, db_all and db_one over real HTTP, through `svcc run`, on every
database the `database_url` fixture gives (tests/e2e/conftest.py): an SQLite file and a private
PostgreSQL cluster. One program, one SQL text per statement, the same answers on both:

- a str holding a NUL character (U+0000), from a JSON body, a path or a query, is refused with
  400 before it reaches the database (PostgreSQL's text cannot hold it; it used to be a 500
  there), and nothing of the request is written;
- a List argument stands for its values in `col IN (?n)`: ints, strs, empty, duplicates, a
  quote, 1,000 values; anywhere else it is a JSON value, read back into a `List[i64]` field.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.svc_process import start

PROGRAM = Path(__file__).with_name("programs") / "db_arguments.svc"
NUL_REFUSED = "text with a NUL character (U+0000) cannot go to the database (SQL argument {})"


@pytest.fixture
def server(database_url):
    server = start([str(PROGRAM)], env={"SVC_DB": database_url})
    yield server
    assert server.stop() == 0


def test_a_nul_in_a_json_body_is_400_and_nothing_is_written(server):
    answer = server.request("POST", "/notes", {"id": 1, "text": "a\u0000b"})
    assert (answer.status, answer.json()) == (400, {"error": NUL_REFUSED.format(2)})
    assert server.request("GET", "/notes").json() == []
    log = server.log(until="invalid error")
    assert "invalid error: " + NUL_REFUSED.format(2) + " (in SQL: INSERT INTO notes" in log, log
    assert "Traceback" not in log
    # the same request without the NUL is stored
    assert server.request("POST", "/notes", {"id": 1, "text": "ab"}).status == 204
    assert server.request("GET", "/notes").json() == [{"id": 1, "text": "ab"}]


def test_a_nul_in_a_transaction_leaves_nothing_written(server):
    """The first insert ran; the second is refused before it is sent, the handler returns the
    error and its transaction is rolled back, on both databases."""
    answer = server.request("POST", "/pair/1?first=kept%3F&second=x%00y")
    assert (answer.status, answer.json()) == (400, {"error": NUL_REFUSED.format(2)})
    assert server.request("GET", "/notes").json() == []
    assert server.request("POST", "/pair/1?first=one&second=two").status == 204
    assert [n["text"] for n in server.request("GET", "/notes").json()] == ["one", "two"]


def test_a_nul_in_a_path_parameter_is_400_for_a_query_too(server):
    answer = server.request("GET", "/notes/text/a%00b")
    assert (answer.status, answer.json()) == (400, {"error": NUL_REFUSED.format(1)})
    assert server.request("GET", "/notes/text/ab").json() == []


def test_a_nul_in_a_list_is_400(server):
    server.request("POST", "/seed/3")
    answer = server.request("POST", "/named", {"texts": ["note 1", "a\u0000"]})
    assert (answer.status, answer.json()) == (400, {"error": NUL_REFUSED.format(1)})


def test_lists_of_ints_as_in(server):
    assert server.request("POST", "/seed/5").status == 204
    ids = lambda answer: [n["id"] for n in answer.json()]  # noqa: E731
    assert ids(server.request("POST", "/pick", {"ids": [4, 1, 3, 3, 99]})) == [1, 3, 4]
    assert ids(server.request("POST", "/pick", {"ids": []})) == []
    assert ids(server.request("POST", "/pick", {"ids": [2, 2, 2]})) == [2]
    assert ids(server.request("POST", "/pick", {"ids": [-9223372036854775808]})) == []


def test_a_list_of_a_thousand_ints(server):
    assert server.request("POST", "/seed/1200").status == 204
    evens = list(range(2, 2001, 2))
    answer = server.request("POST", "/pick", {"ids": evens})
    assert answer.status == 200
    assert [n["id"] for n in answer.json()] == list(range(2, 1201, 2))


def test_lists_of_strs_with_quotes_and_duplicates(server):
    texts = ["it's", 'say "hi"', "back\\slash", "naïve ✓", "", "a,b", "[1]"]
    for i, text in enumerate(texts, 1):
        assert server.request("POST", "/notes", {"id": i, "text": text}).status == 204
    answer = server.request("POST", "/named", {"texts": texts + ["it's", "absent"]})
    assert answer.status == 200
    assert [n["text"] for n in answer.json()] == texts
    answer = server.request("POST", "/named", {"texts": ["it''s", "it"]})
    assert answer.json() == []  # a quote is a value, never SQL
    assert server.request("POST", "/named", {"texts": []}).json() == []


def test_not_in_an_empty_list_matches_every_row(server):
    assert server.request("POST", "/seed/4").status == 204
    assert server.request("POST", "/keep", {"ids": [1, 3]}).json() == {"n": 2}
    assert [n["id"] for n in server.request("GET", "/notes").json()] == [1, 3]
    assert server.request("POST", "/keep", {"ids": []}).json() == {"n": 2}
    assert server.request("GET", "/notes").json() == []


def test_a_list_outside_in_is_a_json_value(server):
    for id, ids in ((1, [4, 1, 3]), (2, []), (3, [-9223372036854775808])):
        assert server.request("POST", f"/listed/{id}", {"ids": ids}).status == 204
    assert server.request("GET", "/listed").json() == [
        {"id": 1, "ids": [4, 1, 3]}, {"id": 2, "ids": []}, {"id": 3, "ids": [-9223372036854775808]}]
