"""Whether a column's database type fits the svc type it fills: the row mapper's rules
(svc.runtime.db.rows), seen from the types a database declares instead of the values.

Only a certain mismatch is reported. On SQLite a column's declared type gives only an
affinity (SQLite's rules: `INT` → integer, `CHAR`/`CLOB`/`TEXT` → text, `BLOB` → blob,
`REAL`/`FLOA`/`DOUB` → real, else numeric), and a numeric column (`DATETIME`, `JSON`) may hold
anything, so it fits every field. On PostgreSQL a type the table below does not know (a
user's enum type, a domain) fits too.
"""

from __future__ import annotations

import re

from svc.compiler.svctypes import (
    BOOL, BYTES, F64, I32, I64, STR, ClassRef, EnumRef, ListOf, MapOf, Type,
)

_INTS = {"smallint", "integer", "bigint"}
_TEXTS = {"text", "character varying", "character", "name", "citext", "\"char\""}
_POSTGRES_FAMILIES = {
    "integer": _INTS | {"numeric"},
    "real": _INTS | {"numeric", "real", "double precision"},
    "bool": {"boolean"},
    "text": _TEXTS,
    "bytes": {"bytea"},
    "json": {"json", "jsonb"} | _TEXTS,
}
#: The PostgreSQL types the check knows: any other fits every field.
_POSTGRES_KNOWN = set().union(*_POSTGRES_FAMILIES.values()) | {
    "uuid", "date", "time without time zone", "time with time zone",
    "timestamp without time zone", "timestamp with time zone", "interval", "inet", "cidr",
    "macaddr", "money", "bit", "bit varying", "xml", "tsvector", "point", "oid"}
#: SQLite affinities a field refuses (from the row mapper: what each field type refuses).
_SQLITE_REFUSES = {
    "integer": {"text", "blob", "real"},
    "real": {"text", "blob"},
    "bool": {"text", "blob", "real"},
    "text": {"integer", "real", "blob"},
    "bytes": {"integer", "real", "text"},
    "json": {"integer", "real", "blob"},
}


def family(t: Type) -> str | None:
    """The group of svc types the database sees alike, or None for a type no column fills."""
    if t in (I64, I32):
        return "integer"
    if t == F64:
        return "real"
    if t == BOOL:
        return "bool"
    if t == STR or isinstance(t, EnumRef):
        return "text"
    if t == BYTES:
        return "bytes"
    if isinstance(t, (ListOf, MapOf, ClassRef)):
        return "json"
    return None


def fits(dialect: str, db_type: str, t: Type) -> bool:
    kind = family(t)
    if kind is None:
        return True
    if dialect == "sqlite":
        return sqlite_affinity(db_type) not in _SQLITE_REFUSES[kind]
    name = postgres_base(db_type)
    return name not in _POSTGRES_KNOWN or name in _POSTGRES_FAMILIES[kind]


def advice(dialect: str, db_type: str, t: Type) -> str:
    """A way out, where there is one."""
    if dialect == "postgresql" and family(t) == "text" and postgres_base(db_type) in _POSTGRES_KNOWN:
        return "; convert it in the query (CAST(col AS text))"
    if family(t) == "json":
        return ("; a List, Map or class field reads a JSON column (jsonb on PostgreSQL, TEXT "
                "on SQLite)")
    return ""


def sqlite_affinity(declared: str) -> str:
    """SQLite's affinity of a declared column type (its own rules, in their order)."""
    upper = declared.upper()
    if "INT" in upper:
        return "integer"
    if any(word in upper for word in ("CHAR", "CLOB", "TEXT")):
        return "text"
    if not upper.strip():
        return "none"  # a column declared without a type holds anything
    if "BLOB" in upper:
        return "blob"
    if any(word in upper for word in ("REAL", "FLOA", "DOUB")):
        return "real"
    return "numeric"


def postgres_base(name: str) -> str:
    """`character varying(240)` → `character varying`; `integer[]` stays an array."""
    return re.sub(r"\(.*?\)", "", name).strip()
