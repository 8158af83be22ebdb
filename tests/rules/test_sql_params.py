"""The table of parameter kinds shared by the runtime and the SQL checker."""

from svc.rules import sql_params


def test_every_kind_has_a_postgres_cast():
    assert [sql_params.postgres_cast(kind) for kind in sql_params.KINDS] == [
        "bigint", "bigint", "double precision", "boolean", "text", "bytea", "text", "jsonb"]
    assert sql_params.postgres_cast("Task") is None


def test_placeholders():
    assert sql_params.postgres_placeholder(2, "json") == "$2::jsonb"
    assert sql_params.postgres_list_placeholder(1, "enum") == "SELECT unnest($1::text[])"
    assert sql_params.sqlite_list_placeholder(3) == "SELECT value FROM json_each(?3)"

