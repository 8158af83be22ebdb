"""The SQL checker prepares exactly the text the runtime sends: for the same SQL, the text the
checker writes from the arguments' svc types (compiler/sql/dialect_text.py) equals the text
the runtime writes from their values (runtime/db/sql_text.py), on both databases. (The
compiler does not import the runtime; this test holds the two together.)"""

from __future__ import annotations

import pytest

from svc.compiler.sql.dialect_text import argument_kinds, for_dialect
from svc.compiler.svctypes import BOOL, F64, I64, NONE, STR, ClassRef, EnumRef, ListOf, Opt
from svc.runtime.db import sql_text
from svc.runtime.db.args import IntList, Json, JsonList, TextList

ROLE = EnumRef("Role", ("admin", "member"))
# (SQL, the arguments' svc types, values of those types as generated code passes them)
CASES = [
    ("SELECT id FROM t WHERE id = ?1 AND name = ?2", (I64, STR), (1, "a")),
    ("SELECT ?1 IS NULL OR id = ?1", (Opt(I64),), (5,)),
    ("UPDATE t SET x = ?2 WHERE id = ?1", (I64, NONE), (1, None)),
    ("SELECT * FROM t WHERE ratio > ?1 AND ok = ?2", (F64, BOOL), (0.5, True)),
    ("SELECT * FROM t WHERE role = ?1", (ROLE,), ("admin",)),
    ("SELECT * FROM t WHERE id IN (?1) AND name NOT IN (?2)", (ListOf(I64), ListOf(STR)),
     (IntList((1, 2)), TextList(("a",)))),
    ("UPDATE t SET tags = ?1 WHERE id = ?2", (ListOf(STR), I64), (TextList(("a",)), 3)),
    ("UPDATE t SET tags = ?1 WHERE tag IN (?1)", (ListOf(STR),), (TextList(("a",)),)),
    ("UPDATE t SET doc = ?1, items = ?2", (ClassRef("Doc"), ListOf(ClassRef("Doc"))),
     (Json({"a": 1}), JsonList([{"a": 1}]))),
    ("SELECT name FROM t WHERE name REGEXP ?1 AND x NOT REGEXP ?2", (STR, STR), ("^a", "b")),
    ("SELECT '?1', \"?2\" -- ?3\nFROM t WHERE id = ?", (I64,), (1,)),
    ("SELECT * FROM t WHERE id = ?2", (I64,), (1,)),
]


@pytest.mark.parametrize("sql, types, values", CASES, ids=[c[0][:40] for c in CASES])
def test_the_checker_prepares_what_the_runtime_sends(sql, types, values) -> None:
    kinds = argument_kinds(types)
    runtime_postgres = sql_text.typed_for_postgres(sql, values)
    assert not isinstance(runtime_postgres, Exception), runtime_postgres
    assert for_dialect(sql, "postgresql", kinds).text == runtime_postgres[0]
    if any(isinstance(v, (IntList, TextList, Json)) for v in values):
        runtime_sqlite = sql_text.for_sqlite(sql, values)
        assert not isinstance(runtime_sqlite, Exception), runtime_sqlite
        assert for_dialect(sql, "sqlite", kinds).text == runtime_sqlite[0]
    else:  # sent as written
        assert for_dialect(sql, "sqlite", kinds).text == sql


def test_an_offset_in_the_written_text_is_found_in_the_svc_text() -> None:
    sql = "SELECT id FROM t WHERE id = ?1 AND nmae = ?2"
    text = for_dialect(sql, "postgresql", argument_kinds((I64, STR)))
    at = text.text.index("nmae")
    assert text.original_offset(at) == sql.index("nmae")
    assert text.original_offset(text.text.index("$1")) == sql.index("?1")
