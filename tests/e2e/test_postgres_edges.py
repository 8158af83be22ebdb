"""The database's edges found by running svc on PostgreSQL for real: a deadlock or a
serialization failure is `busy` (503 with Retry-After), since the transaction was rolled back
and a retry is safe. Real transactions on a real (private) cluster, and a real server."""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import ClassVar

import msgspec

from svc.runtime.db import close_all, db_all, db_begin, db_exec, db_one, db_open, db_rollback
from svc.runtime.lib.support import SvcError
from tests.helpers.svc_process import start


class Row(msgspec.Struct):
    id: int
    n: int
    __svc_fields__: ClassVar = (("id", "i64", False), ("n", "i64", False))


def _database(cluster) -> str:
    """A new database with rows 1 and 2 of `t`, whose deadlocks are found after 100 ms."""
    url = cluster.create_database()
    name = url.rsplit("/", 1)[1]
    cluster.sql(f"ALTER DATABASE {name} SET deadlock_timeout = '100ms'")
    cluster.sql("CREATE TABLE t (id BIGINT PRIMARY KEY, n BIGINT NOT NULL); "
                "INSERT INTO t VALUES (1, 0), (2, 0)", database=name)
    return url


def _is_retry(result) -> bool:
    return (isinstance(result, SvcError) and result.kind == "busy"
            and result.message.endswith("retry it"))


def test_a_deadlock_is_busy_and_the_other_transaction_goes_on(postgres_cluster):
    """Two transactions lock rows 1 and 2 in opposite order: the server picks one to roll back."""
    url = _database(postgres_cluster)

    async def main():
        db = await db_open(url)
        first, second = await db_begin(db), await db_begin(db)
        await db_exec(first, "UPDATE t SET n = n + 1 WHERE id = 1")
        await db_exec(second, "UPDATE t SET n = n + 1 WHERE id = 2")
        crossed = await asyncio.gather(db_exec(first, "UPDATE t SET n = n + 1 WHERE id = ?1", 2),
                                       db_exec(second, "UPDATE t SET n = n + 1 WHERE id = ?1", 1))
        for tx in (first, second):
            await db_rollback(tx)
        close_all()
        return crossed

    crossed = asyncio.run(main())
    assert sorted(map(_is_retry, crossed)) == [False, True], crossed
    broken = next(r for r in crossed if isinstance(r, SvcError))
    assert "deadlock detected" in broken.detail and "UPDATE t SET" in broken.detail
    assert "deadlock" not in broken.message  # the database's words go to the log only
    assert 1 in crossed  # the other one's update went through


def test_a_serialization_failure_is_busy(postgres_cluster):
    """REPEATABLE READ: a row changed by a transaction that committed after this one's snapshot
    cannot be updated (SQLSTATE 40001); the commit of the other one is kept."""
    url = _database(postgres_cluster)

    async def main():
        db = await db_open(url)
        tx = await db_begin(db)
        await db_exec(tx, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        before = await db_one(Row, tx, "SELECT id, n FROM t WHERE id = 1")
        await db_exec(db, "UPDATE t SET n = 10 WHERE id = 1")  # on its own, committed
        clash = await db_exec(tx, "UPDATE t SET n = n + 1 WHERE id = 1")
        await db_rollback(tx)
        after = await db_one(Row, db, "SELECT id, n FROM t WHERE id = 1")
        close_all()
        return before.n, clash, after.n

    before, clash, after = asyncio.run(main())
    assert before == 0 and after == 10
    assert _is_retry(clash), clash
    assert "could not serialize access" in clash.detail


PROGRAM = """
class Row:
    id: i64
    n: i64

@post("/cross/{first}/{second}")
async def cross(db: Db, first: i64, second: i64) -> Result[unit, Error]:
    tx = try await db_begin(db)
    try await db_exec(tx, "UPDATE t SET n = n + 1 WHERE id = ?1", first)
    await sleep(300)
    try await db_exec(tx, "UPDATE t SET n = n + 1 WHERE id = ?1", second)
    try await db_commit(tx)
    return ok(())

@post("/cross-logged/{first}/{second}")
async def cross_logged(db: Db, first: i64, second: i64) -> Result[unit, Error]:
    log_info("crossing", Map())
    tx = try await db_begin(db)
    try await db_exec(tx, "UPDATE t SET n = n + 1 WHERE id = ?1", first)
    # the first starts waiting for the second's row 200 ms before the second waits for its
    # row: its wait ends first, and the second gets the row it waited for
    await sleep(200 + 200 * first)
    try await db_exec(tx, "UPDATE t SET n = n + 1 WHERE id = ?1", second)
    try await db_commit(tx)
    return ok(())

@get("/rows")
async def rows(db: Db) -> Result[List[Row], Error]:
    return await db_all[Row](db, "SELECT id, n FROM t ORDER BY id")

async def main() -> Result[unit, Error]:
    port = try parse_i64(env("SVC_PORT", "8080"))
    db = try await db_open(env("SVC_DB", ""))
    return await serve(db, port)
"""


def test_a_deadlocked_request_is_run_again_or_answers_503_with_retry_after(postgres_cluster,
                                                                           tmp_path):
    """Two requests lock rows 1 and 2 in opposite orders. `cross` is proven safe to run again:
    the one whose lock wait ended runs again and both succeed. `cross_logged` writes a log
    line first, so it is not run again: the one whose wait ends first answers 503, saying what
    happened, the other goes on, and the retry the answer invites succeeds."""
    url = _database(postgres_cluster)
    program = tmp_path / "cross.svc"
    program.write_text(PROGRAM)
    server = start([str(program)], env={"SVC_DB": url})
    try:
        paths = ["/cross/1/2", "/cross/2/1"]
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(lambda path: server.request("POST", path), paths))
        for path, answer in zip(paths, answers):
            if answer.status == 503:  # a loaded machine: its second run too waited past its
                assert answer.headers["retry-after"] == "1"  # bound, and it says to retry
                assert server.request("POST", path).status == 204
            else:
                assert answer.status == 204, (answer.status, answer.body)
        assert server.request("GET", "/rows").json() == [{"id": 1, "n": 2}, {"id": 2, "n": 2}]
        log = server.log(until="running the handler again")
        assert "POST /cross/" in log and "running the handler again (run 2) after busy error: " \
            "a lock held by another transaction was not released in time; retry it" in log, log

        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(lambda path: server.request("POST", path),
                                    ["/cross-logged/1/2", "/cross-logged/2/1"]))
        statuses = sorted(a.status for a in answers)
        assert statuses == [204, 503], [(a.status, a.body) for a in answers]
        refused = next(a for a in answers if a.status == 503)
        assert refused.headers["retry-after"] == "1"
        assert refused.json() == {
            "error": "a lock held by another transaction was not released in time; retry it"}
        assert "retry-after" not in next(a for a in answers if a.status == 204).headers
        # the retry the answer invites succeeds: only the first, committed, counted meanwhile
        assert server.request("POST", refused_path(answers)).status == 204
        assert server.request("GET", "/rows").json() == [{"id": 1, "n": 4}, {"id": 2, "n": 4}]
        log = server.log(until="lock timeout")
        assert "busy error: canceling statement due to lock timeout" in log, log
        assert "Traceback" not in log, log
    finally:
        assert server.stop() == 0


def refused_path(answers) -> str:
    return "/cross-logged/1/2" if answers[0].status == 503 else "/cross-logged/2/1"


# --- typed parameters: the same SQL on both databases ---------------------------------------

class Named(msgspec.Struct):
    id: int
    name: str | None
    __svc_fields__: ClassVar = (("id", "i64", False), ("name", "str", True))


OPTIONAL_FILTERS = [
    ("SELECT id, name FROM t WHERE ?1 IS NULL OR id = ?1 ORDER BY id", (2,), [2]),
    ("SELECT id, name FROM t WHERE ?1 IS NULL OR id = ?1 ORDER BY id", (None,), [1, 2]),
    ("SELECT id, name FROM t WHERE ?1 IS NULL OR name = ?1 ORDER BY id", ("b",), [2]),
    ("SELECT id, name FROM t WHERE ?1 IS NULL OR name = ?1 ORDER BY id", (None,), [1, 2]),
    ("SELECT id, name FROM t WHERE (?1 IS NULL OR ?1 < 1.5) AND (?2 IS NULL OR id = ?2) "
     "ORDER BY id", (1.0, None), [1, 2]),
    ("SELECT id, name FROM t WHERE (?1 IS NULL OR ?1 < 1.5) AND (?2 IS NULL OR id = ?2) "
     "ORDER BY id", (None, 2), [2]),
    ("SELECT id, name FROM t WHERE ?2 = id OR ?1 ORDER BY id", (True, 1), [1, 2]),
    ("SELECT id, name FROM t WHERE ?2 = id OR ?1 ORDER BY id", (False, 1), [1]),
    ("SELECT id, name FROM t WHERE ?1 IS NOT NULL AND length(?1) = 2 ORDER BY id", (b"xy",),
     [1, 2]),
]


def test_optional_filters_run_alike_on_both_databases(postgres_cluster, tmp_path):
    """`?1 IS NULL OR col = ?1` given a value and None: PostgreSQL could not tell the type of
    `$1` before svc sent it; both databases now give the same rows. The same statement with
    a value and with None, on the same connection, are kept apart."""
    pg_url = postgres_cluster.create_database()

    async def rows_on(url: str):
        db = await db_open(url)
        await db_exec(db, "CREATE TABLE t (id BIGINT PRIMARY KEY, name TEXT)")
        await db_exec(db, "INSERT INTO t (id, name) VALUES (?1, ?2), (?3, ?4)", 1, None, 2, "b")
        found = []
        for sql, args, _expected in OPTIONAL_FILTERS:
            rows = await db_all(Named, db, sql, *args)
            found.append(rows if isinstance(rows, SvcError) else [r.id for r in rows])
        name = await db_one(Named, db, "SELECT id, name FROM t WHERE id = ?1", 1)
        return found, name

    async def main():
        on_sqlite = await rows_on(str(tmp_path / "edges.sqlite"))
        on_postgres = await rows_on(pg_url)
        close_all()
        return on_sqlite, on_postgres

    (sqlite_rows, sqlite_one), (pg_rows, pg_one) = asyncio.run(main())
    expected = [rows for _sql, _args, rows in OPTIONAL_FILTERS]
    assert sqlite_rows == expected
    assert pg_rows == expected
    assert sqlite_one.name is None and pg_one.name is None  # None inserted as NULL on both


def test_a_missing_argument_is_still_a_database_error_on_postgresql(postgres_cluster):
    url = postgres_cluster.create_database()

    async def main():
        db = await db_open(url)
        wrong = await db_all(Named, db, "SELECT ?1 AS id, ?2 AS name", 1)
        close_all()
        return wrong

    wrong = asyncio.run(main())
    assert isinstance(wrong, SvcError) and wrong.kind == "database", wrong
