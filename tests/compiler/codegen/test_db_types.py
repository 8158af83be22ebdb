"""What generated code hands the database builtins: scalars and enums as they are (so a call
without Lists or JSON values is generated exactly as before), each List in its runtime class,
each other List, Map or class in Json/JsonList, `T?` of those through `optional`; `db_all[T]`
the class, or a constant describing a single column; `__svc_fields__` with enum and JSON
entries."""

from __future__ import annotations

import ast
import textwrap

from svc.pipeline import Checked, Target, check, generate

SOURCE = """
enum Role:
    admin
    member

class Address:
    city: str

class Book:
    title: str
    counts: Map[str, i64]

class User:
    id: i64
    role: Role
    boss: Role?
    tags: List[str]
    home: Address?

async def calls(db: Db, id: i64, role: Role, boss: Role?, ids: List[i64], roles: List[Role],
                home: Address?, homes: List[Address], books: List[Book]?, maybe: List[f64]?) -> Result[unit, Error]:
    try await db_exec(db, "UPDATE u SET role = ?2 WHERE id = ?1 AND boss = ?3", id, role, boss)
    try await db_exec(db, "DELETE FROM u WHERE id IN (?1) OR role IN (?2)", ids, roles)
    try await db_exec(db, "UPDATE u SET home = ?1, homes = ?2, books = ?3, f = ?4", home, homes, books, maybe)
    users = try await db_all[User](db, "SELECT * FROM u")
    n = try await db_one[i64](db, "SELECT COUNT(*) FROM u")
    names = try await db_all[str?](db, "SELECT name FROM u")
    first = try await db_one[Role](db, "SELECT role FROM u")
    return ok(())

async def main() -> Result[unit, Error]:
    return ok(())
"""


def _module(tmp_path) -> ast.Module:
    path = tmp_path / "app.svc"
    path.write_text(textwrap.dedent(SOURCE))
    checked = check(Target(file=str(path)))
    assert isinstance(checked, Checked), checked
    return generate(checked)[-1][1]


def _calls(module: ast.Module) -> list[str]:
    fn = next(node for node in module.body
              if isinstance(node, ast.AsyncFunctionDef) and node.name == "calls")
    return [ast.unparse(node) for node in ast.walk(fn) if isinstance(node, ast.Call)
            and ast.unparse(node.func).startswith("_svc_db.db_")]


def test_arguments_are_wrapped_only_when_they_are_lists_or_json(tmp_path):
    calls = sorted(_calls(_module(tmp_path)))
    assert "_svc_db.db_exec(db, 'UPDATE u SET role = ?2 WHERE id = ?1 AND boss = ?3', id, " \
           "role, boss)" in calls
    assert "_svc_db.db_exec(db, 'DELETE FROM u WHERE id IN (?1) OR role IN (?2)', " \
           "_svc_db.IntList(ids), _svc_db.TextList(roles))" in calls
    assert ("_svc_db.db_exec(db, 'UPDATE u SET home = ?1, homes = ?2, books = ?3, f = ?4', "
            "_svc_db.optional(_svc_db.Json, home), _svc_db.JsonList(homes), "
            "_svc_db.optional(_svc_db.JsonList, books, True), "
            "_svc_db.optional(_svc_db.FloatList, maybe))") in calls


def test_single_columns_are_described_by_a_constant(tmp_path):
    calls = _calls(_module(tmp_path))
    assert "_svc_db.db_all(User, db, 'SELECT * FROM u')" in calls
    assert "_svc_db.db_one(('db_one[i64]', 'i64', True), db, 'SELECT COUNT(*) FROM u')" in calls
    assert "_svc_db.db_all(('db_all[str?]', 'str', True), db, 'SELECT name FROM u')" in calls
    assert ("_svc_db.db_one(('db_one[Role]', 'Role', True, 'enum', ('admin', 'member')), db, "
            "'SELECT role FROM u')") in calls


def test_svc_fields_say_enum_and_json(tmp_path):
    module = _module(tmp_path)
    user = next(node for node in module.body if isinstance(node, ast.ClassDef)
                and node.name == "User")
    fields = next(node.value for node in user.body if isinstance(node, ast.Assign)
                  and ast.unparse(node.targets[0]) == "__svc_fields__")
    assert ast.literal_eval(fields) == (
        ("id", "i64", False), ("role", "Role", False, "enum", ("admin", "member")),
        ("boss", "Role", True, "enum", ("admin", "member")),
        ("tags", "List[str]", False, "json"), ("home", "Address", True, "json"))
