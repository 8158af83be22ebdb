"""How each kind of svc value is sent to a database as a parameter: one table for the runtime,
which writes the placeholders (svc.runtime.db.sql_text), and for the SQL checker, which writes
them the same way before preparing a statement (svc.compiler.sql), so the two cannot disagree.

A parameter's kind is what its svc type is to the database:

    i64, i32   an integer                     bigint
    f64        a real number                  double precision
    bool       true or false (1 or 0 on SQLite) boolean
    str        text                           text
    bytes      bytes (and view[bytes])        bytea
    enum       an enum member, by its name    text
    json       a List, Map or class as JSON   jsonb (TEXT holding JSON on SQLite)

On PostgreSQL each placeholder is cast to its kind's type (`$1::bigint`): the server cannot
always tell a parameter's type from the text (`?1 IS NULL OR id = ?1`), and SQLite never asks.

A List of i64, i32, f64, bool, str or an enum in `col IN (?n)` stands for its values: the
placeholder becomes a subquery over the list sent as one parameter (an array on PostgreSQL,
JSON text read by `json_each` on SQLite), so the text is the same for lists of every length.
"""

from __future__ import annotations

#: The kinds of parameter, in the order of the table above.
KINDS = ("i64", "i32", "f64", "bool", "str", "bytes", "enum", "json")

#: PostgreSQL's type for each kind: the cast its placeholder gets.
POSTGRES_CASTS = {"i64": "bigint", "i32": "bigint", "f64": "double precision",
                  "bool": "boolean", "str": "text", "bytes": "bytea", "enum": "text",
                  "json": "jsonb"}

#: The PostgreSQL array type of a List in `col IN (?n)`, by the kind of its elements.
LIST_ELEMENT_CASTS = {"i64": "bigint[]", "i32": "bigint[]", "f64": "double precision[]",
                      "bool": "boolean[]", "str": "text[]", "enum": "text[]"}


def postgres_cast(kind: str) -> str | None:
    """The PostgreSQL type a parameter of `kind` is cast to, or None for an unknown kind."""
    return POSTGRES_CASTS.get(kind)


def postgres_placeholder(sent: int, kind: str) -> str:
    """PostgreSQL's text for a placeholder whose value is the `sent`-th parameter sent, of
    `kind` (`$2::text`)."""
    cast = POSTGRES_CASTS.get(kind)
    return f"${sent}::{cast}" if cast else f"${sent}"


def postgres_list_placeholder(sent: int, kind: str) -> str:
    """PostgreSQL's text for a List placeholder in `IN (...)`, the list sent as an array."""
    return f"SELECT unnest(${sent}::{LIST_ELEMENT_CASTS[kind]})"


def sqlite_list_placeholder(number: int) -> str:
    """SQLite's text for a List placeholder `?number` in `IN (...)`, the list sent as JSON."""
    return f"SELECT value FROM json_each(?{number})"


#: How the error for a List of other elements in `IN (?n)` begins (the runtime's, to which the
#: builtins add the .svc line of the call; the SQL checker's, at the argument).
NOT_VALUES = ("only a List of i64, i32, f64, bool, str or an enum stands for its values in "
              "IN (?n)")
