"""One suite of row mapping, placeholders and error kinds, run against every database:
an SQLite file and a database of the session's private PostgreSQL cluster. A program written
once must see the same values and the same kinds of errors on both."""

from __future__ import annotations

import asyncio

import pytest

from svc.runtime.db import close_all, db_all, db_dialect, db_exec, db_one, db_open
from svc.runtime.lib.support import SvcError

#: Column types per dialect, so one table holds every svc scalar.
TYPES = {
    "sqlite": {"int": "INTEGER", "float": "REAL", "bool": "INTEGER", "bytes": "BLOB"},
    "postgresql": {"int": "BIGINT", "float": "DOUBLE PRECISION", "bool": "BOOLEAN",
                   "bytes": "BYTEA"},
}


def svc_class(name: str, *fields: tuple[str, str, bool]) -> type:
    """A class as generated code defines it (the row mapper reads `__svc_fields__`)."""
    def init(self, **values):
        self.__dict__.update(values)
    return type(name, (), {"__svc_fields__": fields, "__init__": init,
                           "__repr__": lambda self: f"{name}({self.__dict__})"})


Item = svc_class("Item", ("id", "i64", False), ("small", "i32", False), ("price", "f64", False),
                 ("ok", "bool", False), ("name", "str", False), ("data", "bytes", False),
                 ("note", "str", True))
Small = svc_class("Small", ("small", "i32", False))
Flag = svc_class("Flag", ("ok", "bool", False))
Whole = svc_class("Whole", ("id", "i64", False))
Named = svc_class("Named", ("name", "str", False))
Price = svc_class("Price", ("price", "f64", False))


def run(url: str, body):
    """Open `url`, make the items table in its dialect, run `body(db, dialect)`, close."""
    async def main():
        db = await db_open(url)
        assert not isinstance(db, SvcError), db
        try:
            t = TYPES[db_dialect(db)]
            made = await db_exec(db, f"CREATE TABLE items (id {t['int']} PRIMARY KEY, "
                                     f"small {t['int']} NOT NULL, price {t['float']} NOT NULL, "
                                     f"ok {t['bool']} NOT NULL, name TEXT NOT NULL UNIQUE "
                                     f"CHECK (name <> ''), data {t['bytes']} NOT NULL, note TEXT)")
            assert made == 0, made
            made = await db_exec(db, f"CREATE TABLE tags (id {t['int']} PRIMARY KEY, item "
                                     f"{t['int']} NOT NULL REFERENCES items(id))")
            assert made == 0, made
            return await body(db, db_dialect(db))
        finally:
            close_all()

    return asyncio.run(main())


def _true(dialect: str):
    return True if dialect == "postgresql" else 1


async def _add(db, dialect, id, name, note=None, price=2.5):
    return await db_exec(db, "INSERT INTO items (id, small, price, ok, name, data, note) "
                             "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                         id, 7, price, _true(dialect), name, b"\x00\xff", note)


def test_every_scalar_maps_to_its_field(url):
    async def body(db, dialect):
        assert await _add(db, dialect, 1, "one", "a note") == 1
        assert await _add(db, dialect, 2, "two", price=3) == 1  # an integer for an f64
        rows = await db_all(Item, db, "SELECT * FROM items ORDER BY id")
        missing = await db_one(Item, db, "SELECT * FROM items WHERE id = ?1", 99)
        return dialect, rows, missing

    dialect, rows, missing = run(url, body)
    assert [(r.id, r.small, r.price, r.ok, r.name, r.data, r.note) for r in rows] == [
        (1, 7, 2.5, True, "one", b"\x00\xff", "a note"),
        (2, 7, 3.0, True, "two", b"\x00\xff", None)]
    assert type(rows[1].price) is float and type(rows[0].ok) is bool
    assert missing is None and dialect in ("sqlite", "postgresql")


def test_placeholders_by_number_and_in_order_and_not_inside_text(url):
    async def body(db, dialect):
        await _add(db, dialect, 1, "what?")
        await _add(db, dialect, 2, "x")
        by_number = await db_all(Whole, db, "SELECT id FROM items WHERE id = ?2 OR id = ?1 "
                                            "ORDER BY id", 1, 2)
        in_order = await db_all(Whole, db, "SELECT id FROM items WHERE id = ? OR name = ?",
                                2, "what?")
        literal = await db_all(Named, db, "SELECT name FROM items WHERE name = 'what?' -- ?\n"
                                          "AND id = ?1 /* ? */", 1)
        counted = await db_one(Whole, db, "SELECT COUNT(*) AS id FROM items WHERE name <> ?1",
                               "x")
        summed = await db_one(Whole, db, "SELECT SUM(id) AS id FROM items")
        return by_number, in_order, literal, counted, summed

    by_number, in_order, literal, counted, summed = run(url, body)
    assert [r.id for r in by_number] == [1, 2] and {r.id for r in in_order} == {1, 2}
    assert [r.name for r in literal] == ["what?"]
    assert counted.id == 1 and summed.id == 3


def test_change_counts_and_returning(url):
    async def body(db, dialect):
        counts = [await _add(db, dialect, i, f"n{i}") for i in (1, 2, 3)]
        updated = await db_exec(db, "UPDATE items SET small = small + 1 WHERE id > ?1", 1)
        deleted = await db_exec(db, "DELETE FROM items WHERE id = ?1", 3)
        nothing = await db_exec(db, "UPDATE items SET small = 0 WHERE id = ?1", 42)
        selected = await db_exec(db, "SELECT id FROM items")
        returned = await db_one(Small, db, "UPDATE items SET small = 40 WHERE id = ?1 "
                                           "RETURNING small", 2)
        return counts, updated, deleted, nothing, selected, returned

    counts, updated, deleted, nothing, selected, returned = run(url, body)
    assert counts == [1, 1, 1] and updated == 2 and deleted == 1 and nothing == 0
    assert selected == 0 and returned.small == 40


def test_values_that_do_not_fit_name_the_column_and_field(url):
    async def body(db, dialect):
        await _add(db, dialect, 1, "one")
        return [
            await db_one(Small, db, "SELECT 3000000000 AS small"),
            await db_one(Whole, db, "SELECT 'abc' AS id"),
            await db_one(Whole, db, "SELECT NULL AS id"),
            await db_one(Whole, db, "SELECT name FROM items"),
            await db_one(Price, db, "SELECT 'x' AS price"),
            await db_one(Whole, db, "SELECT 2.5 AS id"),
        ]

    errors = run(url, body)
    assert all(isinstance(e, SvcError) and e.kind == "database" for e in errors), errors
    texts = [e.message for e in errors]
    assert "column 'small' holds INTEGER value 3000000000, outside the i32 range" in texts[0]
    assert "column 'id' holds TEXT value 'abc', does not fit for field Whole.id (i64)" in texts[1]
    assert "column 'id' is NULL but field Whole.id is i64, not i64?" in texts[2]
    assert "query result has no column 'id' for field Whole.id" in texts[3]
    assert "column 'price' holds TEXT value 'x'" in texts[4]
    assert "column 'id' holds REAL value 2.5" in texts[5]


def test_error_kinds_are_the_same_on_every_database(url):
    async def body(db, dialect):
        await _add(db, dialect, 1, "one")
        return [
            await db_exec(db, "SELEKT 1"),
            await _add(db, dialect, 1, "again"),  # primary key
            await _add(db, dialect, 2, "one"),  # unique
            await db_exec(db, "INSERT INTO items (id, small, price, ok, name, data) "
                              "VALUES (3, NULL, 1.0, ?1, 'z', ?2)", _true(dialect), b""),
            await _add(db, dialect, 4, ""),  # check
            await db_exec(db, "INSERT INTO tags (id, item) VALUES (1, 99)"),  # foreign key
            await db_all(Whole, db, "SELECT id FROM missing_table"),
            await db_exec(db, "INSERT INTO tags (id, item) VALUES (1, 1); SELECT 1"),
        ]

    errors = run(url, body)
    kinds = [e.kind if isinstance(e, SvcError) else e for e in errors]
    assert kinds == ["database", "conflict", "conflict", "invalid", "invalid", "conflict",
                     "database", "database"]
    assert "syntax error" in errors[0].message
    assert "missing_table" in errors[6].message
    assert "one statement per call" in errors[7].message


def test_an_unreachable_database_is_a_database_error_from_db_open(postgres_cluster):
    async def main():
        missing = await db_open(postgres_cluster.url("no_such_database"))
        closed = await db_open("postgresql://svc:secret@127.0.0.1:1/x")
        short = await db_open(postgres_cluster.url().replace("postgresql://", "postgres://"))
        dialect = db_dialect(short)
        close_all()
        return missing, closed, dialect

    missing, closed, dialect = asyncio.run(main())
    assert dialect == "postgresql"  # the postgres:// spelling too
    assert isinstance(missing, SvcError) and missing.kind == "database"
    assert "no_such_database" in missing.message
    assert closed.kind == "database" and "secret" not in closed.message
    assert "svc:***@127.0.0.1:1" in closed.message


@pytest.mark.parametrize("setting, expected", [(None, 10), ("3", 3), ("0", 10), ("x", 10)])
def test_the_pool_size_comes_from_svc_db_pool_size(postgres_cluster, monkeypatch, setting,
                                                   expected):
    if setting is None:
        monkeypatch.delenv("SVC_DB_POOL_SIZE", raising=False)
    else:
        monkeypatch.setenv("SVC_DB_POOL_SIZE", setting)
    url = postgres_cluster.create_database()

    async def main():
        db = await db_open(url)
        try:
            return db.pool.max_size
        finally:
            close_all()

    assert asyncio.run(main()) == expected
