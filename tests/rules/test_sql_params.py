"""The table of parameter kinds shared by the runtime and the SQL checker."""

from svc.rules import sql_params
from svc.runtime.db import args, sql_text


def test_every_kind_has_a_postgres_cast():
    assert [sql_params.postgres_cast(kind) for kind in sql_params.KINDS] == [
        "bigint", "bigint", "double precision", "boolean", "text", "bytea", "text", "jsonb"]
    assert sql_params.postgres_cast("Task") is None


def test_placeholders():
    assert sql_params.postgres_placeholder(2, "json") == "$2::jsonb"
    assert sql_params.postgres_list_placeholder(1, "enum") == "SELECT unnest($1::text[])"
    assert sql_params.sqlite_list_placeholder(3) == "SELECT value FROM json_each(?3)"



def test_the_runtime_writes_what_the_table_says():
    text, _statements, _sent = sql_text.typed_for_postgres(
        "SELECT ?1, ?2, ?3, ?4, ?5, ?6 WHERE id IN (?7)",
        (1, 2.5, True, "a", b"b", None, args.IntList([1])))
    assert text == ("SELECT $1::bigint, $2::double precision, $3::boolean, $4::text, "
                    "$5::bytea, NULL WHERE id IN (SELECT unnest($6::bigint[]))")
    for cls in (args.IntList, args.FloatList, args.BoolList, args.TextList):
        assert cls.postgres_type in sql_params.LIST_ELEMENT_CASTS.values()
