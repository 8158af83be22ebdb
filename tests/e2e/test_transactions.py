"""Transactions, db_migrate and the one-statement rule over real HTTP, through `svcc run`.

The same program and the same tests run on every database the `database_url` fixture gives
(tests/e2e/conftest.py): an SQLite file, and a private PostgreSQL cluster.
"""

from __future__ import annotations

import concurrent.futures
import random
import re
import time
from pathlib import Path

import pytest

from tests.helpers.svc_process import run_to_end, start

PROGRAM = Path(__file__).with_name("programs") / "transactions.svc"
ACCOUNTS = 6
OPENING_BALANCE = 1000


@pytest.fixture
def server(database_url):
    server = start([str(PROGRAM)], env={"SVC_DB": database_url})
    for account in range(1, ACCOUNTS + 1):
        assert server.request("POST", f"/accounts/{account}/{OPENING_BALANCE}").status == 204
    yield server
    assert server.stop() == 0


def _transfer(server, source, target, amount):
    path = f"/transfer?source={source}&target={target}&amount={amount}"
    return server.request("POST", path).status


def test_concurrent_transfers_keep_the_total(server):
    rng = random.Random(7)
    moves = [(rng.randint(1, ACCOUNTS), rng.randint(1, ACCOUNTS), rng.randint(1, 400))
             for _ in range(120)]
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        statuses = list(pool.map(lambda m: _transfer(server, *m), moves))
    assert set(statuses) <= {204, 400}, statuses
    assert statuses.count(204) > 0
    assert server.request("GET", "/total").json() == {
        "total": ACCOUNTS * OPENING_BALANCE, "n": ACCOUNTS}
    balances = [server.request("GET", f"/accounts/{a}").json()["balance"]
                for a in range(1, ACCOUNTS + 1)]
    assert min(balances) >= 0 and sum(balances) == ACCOUNTS * OPENING_BALANCE


def test_a_failed_step_undoes_the_whole_transfer(server):
    assert _transfer(server, 1, 99, 10) == 404  # the debit ran, the credit found no account
    assert _transfer(server, 1, 2, OPENING_BALANCE + 1) == 400
    assert server.request("GET", "/accounts/1").json()["balance"] == OPENING_BALANCE


def test_a_transaction_left_open_is_rolled_back_when_its_request_ends(server):
    started = time.monotonic()
    for note in range(1, 6):
        assert server.request("POST", f"/forget/{note}").status == 204
    assert server.request("GET", "/notes").json() == []
    assert server.request("POST", "/notes/7?text=kept").status == 204
    assert server.request("GET", "/notes").json() == [{"id": 7, "text": "kept"}]
    assert time.monotonic() - started < 2.0  # nothing waited for a forgotten transaction


def test_a_transaction_past_the_processing_limit_is_rolled_back(server):
    started = time.monotonic()
    assert server.request("POST", "/slow/5").status == 504
    assert time.monotonic() - started < 3.0
    assert server.request("GET", "/notes").json() == []
    assert server.request("POST", "/notes/6?text=after").status == 204
    assert [n["id"] for n in server.request("GET", "/notes").json()] == [6]


def test_a_rollback_undoes_what_the_transaction_saw(server):
    assert server.request("POST", "/explicit-rollback/3").json() == 1
    assert server.request("GET", "/notes").json() == []


def test_several_statements_are_an_error_naming_the_svc_line(server):
    response = server.request("GET", "/two")
    assert response.status == 500 and response.json() == {"error": "internal error"}
    line = next(n for n, text in enumerate(PROGRAM.read_text().splitlines(), start=1)
                if "(900, 'a'); INSERT" in text)
    log = server.log(until="one statement per call")
    assert re.search(rf"GET /two: database error: \S*transactions\.svc:{line}: several SQL "
                     r"statements in one call: .*one statement per call", log), log
    assert server.request("GET", "/notes").json() == []  # neither statement ran


def test_a_finished_transaction_is_a_database_error(server):
    assert server.request("GET", "/finished").status == 500
    assert "this transaction is finished: it was committed" in server.log(until="finished")
    assert server.request("GET", "/notes").json() == []


def test_the_dialect_is_named(server, database_url):
    expected = "sqlite" if "://" not in database_url else "postgresql"
    assert server.request("GET", "/dialect").json() == expected


def test_migrations_apply_once_and_an_edited_step_stops_the_start(database_url, tmp_path):
    first = start([str(PROGRAM)], env={"SVC_DB": database_url})
    assert first.stop() == 0 and "migrated 1" in "".join(first.stdout)
    again = start([str(PROGRAM)], env={"SVC_DB": database_url})
    assert again.stop() == 0 and "migrated 0" in "".join(again.stdout)
    edited = tmp_path / "edited.svc"
    edited.write_text(PROGRAM.read_text().replace("text TEXT NOT NULL);", "text TEXT);"))
    result = run_to_end(["run", str(edited)], env={"SVC_DB": database_url, "SVC_PORT": "1"})
    assert result.returncode == 1
    assert result.stderr.startswith("error: migration step 1 differs from the step applied"), \
        result.stderr
    assert "Traceback" not in result.stderr


FORGETFUL_MAIN = '''\
class Count:
    n: i64

async def main() -> Result[unit, Error]:
    db = try await db_open(env("SVC_DB", ""))
    if env("STEP", "") == "write":
        try await db_exec(db, "CREATE TABLE kept (n BIGINT NOT NULL)")
        tx = try await db_begin(db)
        try await db_exec(tx, "INSERT INTO kept (n) VALUES (1)")
        print("left open")
        return ok(())
    match try await db_one[Count](db, "SELECT COUNT(*) AS n FROM kept"):
        case Some(c): print("rows " + str(c.n))
        case None: print("no answer")
    return ok(())
'''


def test_a_transaction_left_open_by_main_is_rolled_back(database_url, tmp_path):
    program = tmp_path / "forgetful.svc"
    program.write_text(FORGETFUL_MAIN)
    wrote = run_to_end(["run", str(program)], env={"SVC_DB": database_url, "STEP": "write"})
    assert (wrote.returncode, wrote.stdout, wrote.stderr) == (0, "left open\n", "")
    read = run_to_end(["run", str(program)], env={"SVC_DB": database_url, "STEP": "read"})
    assert (read.returncode, read.stdout, read.stderr) == (0, "rows 0\n", "")
