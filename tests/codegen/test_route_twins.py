"""Route handlers that never await get a plain-`def` twin in the route table (the fast path)."""

from __future__ import annotations

import ast
import inspect
import textwrap

from svc.compiler.codegen import generate
from svc.compiler.driver import compile_program
from svc.loader import compile_checked, load_namespace

SOURCE = """
class User:
    id: i64
    name: str

@get("/computed")
async def computed() -> Result[User, Error]:
    return ok(User(id=1, name="ada"))

@get("/awaits")
async def awaits() -> Result[User, Error]:
    return await computed()

async def main() -> Result[unit, Error]:
    return ok(())
"""


def _program(tmp_path):
    path = tmp_path / "app.svc"
    path.write_text(textwrap.dedent(SOURCE))
    program, diagnostics, _sources = compile_program(file=str(path), project=None)
    assert program is not None, diagnostics
    return program


def test_only_await_free_handlers_get_a_sync_twin(tmp_path):
    module = generate(_program(tmp_path))[-1][1]
    names = {node.name for node in module.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    assert "_svc_sync_computed" in names
    assert "_svc_sync_awaits" not in names


def test_route_table_uses_the_twin_and_svc_callers_still_await(tmp_path):
    namespace = load_namespace(compile_checked(_program(tmp_path)))
    routes = {route.path: route.handler for route in namespace["_svc_ROUTES"]}
    assert not inspect.iscoroutinefunction(routes["/computed"])
    assert routes["/computed"]().name == "ada"
    assert inspect.iscoroutinefunction(routes["/awaits"])
    coro = routes["/awaits"]()
    try:
        coro.send(None)
    except StopIteration as done:
        assert done.value.id == 1
