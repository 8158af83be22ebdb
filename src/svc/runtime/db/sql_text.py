"""Reading SQL text without parsing it: statements and placeholders.

PostgreSQL numbers its placeholders `$1`, `$2`, ...; svc programs write `?1` or `?` on every
database, so the text is rewritten for PostgreSQL. Only a `?` outside string literals, quoted
identifiers, dollar-quoted strings and comments is a placeholder, and only a `;` there ends a
statement, so one scan answers both: the rewritten text and how many statements it holds.
(A bare `?` is numbered one past the highest number so far, as SQLite numbers it.)

PostgreSQL must also know each parameter's type, and cannot always tell it from the text
(`?1 IS NULL OR id = ?1`), while SQLite never asks. So the rewritten text casts each
placeholder to the type of the value svc sends (`$1::bigint`), and a `None` becomes the literal
`NULL`, which takes its type from where it stands, as a missing value does on SQLite
(`typed_for_postgres`). The texts are kept by SQL and argument types, so a statement is
rewritten (and prepared) once per combination, not per call.

A List argument (args.py) stands for its values in `col IN (?n)` (or `NOT IN`), and only there:
its placeholder becomes a subquery over the list sent as one parameter, so the text does not
depend on the list's length and an empty list matches nothing. On PostgreSQL that is
`SELECT unnest($n::bigint[])`, on SQLite `SELECT value FROM json_each(?n)` with the list sent
as JSON text (`for_sqlite`, used only when a call has a List argument). A List placeholder
anywhere else is refused (`misplaced_list`) rather than sent to mean something else.
"""

from __future__ import annotations

from svc.runtime.db.args import SqlList
from svc.runtime.db.errors import shorten
from svc.rules.sql_params import postgres_cast
from svc.rules.sql_text import scan as _scan
from svc.runtime.lib.support import SvcError

#: Rewritten texts by original and argument types; bounded by the program's distinct SQL
#: texts, and cleared when a program that builds its SQL at run time makes it grow past this.
_CACHE_LIMIT = 4096

#: PostgreSQL's type for each kind of value an svc argument is (i64, str, f64, bool, bytes),
#: from the table the SQL checker uses too.
_POSTGRES_TYPES: dict[type, str] = {cls: postgres_cast(kind) or "" for cls, kind in (
    (int, "i64"), (str, "str"), (float, "f64"), (bool, "bool"), (bytes, "bytes"))}
_typed: dict[tuple, tuple[str, int, tuple[int, ...], int]] = {}
_for_sqlite: dict[tuple, tuple[str, int]] = {}

#: How the error for a List placeholder outside `IN (...)` begins; the builtins add the .svc
#: line of the call to it, as to the several-statements error.
MISPLACED_LIST = "a List argument stands for its values only in IN (?n)"


def typed_for_postgres(sql: str, args: tuple) -> tuple[str, int, tuple] | SvcError:
    """(the text with typed `$n` placeholders, the number of statements, the arguments to
    send): `None` arguments are written as `NULL` and not sent, the others renumbered; a List
    argument is sent as an array, its placeholder `SELECT unnest($n::type[])`."""
    key = (sql, *map(type, args))
    found = _typed.get(key)
    if found is None:
        if len(_typed) >= _CACHE_LIMIT:
            _typed.clear()
        found = _typed[key] = _typed_text(sql, args)
    text, statements, kept, misplaced = found
    if misplaced:
        return misplaced_list(sql, misplaced)
    if len(kept) != len(args):
        args = tuple([args[i] for i in kept])
    return text, statements, args


def _typed_text(sql: str, args: tuple) -> tuple[str, int, tuple[int, ...], int]:
    kept = tuple(i for i, arg in enumerate(args) if arg is not None)
    number = {i + 1: n + 1 for n, i in enumerate(kept)}

    def placeholder(n: int) -> str:
        if n > len(args):  # no such argument: numbered past the sent ones, as the server
            return f"${len(kept) + n - len(args)}"  # then reports the count
        arg = args[n - 1]
        if arg is None:
            return "NULL"
        if isinstance(arg, SqlList):
            return f"SELECT unnest(${number[n]}::{arg.postgres_type})"
        cast = _POSTGRES_TYPES.get(type(arg))
        return f"${number[n]}::{cast}" if cast else f"${number[n]}"

    text, statements, misplaced = _scan(sql, placeholder, _list_numbers(args))
    return text, statements, kept, misplaced


def for_sqlite(sql: str, args: tuple) -> tuple[str, tuple] | SvcError:
    """The text and arguments for SQLite of a call with a List argument: its placeholder
    becomes `SELECT value FROM json_each(?n)`, the list its JSON text (args.py)."""
    key = (sql, *map(type, args))
    found = _for_sqlite.get(key)
    if found is None:
        if len(_for_sqlite) >= _CACHE_LIMIT:
            _for_sqlite.clear()

        def placeholder(n: int) -> str:
            if n <= len(args) and isinstance(args[n - 1], SqlList):
                return f"SELECT value FROM json_each(?{n})"
            return f"?{n}"

        text, _statements, misplaced = _scan(sql, placeholder, _list_numbers(args))
        found = _for_sqlite[key] = (text, misplaced)
    text, misplaced = found
    if misplaced:
        return misplaced_list(sql, misplaced)
    return text, tuple([a.json() if isinstance(a, SqlList) else a for a in args])


def _list_numbers(args: tuple) -> frozenset[int]:
    return frozenset(i + 1 for i, arg in enumerate(args) if isinstance(arg, SqlList))


def misplaced_list(sql: str, number: int) -> SvcError:
    return SvcError("database", f"{MISPLACED_LIST}: ?{number} is a List, so write "
                                f"`col IN (?{number})` or `col NOT IN (?{number})` "
                                f"(in SQL: {shorten(sql)})")
