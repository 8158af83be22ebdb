"""The arguments of db_exec, db_all and db_one on every database (an SQLite file and a
database of the session's private PostgreSQL cluster), called as generated code calls them:
the NUL rule (refused alike, before anything is sent), List arguments in `col IN (?n)`
(wrapped in IntList, FloatList, BoolList or TextList by generated code) and as JSON values
anywhere else, and other JSON values (Json, JsonList)."""

from __future__ import annotations

import asyncio
import json
import math


from svc.runtime.db import (BoolList, FloatList, IntList, Json, JsonList, TextList, close_all,
                            db_all, db_begin, db_commit, db_dialect, db_exec, db_one, db_open,
                            sql_text)
from svc.runtime.db.args import usual
from svc.runtime.lib.support import SvcError
from tests.runtime.db.test_backends import svc_class

Row = svc_class("Row", ("id", "i64", False), ("name", "str", False))
Whole = svc_class("Whole", ("id", "i64", False))

TYPES = {"sqlite": {"int": "INTEGER", "float": "REAL", "bool": "INTEGER"},
         "postgresql": {"int": "BIGINT", "float": "DOUBLE PRECISION", "bool": "BOOLEAN"}}


def run(url: str, body, rows: int = 5):
    """Open `url`, make table t with `rows` rows (id i, name "n<i>", price i/2, even i % 2 = 0),
    run `body(db)`, close."""
    async def main():
        db = await db_open(url)
        assert not isinstance(db, SvcError), db
        try:
            t = TYPES[db_dialect(db)]
            await db_exec(db, f"CREATE TABLE t (id {t['int']} PRIMARY KEY, name TEXT NOT NULL, "
                              f"price {t['float']} NOT NULL, even {t['bool']} NOT NULL, "
                              f"small {t['int']} NOT NULL DEFAULT 0, data BYTEA_OR_BLOB)"
                              .replace("BYTEA_OR_BLOB",
                                       "BYTEA" if db_dialect(db) == "postgresql" else "BLOB"))
            for i in range(1, rows + 1):
                added = await db_exec(db, "INSERT INTO t (id, name, price, even) "
                                          "VALUES (?1, ?2, ?3, ?4)", i, f"n{i}", i / 2,
                                      i % 2 == 0)
                assert added == 1, added
            return await body(db)
        finally:
            close_all()

    return asyncio.run(main())


def _ids(rows) -> list[int]:
    assert not isinstance(rows, SvcError), rows
    return [r.id for r in rows]


# --- NUL --------------------------------------------------------------------------------------

def test_a_str_with_a_nul_is_refused_alike_and_nothing_is_written(url):
    async def body(db):
        refused = [
            await db_exec(db, "INSERT INTO t (id, name, price, even) VALUES (?1, ?2, 0, ?3)",
                          10, "a\x00b", False),
            await db_all(Row, db, "SELECT id, name FROM t WHERE name = ?1", "\x00"),
            await db_one(Row, db, "SELECT id, name FROM t WHERE id = ?2 AND name = ?1",
                         "n1\x00", 1),
            await db_all(Row, db, "SELECT id, name FROM t WHERE name IN (?1)",
                         TextList(["n1", "n2\x00"])),
        ]
        tx = await db_begin(db)
        inside = await db_exec(tx, "UPDATE t SET name = ?1 WHERE id = 1", "x\x00")
        still = await db_exec(tx, "UPDATE t SET name = ?1 WHERE id = 2", "changed")
        committed = await db_commit(tx)
        names = [r.name for r in await db_all(Row, db, "SELECT id, name FROM t ORDER BY id")]
        return refused, inside, still, committed, names

    refused, inside, still, committed, names = run(url, body)
    for error, position in zip(refused + [inside], [2, 1, 1, 1, 1]):
        assert isinstance(error, SvcError) and error.kind == "invalid", error
        assert error.message == ("text with a NUL character (U+0000) cannot go to the database "
                                 f"(SQL argument {position})")
        assert error.detail.startswith("invalid error: " + error.message + " (in SQL: ")
    # refused before it was sent: the transaction was not spoiled (PostgreSQL would have
    # aborted it) and commits the statement after it
    assert still == 1 and committed is None
    assert names == ["n1", "changed", "n3", "n4", "n5"]


def test_bytes_with_nul_and_text_without_are_sent_as_before(url):
    async def body(db):
        stored = await db_exec(db, "UPDATE t SET data = ?1, name = ?2 WHERE id = 1",
                               b"a\x00b", "line\nbreak\t\u2028 \\0 ok")
        found = await db_all(Row, db, "SELECT id, name FROM t WHERE data = ?1", b"a\x00b")
        return stored, found

    stored, found = run(url, body)
    assert stored == 1
    assert [(r.id, r.name) for r in found] == [(1, "line\nbreak\t\u2028 \\0 ok")]


# --- Lists ------------------------------------------------------------------------------------

def test_lists_of_every_element_type(url):
    async def body(db):
        return [
            await db_all(Whole, db, "SELECT id FROM t WHERE id IN (?1) ORDER BY id",
                         IntList([5, 1, 1, 99])),
            await db_all(Whole, db, "SELECT id FROM t WHERE name IN (?1) ORDER BY id",
                         TextList(["n2", "n4", "n4", "x"])),
            await db_all(Whole, db, "SELECT id FROM t WHERE price IN (?1) ORDER BY id",
                         FloatList([0.5, 2.5, 1.0000001, math.inf, -math.inf])),
            await db_all(Whole, db, "SELECT id FROM t WHERE even IN (?1) ORDER BY id",
                         BoolList([True])),
            await db_all(Whole, db, "SELECT id FROM t WHERE even NOT IN (?1) ORDER BY id",
                         BoolList([True, True])),
            await db_all(Whole, db, "SELECT id FROM t WHERE small IN (?1) ORDER BY id",
                         IntList([0])),
        ]

    found = [_ids(rows) for rows in run(url, body)]
    assert found == [[1, 5], [2, 4], [1, 5], [2, 4], [1, 3, 5], [1, 2, 3, 4, 5]]


def test_empty_lists_match_nothing_and_not_in_matches_all(url):
    async def body(db):
        return [
            await db_all(Whole, db, "SELECT id FROM t WHERE id IN (?1)", IntList()),
            await db_all(Whole, db, "SELECT id FROM t WHERE name IN (?1)", TextList()),
            await db_all(Whole, db, "SELECT id FROM t WHERE id NOT IN (?1) ORDER BY id",
                         IntList()),
            await db_exec(db, "DELETE FROM t WHERE id IN (?1)", IntList()),
            await db_exec(db, "DELETE FROM t WHERE id IN (?1)", IntList([2, 3, 3])),
        ]

    empty, empty_text, every, deleted_none, deleted = run(url, body)
    assert _ids(empty) == [] and _ids(empty_text) == []
    assert _ids(every) == [1, 2, 3, 4, 5]
    assert deleted_none == 0 and deleted == 2


def test_lists_beside_other_arguments_numbered_and_in_order(url):
    async def body(db):
        return [
            await db_all(Whole, db, "SELECT id FROM t WHERE id > ?1 AND id IN (?2) ORDER BY id",
                         1, IntList([1, 2, 3])),
            await db_all(Whole, db, "SELECT id FROM t WHERE id IN (?) AND name <> ? ORDER BY id",
                         IntList([1, 2, 3]), "n2"),
            await db_all(Whole, db, "SELECT id FROM t WHERE (name IN (?2) AND id < 3) OR "
                                    "name = ?1 OR (name IN (?2) AND id > 4) ORDER BY id",
                         "n3", TextList(["n1", "n5", "n2"])),
            await db_all(Whole, db, "SELECT id FROM t WHERE (?1 IS NULL OR id IN (?2)) "
                                    "AND name IN( ?3 ) ORDER BY id", None, IntList([1, 4]),
                         TextList(["n4", "n3"])),
            await db_all(Whole, db, "SELECT id FROM t WHERE name = 'IN (?1)' OR id in\n(\n?1\n)",
                         IntList([2])),
        ]

    found = [_ids(rows) for rows in run(url, body)]
    assert found == [[2, 3], [1, 3], [1, 2, 3, 5], [3, 4], [2]]


def test_a_thousand_and_a_quote(url):
    async def body(db):
        tx = await db_begin(db)
        for i in range(6, 1201):
            await db_exec(tx, "INSERT INTO t (id, name, price, even) VALUES (?1, ?2, 0, ?3)",
                          i, f"it's {i}" if i % 100 == 0 else f"n{i}", False)
        await db_commit(tx)
        many = await db_all(Whole, db, "SELECT id FROM t WHERE id IN (?1) ORDER BY id",
                            IntList(range(2, 2001, 2)))
        quoted = await db_all(Whole, db, "SELECT id FROM t WHERE name IN (?1) ORDER BY id",
                              TextList(["it's 100", "it''s 200", 'it"s 300', "it's 1200"]))
        inside = await db_begin(db)
        listed = await db_all(Whole, inside, "SELECT id FROM t WHERE id IN (?1)", IntList([7]))
        await db_commit(inside)
        return many, quoted, listed

    many, quoted, listed = run(url, body)
    assert _ids(many) == list(range(2, 1201, 2))
    assert _ids(quoted) == [100, 1200]
    assert _ids(listed) == [7]


#: A single column of text, as generated code describes `db_one[str]`.
TEXT = ("db_one[str]", "str", True)


def test_a_list_outside_in_is_a_json_value(url):
    async def body(db):
        return [
            await db_one(TEXT, db, "SELECT CAST(?1 AS TEXT)", IntList([1, 2])),
            await db_one(TEXT, db, "SELECT CAST(?1 AS TEXT)", TextList(["it's", "a\"b"])),
            await db_one(TEXT, db, "SELECT CAST(?1 AS TEXT)", BoolList([True, False])),
            await db_one(TEXT, db, "SELECT CAST(?1 AS TEXT)", FloatList([0.5, -2.0, 1.5e3])),
            await db_one(TEXT, db, "SELECT CAST(?1 AS TEXT)", IntList()),
            await db_one(TEXT, db, "SELECT CAST(?2 AS TEXT) FROM t WHERE id IN (?2) AND id > ?1",
                         1, IntList([3])),
            await db_one(TEXT, db, "SELECT CAST(?1 AS TEXT)",
                         JsonList([{"b": 1, "aa": [None]}, {}])),
            await db_one(TEXT, db, "SELECT CAST(?1 AS TEXT)", Json({"k": "v"})),
        ]

    found = run(url, body)
    assert [json.loads(text) for text in found] == [
        [1, 2], ["it's", 'a"b'], [True, False], [0.5, -2.0, 1500.0], [], [3],
        [{"b": 1, "aa": [None]}, {}], {"k": "v"}]


def test_lists_that_are_json_values_refuse_what_json_cannot_carry(url):
    async def body(db):
        return [
            await db_exec(db, "UPDATE t SET name = ?1 WHERE id = 1", FloatList([1.0, math.inf])),
            await db_exec(db, "UPDATE t SET name = ?2 WHERE id = ?1", 1, Json({"x": math.nan})),
            await db_exec(db, "UPDATE t SET name = ?1 WHERE id = 1", JsonList([["a\x00"]])),
            await db_all(Whole, db, "SELECT id FROM t WHERE price IN (?1) ORDER BY id",
                         FloatList([0.5, math.inf])),
            await db_all(Row, db, "SELECT id, name FROM t ORDER BY id"),
        ]

    inf, nan, nul, in_list, rows = run(url, body)
    for error, position in ((inf, 1), (nan, 2)):
        assert isinstance(error, SvcError) and error.kind == "invalid", error
        assert error.message == ("an f64 value is inf or NaN, which JSON cannot carry to the "
                                 f"database (SQL argument {position})")
    assert nul.kind == "invalid" and nul.message == (
        "text with a NUL character (U+0000) cannot go to the database (SQL argument 1)")
    assert _ids(in_list) == [1]  # values for IN may be infinite, as before
    assert [r.name for r in rows] == ["n1", "n2", "n3", "n4", "n5"]


def test_a_list_of_other_values_in_in_is_a_database_error_with_the_line(url):
    sqls = ["SELECT id FROM t WHERE id IN (?1)", "SELECT id FROM t WHERE id NOT IN (?1)",
            "SELECT id FROM t WHERE name = ?1 OR id IN (?1)"]

    async def body(db):
        return [await db_all(Whole, db, sql, JsonList([[1]])) for sql in sqls]

    errors = run(url, body)
    line = next(i for i, text in enumerate(open(__file__).read().splitlines(), 1)
                if "JsonList([[1]])) for sql in sqls]" in text)
    for error, sql in zip(errors, sqls):
        assert isinstance(error, SvcError) and error.kind == "database", (sql, error)
        assert error.message == (
            f"{__file__}:{line}: only a List of i64, i32, f64, bool, str or an enum stands for "
            "its values in IN (?n): ?1 is a List of other values (a class, a List, a T?), "
            f"which is a JSON value anywhere but in IN (in SQL: {sql})")


def test_a_json_value_is_a_jsonb_parameter_and_a_list_used_twice_is_sent_twice():
    text, statements, sent = sql_text.typed_for_postgres(
        "UPDATE t SET tags = ?1, home = ?3 WHERE name IN (?1) AND id = ?2",
        (TextList(["a"]), 5, Json({"x": 1})))
    assert text == ("UPDATE t SET tags = $4::jsonb, home = $3::jsonb WHERE name IN "
                    "(SELECT unnest($1::text[])) AND id = $2::bigint")
    assert statements == 1 and sent == (("a",), 5, "", '["a"]')  # Json.text is set by _ready
    assert sql_text.for_sqlite("SELECT ?1 WHERE id IN (?1)", (IntList([1]),)) == (
        "SELECT ?1 WHERE id IN (SELECT value FROM json_each(?1))", ("[1]",))


def test_a_list_statement_is_prepared_once_whatever_its_length(postgres_cluster):
    """The text sent does not depend on the list: one prepared statement per connection."""
    url = postgres_cluster.create_database()
    sql = "SELECT id FROM t WHERE id IN (?1) ORDER BY id"

    async def body(db):
        for n in (0, 1, 5, 1000):
            found = _ids(await db_all(Whole, db, sql, IntList(range(n))))
            assert found == list(range(1, min(n, 6)))
        return [text for known in db.pool.statements.values() for text in known
                if "unnest" in text]

    texts = run(url, body)
    assert set(texts) == {"SELECT id FROM t WHERE id IN (SELECT unnest($1::bigint[])) ORDER BY id"}


def test_the_sqlite_text_does_not_depend_on_the_list():
    sql = "SELECT id FROM t WHERE id IN (?1) AND name NOT IN (?) AND price > ?3"
    texts = {sql_text.for_sqlite(sql, (IntList(range(n)), TextList(["a"] * n), 1.5))[0]
             for n in (0, 1, 7)}
    assert texts == {"SELECT id FROM t WHERE id IN (SELECT value FROM json_each(?1)) AND name "
                     "NOT IN (SELECT value FROM json_each(?2)) AND price > ?3"}
    assert sql_text.for_sqlite(sql, (IntList([1, 2]), TextList(['a"\'']), 1.5))[1] == (
        "[1,2]", '["a\\"\'"]', 1.5)
    assert FloatList([1.5, math.inf, -math.inf, math.nan, 1e300]).json() == (
        "[1.5,9e999,-9e999,null,1e+300]")


def test_usual_arguments_are_left_as_they_are():
    assert usual((1, "text", None, 2.5, True, b"\x00", "\\0", "admin"))  # an enum is its name
    assert not usual((Json({}),))
    assert not usual((JsonList([]),))
    assert not usual((1, "a\x00"))
    assert not usual((1, memoryview(b"a")))  # copied into bytes first
    assert not usual((IntList([1]),))
    assert not usual((TextList(),))
