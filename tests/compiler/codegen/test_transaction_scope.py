"""A function that calls `db_begin` ends the transactions it began (a `finally`); every other
function is generated exactly as it was before transactions were scoped."""

from __future__ import annotations

import ast
import textwrap

from svc.pipeline import Checked, Target, check, generate

SOURCE = """
class Row:
    n: i64

async def count(db: Db) -> Result[i64, Error]:
    match try await db_one[Row](db, "SELECT COUNT(*) AS n FROM t"):
        case Some(row): return ok(row.n)
        case None: return ok(0)

async def add(db: Db, n: i64) -> Result[unit, Error]:
    tx = try await db_begin(db)
    try await db_exec(tx, "INSERT INTO t (n) VALUES (?1)", n)
    try await db_commit(tx)
    return ok(())

async def main() -> Result[unit, Error]:
    db = try await db_open(":memory:")
    try await add(db, 1)
    print(str(try await count(db)))
    return ok(())
"""


def _functions(tmp_path) -> dict[str, ast.AsyncFunctionDef]:
    path = tmp_path / "app.svc"
    path.write_text(textwrap.dedent(SOURCE))
    checked = check(Target(file=str(path)))
    assert isinstance(checked, Checked), checked
    module = generate(checked)[-1][1]
    return {node.name: node for node in module.body if isinstance(node, ast.AsyncFunctionDef)}


def test_a_function_that_begins_a_transaction_ends_it_in_a_finally(tmp_path):
    add = _functions(tmp_path)["add"]
    scope, wrapped = add.body
    assert ast.unparse(scope) == "_svc_txs = []"
    assert isinstance(wrapped, ast.Try) and not wrapped.handlers
    assert ast.unparse(wrapped.finalbody[0]) == "_svc_db.end_transactions(_svc_txs)"
    begin = next(node for node in ast.walk(wrapped) if isinstance(node, ast.Call)
                 and ast.unparse(node.func) == "_svc_db.db_begin")
    assert ast.unparse(begin).endswith(f"(db, '{tmp_path / 'app.svc'}:11', _svc_txs)")


def test_functions_without_db_begin_have_no_transaction_scope(tmp_path):
    functions = _functions(tmp_path)
    for name in ("count", "main"):
        text = ast.unparse(functions[name])
        assert "_svc_txs" not in text and "end_transactions" not in text, text
        assert isinstance(functions[name].body[0], ast.Try)  # only `try`'s boundary
        assert not functions[name].body[0].finalbody
