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
    line = _line_of("INTO notes (id, text) VALUES (?1, 'slow')") - 1
    log = server.log(until="was rolled back")
    assert re.search(rf"the transaction begun at \S*transactions\.svc:{line} was rolled "
                     r"back: its request passed the processing limit", log), log
    assert log.count("was rolled back") == 1  # not again as the cancelled handler ends
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


def _line_of(text: str, program: str | Path = PROGRAM) -> int:
    """The 1-based line of the first line of `program` holding `text`."""
    source = program.read_text() if isinstance(program, Path) else program
    return next(n for n, line in enumerate(source.splitlines(), start=1) if text in line)


def test_a_helper_s_open_transaction_is_rolled_back_as_it_returns(server):
    """The helper begins, writes and returns an error without db_commit; the handler's next
    statement on the Db runs at once (on SQLite it used to wait for the processing limit)."""
    started = time.monotonic()
    response = server.request("POST", "/give-up/8")
    assert (response.status, response.json()) == (200, 0)
    assert time.monotonic() - started < 1.0
    line = _line_of("INTO notes (id, text) VALUES (?1, 'given up')") - 1
    log = server.log(until="was rolled back")
    assert re.search(rf"POST /give-up/8: the transaction begun at \S*transactions\.svc:{line} "
                     r"was rolled back: the function that began it returned without db_commit "
                     r"request_id=\S+$", log, re.M), log
    assert log.count("was rolled back") == 1
    assert server.request("POST", "/give-up/0").json() == 1  # committed: kept, no log line
    assert server.request("GET", "/notes").json() == [{"id": 0, "text": "given up"}]
    assert server.log().count("was rolled back") == 1


def test_a_helper_that_fails_rolls_its_transaction_back(server):
    assert server.request("POST", "/fail/5").status == 500
    line = _line_of("INTO notes (id, text) VALUES (?1, 'failed')") - 1
    log = server.log(until="was rolled back")
    assert re.search(rf"transaction begun at \S*transactions\.svc:{line} was rolled back: the "
                     r"function that began it failed before db_commit", log), log
    assert server.request("GET", "/notes").json() == []


def test_the_db_used_while_its_task_s_transaction_is_open_is_an_error_at_once(server):
    started = time.monotonic()
    assert server.request("POST", "/db-inside/4").status == 500
    assert time.monotonic() - started < 1.0
    line = _line_of("INTO notes (id, text) VALUES (?1, 'inside')") - 1
    log = server.log(until="was rolled back")
    assert re.search(rf"POST /db-inside/4: database error: this task's transaction \(db_begin "
                     rf"at \S*transactions\.svc:{line}\) is still open: give the statement its "
                     r"Tx, or end the transaction \(db_commit, db_rollback\) before using the "
                     r"Db", log), log
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
    line = _line_of("tx = try await db_begin(db)", FORGETFUL_MAIN)
    assert (wrote.returncode, wrote.stdout) == (0, "left open\n")
    assert wrote.stderr == (f"svc: the transaction begun at {program}:{line} was rolled back: "
                            "the function that began it returned without db_commit\n")
    read = run_to_end(["run", str(program)], env={"SVC_DB": database_url, "STEP": "read"})
    assert (read.returncode, read.stdout, read.stderr) == (0, "rows 0\n", "")


HELPER_IN_MAIN = '''\
class Count:
    n: i64

async def keep(db: Db, n: i64) -> Result[unit, Error]:
    tx = try await db_begin(db)
    try await db_exec(tx, "INSERT INTO kept (n) VALUES (?1)", n)
    if n > 1:
        return error("gave up on " + str(n))
    try await db_commit(tx)
    return ok(())

async def rows(db: Db) -> Result[str, Error]:
    match try await db_one[Count](db, "SELECT COUNT(*) AS n FROM kept"):
        case Some(c): return ok("rows " + str(c.n))
        case None: return ok("no answer")

async def main() -> Result[unit, Error]:
    db = try await db_open(env("SVC_DB", ""))
    try await db_exec(db, "CREATE TABLE kept (n BIGINT NOT NULL)")
    match await keep(db, 2):
        case Ok(done): print("kept 2")
        case Err(e): print(error_message(e))
    print(try await rows(db))
    try await keep(db, 1)
    print(try await rows(db))
    tx = try await db_begin(db)
    try await db_exec(tx, "INSERT INTO kept (n) VALUES (3)")
    match await db_one[Count](db, "SELECT COUNT(*) AS n FROM kept"):
        case Ok(c): print("the Db answered")
        case Err(e): print(error_kind(e) + ": " + error_message(e))
    match await db_begin(db):
        case Ok(other): print("began a second one")
        case Err(e): print(error_kind(e) + ": " + error_message(e))
    try await db_commit(tx)
    print(try await rows(db))
    return ok(())
'''


def test_a_helper_s_transaction_ends_with_it_and_the_db_is_refused_inside_one(database_url,
                                                                              tmp_path):
    """In `main`, which used to wait forever on SQLite after `keep(db, 2)` returned."""
    program = tmp_path / "helper.svc"
    program.write_text(HELPER_IN_MAIN)
    started = time.monotonic()
    result = run_to_end(["run", str(program)], env={"SVC_DB": database_url}, timeout=30)
    assert time.monotonic() - started < 10
    lines = HELPER_IN_MAIN.splitlines()
    helper_line = _line_of("tx = try await db_begin(db)", HELPER_IN_MAIN)
    main_line = lines.index("    tx = try await db_begin(db)", lines.index("async def main() -> "
                                                                   "Result[unit, Error]:")) + 1
    held = (f"database: this task's transaction (db_begin at {program}:{main_line}) is still "
            "open: give the statement its Tx, or end the transaction (db_commit, db_rollback) "
            "before using the Db")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["gave up on 2", "rows 0", "rows 1", held, held,
                                          "rows 2"]
    assert result.stderr == (f"svc: the transaction begun at {program}:{helper_line} was rolled "
                             "back: the function that began it returned without db_commit\n")


TEST_OF_A_HELPER = '''\
class Count:
    n: i64

async def keep(db: Db, n: i64) -> Result[unit, Error]:
    tx = try await db_begin(db)
    try await db_exec(tx, "INSERT INTO kept (n) VALUES (?1)", n)
    if n > 1:
        return error("gave up on " + str(n))
    try await db_commit(tx)
    return ok(())

async def test_a_given_up_keep_keeps_nothing() -> Result[unit, Error]:
    db = try await db_open("kept.sqlite")
    try await db_exec(db, "CREATE TABLE IF NOT EXISTS kept (n INTEGER NOT NULL)")
    match await keep(db, 2):
        case Ok(done): assert_true(False)
        case Err(e): assert_eq(error_message(e), "gave up on 2")
    match try await db_one[Count](db, "SELECT COUNT(*) AS n FROM kept"):
        case Some(c): assert_eq(c.n, 0)
        case None: assert_true(False)
    return ok(())
'''


def test_svcc_test_of_a_helper_that_leaves_its_transaction_open_does_not_hang(tmp_path):
    """This test used to run into its 10 s time limit, waiting for its own transaction."""
    (tmp_path / "app.svc").write_text("def main():\n    print(\"main\")\n")
    (tmp_path / "app_test.svc").write_text(TEST_OF_A_HELPER)
    started = time.monotonic()
    result = run_to_end(["test", "app.svc"], cwd=tmp_path, timeout=30)
    assert time.monotonic() - started < 8
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == "1 passed, 0 failed"
    assert "was rolled back: the function that began it returned without db_commit" \
        in result.stderr


def test_with_json_logs_a_forgotten_transaction_is_a_json_line_with_its_request_id(database_url):
    """Issue 35: with SVC_LOG_FORMAT=json the rollback was a plain-text `svc: ...` line with no
    request id; it is the request's JSON error line, its id the answer's X-Request-Id."""
    server = start([str(PROGRAM)], env={"SVC_DB": database_url, "SVC_LOG_FORMAT": "json"})
    try:
        response = server.request("POST", "/give-up/9")
        assert response.status == 200
        log = server.log(until="was rolled back")
    finally:
        assert server.stop() == 0
    import json

    assert "svc: the transaction" not in log
    lines = [json.loads(line) for line in log.splitlines() if "was rolled back" in line]
    assert len(lines) == 1 and lines[0]["level"] == "error"
    assert lines[0]["request_id"] == response.headers["x-request-id"]
    assert lines[0]["message"].startswith("the transaction begun at ")
