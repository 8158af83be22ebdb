"""`x REGEXP pattern` on every database, called as generated code calls the builtins: RE2's
patterns on both (SQLite through the function svc gives each connection, PostgreSQL through `~`
with the pattern checked by RE2 first), a bad pattern an `invalid` error that writes nothing,
and PostgreSQL's own refusals (SQLSTATE 2201B) `invalid` too."""

from __future__ import annotations

import asyncio


from svc.rules import patterns
from svc.runtime.db import close_all, db_all, db_begin, db_commit, db_exec, db_one, db_open
from svc.runtime.db import regexp, sql_text
from svc.runtime.lib.support import SvcError

NAMES = ("db_all[str?]", "str", True)
COUNT = ("db_one[i64]", "i64", True)


def run(url: str, body):
    """Open `url`, make table t (names ann, bob, a line break, NULL), run `body(db)`, close."""
    async def main():
        db = await db_open(url)
        assert not isinstance(db, SvcError), db
        try:
            await db_exec(db, "CREATE TABLE t (id BIGINT PRIMARY KEY, name TEXT, n BIGINT)")
            for i, name in enumerate(["ann", "bob", "two\nlines", None], 1):
                assert await db_exec(db, "INSERT INTO t (id, name, n) VALUES (?1, ?2, 0)",
                                     i, name) == 1
            return await body(db)
        finally:
            close_all()

    return asyncio.run(main())


def test_patterns_match_alike(url):
    async def body(db):
        return [await db_all(NAMES, db, sql, *args) for sql, args in [
            ("SELECT name FROM t WHERE name REGEXP ?1 ORDER BY id", ("^[ab]",)),
            ("SELECT name FROM t WHERE name NOT REGEXP ?1 ORDER BY id", ("n",)),
            ("SELECT name FROM t WHERE name REGEXP ?1 ORDER BY id", (r"\bbob\b|^t\w+\s",)),
            ("SELECT name FROM t WHERE name REGEXP ?1 ORDER BY id", (r"(?i)^ANN$",)),
            ("SELECT name FROM t WHERE name REGEXP ?1 ORDER BY id", ("^b.{1,255}b$",)),
            ("SELECT name FROM t WHERE name REGEXP 'b$' ORDER BY id", ()),
            ("SELECT name FROM t WHERE ?1 IS NULL OR name REGEXP ?1 ORDER BY id", (None,)),
            ("SELECT name FROM t WHERE name REGEXP ?1", (None,)),
        ]]

    assert run(url, body) == [["ann", "bob"], ["bob"], ["bob", "two\nlines"], ["ann"], ["bob"],
                              ["bob"], ["ann", "bob", "two\nlines", None], []]


def test_a_bad_pattern_is_invalid_writes_nothing_and_the_tx_goes_on(url):
    bad = ["(a", "[z-a]", "a{256}", "x**", r"(?<=a)b", r"(a)\1"]

    async def body(db):
        errors = [await db_exec(db, "UPDATE t SET n = 1 WHERE name REGEXP ?1", p) for p in bad]
        tx = await db_begin(db)
        first = await db_exec(tx, "UPDATE t SET n = 2 WHERE id = 1")
        inside = await db_exec(tx, "UPDATE t SET n = 3 WHERE name REGEXP ?1", "(")
        after = await db_exec(tx, "UPDATE t SET n = 4 WHERE id = 2")
        committed = await db_commit(tx)
        counts = await db_all(("db_all[i64]", "i64", False), db, "SELECT n FROM t ORDER BY id")
        return errors, (first, inside, after, committed), counts

    errors, tx, counts = run(url, body)
    assert [e.message for e in errors] == [
        "invalid regular expression: missing ): (a",
        "invalid regular expression: invalid character class range: z-a",
        "invalid regular expression: repetition count above 255: {256}",
        "invalid regular expression: bad repetition operator: **",
        "invalid regular expression: invalid perl operator: (?<=",
        "invalid regular expression: invalid escape sequence: \\1"]
    for error in errors + [tx[1]]:
        assert isinstance(error, SvcError) and error.kind == "invalid", error
        assert error.detail.startswith(f"invalid error: {error.message} (in SQL: UPDATE t SET")
    assert (tx[0], tx[2], tx[3]) == (1, 1, None)
    assert counts == [2, 4, 0, 0]


def test_regexp_compares_text(url):
    async def body(db):
        return await db_one(COUNT, db, "SELECT COUNT(*) FROM t WHERE id REGEXP ?1", "1")

    error = run(url, body)
    assert isinstance(error, SvcError) and error.kind == "database", error


def test_postgres_gets_word_boundaries_as_it_writes_them():
    text, _statements, sent = sql_text.typed_for_postgres(
        "SELECT name FROM t WHERE name REGEXP ?1 AND name NOT REGEXP ?2 AND note REGEXP ?1",
        (r"\bann\b[\\b]\\b", "x"))
    assert text == ("SELECT name FROM t WHERE name ~ $1::text AND name !~ $2::text AND note "
                    "~ $1::text")
    assert sent == (r"\yann\y[\\b]\\b", "x")


def test_a_pattern_postgresql_refuses_is_invalid_and_aborts_its_transaction(postgres_cluster):
    """RE2 takes a named group, PostgreSQL does not (SQLSTATE 2201B): `invalid`, with
    PostgreSQL's message; as any failed statement there, it aborts the transaction."""
    url = postgres_cluster.create_database()

    async def body(db):
        refused = await db_all(NAMES, db, "SELECT name FROM t WHERE name REGEXP ?1", "(?P<x>a)")
        tx = await db_begin(db)
        inside = await db_exec(tx, "UPDATE t SET n = 1 WHERE name REGEXP ?1", "(?P<x>a)")
        after = await db_exec(tx, "UPDATE t SET n = 2")
        return refused, inside, after

    refused, inside, after = run(url, body)
    for error in (refused, inside):
        assert isinstance(error, SvcError) and error.kind == "invalid", error
        assert error.message.startswith("invalid regular expression: ")
    assert isinstance(after, SvcError) and "aborted" in after.message


def test_run_time_patterns_are_kept_boundedly():
    for i in range(patterns.RUN_TIME_PATTERNS + 10):
        assert regexp.sqlite_regexp(f"^{i}$", str(i))
    assert len(patterns._AT_RUN_TIME) <= patterns.RUN_TIME_PATTERNS
    assert len(regexp._known) <= regexp._KNOWN_LIMIT
    assert regexp.sqlite_regexp(None, "x") is None and regexp.sqlite_regexp("x", None) is None
