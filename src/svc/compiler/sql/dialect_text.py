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
from typing import Callable

from svc.compiler.svctypes import (
    BOOL, BYTES, F64, I32, I64, NONE, STR, ClassRef, EnumRef, ListOf, MapOf, Opt, Type, View,
)
from svc.rules.sql_params import (
    postgres_list_placeholder, postgres_placeholder, sqlite_list_placeholder,
)
from svc.rules.sql_text import in_parentheses, placeholders, postgres_operators, scan

_SCALAR_KINDS = {I64: "i64", I32: "i32", F64: "f64", BOOL: "bool", STR: "str", BYTES: "bytes",
                 View(BYTES): "bytes"}


def argument_kind(t: Type | None) -> str | None:
    """How an argument of svc type `t` is sent: a kind of svc.rules.sql_params, `null`, or
    `list:<kind>` for a List of values (its values in `IN (?n)`, JSON elsewhere); None when
    unknown."""
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
    if isinstance(t, ListOf):
        element = argument_kind(t.elem)
        if element in ("i64", "i32", "f64", "bool", "str", "enum"):
            return "list:" + element
    if isinstance(t, (ListOf, MapOf, ClassRef)):
        return "json"
    return None


def argument_kinds(types: tuple[Type | None, ...]) -> tuple[str | None, ...]:
    return tuple(argument_kind(t) for t in types)


def lists_in_parentheses(sql: str, kinds: tuple[str | None, ...]) -> set[int]:
    """The numbers of the placeholders alone in `IN (...)` whose argument is a List (of
    values, or of what JSON carries)."""
    return {number for number, start, end in placeholders(sql)
            if number <= len(kinds) and in_parentheses(sql, start, end)
            and (kinds[number - 1] or "").startswith(("list:", "json"))}


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
    """The text the runtime sends to `dialect` for arguments of these kinds (as
    svc.runtime.db.sql_text writes it for their values)."""
    lists = frozenset(n for n, kind in enumerate(kinds, 1) if (kind or "").startswith("list:"))
    written: list[int] = []

    def recorded(write: Callable[[int], str]) -> Callable[[int], str]:
        def placeholder(n: int) -> str:
            text = write(n)
            written.append(len(text))
            return text
        return placeholder

    if dialect == "sqlite" and not lists:
        return DialectText(sql, ())  # sent as written
    if dialect == "sqlite":
        text = scan(sql, recorded(lambda n: f"?{n}"), lists,
                    in_list=recorded(sqlite_list_placeholder))[0]
    else:
        other, alone = _postgres_placeholders(sql, kinds, lists)
        text = postgres_operators(scan(sql, recorded(other), lists, in_list=recorded(alone))[0])
    spots = placeholders(sql)
    return DialectText(text, tuple((start, end - start, length) for (_n, start, end), length
                                   in zip(spots, written)))


def _postgres_placeholders(sql: str, kinds: tuple[str | None, ...], lists: frozenset[int]
                           ) -> tuple[Callable[[int], str], Callable[[int], str]]:
    """PostgreSQL's placeholder writers (elsewhere, alone in IN): a `None` is `NULL` and not
    sent, the others renumbered; a List used both ways is sent twice (its JSON text again)."""
    spots = [(n, in_parentheses(sql, start, end)) for n, start, end in placeholders(sql)
             if n in lists]
    in_list = {n for n, alone in spots if alone}
    elsewhere = {n for n, alone in spots if not alone}
    sent = [i for i, kind in enumerate(kinds) if kind != "null"]
    number = {i + 1: n + 1 for n, i in enumerate(sent)}
    extra = {n: len(sent) + k + 1 for k, n in enumerate(sorted(in_list & elsewhere))}

    def other(n: int) -> str:
        if n > len(kinds):  # no such argument: numbered past the sent ones, as the runtime
            return f"${len(sent) + len(extra) + n - len(kinds)}"
        kind = kinds[n - 1]
        if kind == "null":
            return "NULL"
        if n in lists:
            return postgres_placeholder(extra.get(n, number[n]), "json")
        return postgres_placeholder(number[n], kind or "")

    def alone(n: int) -> str:
        return postgres_list_placeholder(number[n], (kinds[n - 1] or "list:")[5:])

    return other, alone
