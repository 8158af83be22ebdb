"""A call's SQL as the runtime will send it to each database, from the svc types of its
arguments: what the checker prepares.

The runtime rewrites the text by the values it is given (svc.runtime.db.sql_text); the
checker knows their svc types instead, and writes the same text for them, from the same
tables (svc.rules.sql_params): on PostgreSQL `?n` becomes `$n::bigint` (the cast of the
argument's type), a `None` argument the literal `NULL`, a List in `IN (?n)` a subquery over
an array, and `REGEXP` the operator `~`; on SQLite only a List in `IN (?n)` changes (a
subquery over `json_each`).
"""

from __future__ import annotations

from dataclasses import dataclass

from svc.compiler.svctypes import (
    BOOL, BYTES, F64, I32, I64, NONE, STR, ClassRef, EnumRef, ListOf, MapOf, Opt, Type, View,
)
from svc.rules.sql_params import (
    postgres_list_placeholder, postgres_placeholder, sqlite_list_placeholder,
)
from svc.rules.sql_text import in_parentheses, placeholders, scan


def postgres_operators(sql: str) -> str:  # TODO(merge): the runtime's REGEXP rewrite
    return sql

_SCALAR_KINDS = {I64: "i64", I32: "i32", F64: "f64", BOOL: "bool", STR: "str", BYTES: "bytes",
                 View(BYTES): "bytes"}


def argument_kind(t: Type | None, in_list_position: bool) -> str | None:
    """How an argument of svc type `t` is sent: a kind of svc.rules.sql_params, `null`, or
    `list:<kind>` for a List standing for its values in `IN (?n)`; None when unknown."""
    if t is None:
        return None
    if isinstance(t, Opt):
        t = t.inner
    if t == NONE:
        return "null"
    if t in _SCALAR_KINDS:
        return _SCALAR_KINDS[t]
    if isinstance(t, EnumRef):
        return "enum"
    if isinstance(t, ListOf) and in_list_position:
        element = argument_kind(t.elem, False)
        if element in ("i64", "i32", "f64", "bool", "str", "enum"):
            return "list:" + element
    if isinstance(t, (ListOf, MapOf, ClassRef)):
        return "json"
    return None


def argument_kinds(sql: str, types: tuple[Type | None, ...]) -> tuple[str | None, ...]:
    """Each argument's kind, a List's by where its placeholder stands."""
    in_lists = {number for number, start, end in placeholders(sql)
                if in_parentheses(sql, start, end)}
    return tuple(argument_kind(t, i + 1 in in_lists) for i, t in enumerate(types))


@dataclass(frozen=True)
class DialectText:
    """The text for one database, and how to find an offset of it in the svc text."""

    text: str
    #: (start in the svc text, its length there, the length written instead), per placeholder
    rewritten: tuple[tuple[int, int, int], ...]

    def original_offset(self, offset: int) -> int:
        """The offset in the svc text of the character at `offset` of this text."""
        shift = 0
        for start, length, written in self.rewritten:
            if offset < start + shift:
                return offset - shift
            if offset < start + shift + written:
                return start
            shift += written - length
        return offset - shift


def for_dialect(sql: str, dialect: str, kinds: tuple[str | None, ...]) -> DialectText:
    """The text the runtime sends to `dialect` for arguments of these kinds."""
    written: list[int] = []

    def recorded(text: str) -> str:
        written.append(len(text))
        return text

    if dialect == "sqlite":
        text = scan(sql, lambda n: recorded(_sqlite_placeholder(n, kinds)))[0]
    else:
        text = postgres_operators(scan(sql, lambda n: recorded(_postgres_placeholder(n, kinds)))[0])
    spots = placeholders(sql)
    return DialectText(text, tuple((start, end - start, length) for (_n, start, end), length
                                   in zip(spots, written)))


def _sqlite_placeholder(n: int, kinds: tuple[str | None, ...]) -> str:
    kind = kinds[n - 1] if n <= len(kinds) else None
    if kind is not None and kind.startswith("list:"):
        return sqlite_list_placeholder(n)
    return f"?{n}"


def _postgres_placeholder(n: int, kinds: tuple[str | None, ...]) -> str:
    sent = [i for i, kind in enumerate(kinds) if kind != "null"]
    if n > len(kinds):  # no such argument: numbered past the sent ones, as the runtime does
        return f"${len(sent) + n - len(kinds)}"
    number = sent.index(n - 1) + 1 if n - 1 in sent else 0
    kind = kinds[n - 1]
    if kind == "null":
        return "NULL"
    if kind is not None and kind.startswith("list:"):
        return postgres_list_placeholder(number, kind[5:])
    return postgres_placeholder(number, kind or "")
