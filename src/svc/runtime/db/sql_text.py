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

A List argument (args.py) stands for its values in `col IN (?n)` (or `NOT IN`): its placeholder
becomes a subquery over the list sent as one parameter, so the text does not depend on the
list's length and an empty list matches nothing. On PostgreSQL that is
`SELECT unnest($n::bigint[])`, on SQLite `SELECT value FROM json_each(?n)` with the list sent
as JSON text (`for_sqlite`, used only when a call has a List or JSON argument). Anywhere else
a List is a JSON value, as a Map or a class argument is: JSON text on SQLite, `$n::jsonb` on
PostgreSQL (a List used both ways is sent twice there, as an array and as JSON). A List whose
elements are not scalars (`JsonList`) in `IN (?n)` is refused (`not_values`) rather than
compared as one JSON text.

PostgreSQL has no REGEXP operator: it is written `~` (`NOT REGEXP` `!~`), and a pattern given
as the placeholder right after it is compiled first with RE2 and sent as PostgreSQL reads it
(regexp.py), so a pattern SQLite would refuse is refused alike, before anything is sent.
"""

from __future__ import annotations

from svc.runtime.db import regexp
from svc.runtime.db.args import FloatList, Json, JsonList, SqlList, not_finite
from svc.runtime.db.errors import shorten
from svc.rules.sql_params import (NOT_VALUES, postgres_cast, postgres_list_placeholder,
                                  postgres_placeholder, sqlite_list_placeholder)
from svc.rules.sql_text import postgres_operators, regexp_placeholders
from svc.rules.sql_text import scan as _scan
from svc.runtime.lib.support import SvcError

#: Rewritten texts by original and argument types; bounded by the program's distinct SQL
#: texts, and cleared when a program that builds its SQL at run time makes it grow past this.
_CACHE_LIMIT = 4096

#: PostgreSQL's type for each kind of value an svc argument is (i64, str, f64, bool, bytes),
#: from the table the SQL checker uses too.
_POSTGRES_TYPES: dict[type, str] = {cls: postgres_cast(kind) or "" for cls, kind in (
    (int, "i64"), (str, "str"), (float, "f64"), (bool, "bool"), (bytes, "bytes"))}

#: How an argument is sent to PostgreSQL: as it is, its JSON text (a Json's or a list's).
_AS_IS, _JSON = "as is", "json"

#: What a PostgreSQL call with a List, a JSON value or a REGEXP pattern needs besides its
#: text: the List in IN (?n) it refuses (or 0), each parameter sent (argument index, how),
#: the indexes of the REGEXP patterns to compile first.
_Special = tuple[int, tuple[tuple[int, str], ...], tuple[int, ...]]
_typed: dict[tuple, tuple[str, int, tuple[int, ...], _Special | None]] = {}
_for_sqlite: dict[tuple, tuple[str, int, tuple[int, ...]]] = {}



def typed_for_postgres(sql: str, args: tuple) -> tuple[str, int, tuple] | SvcError:
    """(the text with typed `$n` placeholders, the number of statements, the arguments to
    send): `None` arguments are written as `NULL` and not sent, the others renumbered; a List
    argument in `IN (?n)` is sent as an array, its placeholder `SELECT unnest($n::type[])`;
    a List elsewhere, a Map or a class as JSON text, its placeholder `$n::jsonb`."""
    key = (sql, *map(type, args))
    found = _typed.get(key)
    if found is None:
        if len(_typed) >= _CACHE_LIMIT:
            _typed.clear()
        found = _typed[key] = _typed_text(sql, args)
    text, statements, kept, special = found
    if special is not None:
        return _special_arguments(sql, args, text, statements, special)
    if len(kept) != len(args):
        args = tuple([args[i] for i in kept])
    return text, statements, args


def _typed_text(sql: str, args: tuple) -> tuple[str, int, tuple[int, ...], _Special | None]:
    patterns = regexp_placeholders(sql)
    sql = postgres_operators(sql)
    lists = _list_numbers(args)
    kept = tuple(i for i, arg in enumerate(args) if arg is not None)
    number = {i + 1: n + 1 for n, i in enumerate(kept)}
    in_list, elsewhere = _uses(sql, lists) if lists else (set(), set())
    twice = sorted(n for n in in_list & elsewhere if isinstance(args[n - 1], SqlList))
    extra = {n: len(kept) + k + 1 for k, n in enumerate(twice)}  # its JSON text, sent again
    sent = len(kept) + len(extra)

    def placeholder(n: int) -> str:
        if n > len(args):  # no such argument: numbered past the sent ones, as the server
            return f"${sent + n - len(args)}"  # then reports the count
        arg = args[n - 1]
        if arg is None:
            return "NULL"
        if isinstance(arg, (SqlList, Json)):
            return postgres_placeholder(extra.get(n, number[n]), "json")
        cast = _POSTGRES_TYPES.get(type(arg))
        return f"${number[n]}::{cast}" if cast else f"${number[n]}"

    def values(n: int) -> str:
        arg = args[n - 1]
        if isinstance(arg, SqlList):
            return postgres_list_placeholder(number[n], arg.kind)
        return placeholder(n)  # a JsonList: refused below

    text, statements, _misplaced = _scan(sql, placeholder, lists, in_list=values)
    if not lists and not patterns and not any(isinstance(arg, Json) for arg in args):
        return text, statements, kept, None
    refused = min((n for n in in_list if isinstance(args[n - 1], JsonList)), default=0)
    sends = [(i, _JSON if isinstance(args[i], Json) or (
        isinstance(args[i], SqlList) and i + 1 in elsewhere and i + 1 not in in_list)
        else _AS_IS) for i in kept]
    sends += [(n - 1, _JSON) for n in twice]
    pattern_indexes = tuple(sorted({n - 1 for n in patterns if n <= len(args)}))
    return text, statements, kept, (refused, tuple(sends), pattern_indexes)


def _special_arguments(sql: str, args: tuple, text: str, statements: int,
                       special: _Special) -> tuple[str, int, tuple] | SvcError:
    """The arguments to send of a call with a List, a JSON value or a REGEXP pattern."""
    refused, sends, patterns = special
    if refused:
        return not_values(sql, refused)
    if patterns:
        args = list(args)  # type: ignore[assignment]
        for i in patterns:
            pattern = regexp.for_postgres(args[i], sql)
            if pattern.__class__ is SvcError:
                return pattern
            args[i] = pattern  # type: ignore[index]
    out = []
    for i, how in sends:
        arg = args[i]
        if how is _JSON:
            if isinstance(arg, Json):
                arg = arg.text
            else:
                if arg.__class__ is FloatList and not arg.finite():
                    return not_finite(sql, i + 1)
                arg = arg.json()
        out.append(arg)
    return text, statements, tuple(out)


def for_sqlite(sql: str, args: tuple) -> tuple[str, tuple] | SvcError:
    """The text and arguments for SQLite of a call with a List or JSON argument: a List's
    placeholder in `IN (?n)` becomes `SELECT value FROM json_each(?n)`; the List, wherever it
    stands, and a Json are sent as their JSON text (args.py)."""
    key = (sql, *map(type, args))
    found = _for_sqlite.get(key)
    if found is None:
        if len(_for_sqlite) >= _CACHE_LIMIT:
            _for_sqlite.clear()
        lists = _list_numbers(args)
        in_list, elsewhere = _uses(sql, lists)
        text = _scan(sql, lambda n: f"?{n}", lists, in_list=sqlite_list_placeholder)[0]
        refused = min((n for n in in_list if isinstance(args[n - 1], JsonList)), default=0)
        floats = tuple(n - 1 for n in sorted(elsewhere & lists)
                       if args[n - 1].__class__ is FloatList)
        found = _for_sqlite[key] = (text, refused, floats)
    text, refused, floats = found
    if refused:
        return not_values(sql, refused)
    for i in floats:
        if not args[i].finite():
            return not_finite(sql, i + 1)
    return text, tuple([a.json() if isinstance(a, SqlList) else a.text if isinstance(a, Json)
                        else a for a in args])


def _list_numbers(args: tuple) -> frozenset[int]:
    return frozenset(i + 1 for i, arg in enumerate(args) if isinstance(arg, (SqlList, JsonList)))


def _uses(sql: str, lists: frozenset[int]) -> tuple[set[int], set[int]]:
    """(the List placeholders alone in `IN (...)`, those written anywhere else)."""
    in_list: set[int] = set()
    elsewhere: set[int] = set()

    def alone(n: int) -> str:
        in_list.add(n)
        return ""

    def other(n: int) -> str:
        if n in lists:
            elsewhere.add(n)
        return ""

    _scan(sql, other, lists, in_list=alone)
    return in_list, elsewhere


def not_values(sql: str, number: int) -> SvcError:
    return SvcError("database", f"{NOT_VALUES}: ?{number} is a List of other values (a class, "
                                f"a List, a T?), which is a JSON value anywhere but in IN "
                                f"(in SQL: {shorten(sql)})")
