"""Route handlers that never await get a plain-`def` twin in the route table (the fast path)."""

from __future__ import annotations

import ast
import inspect
import textwrap

from svc.pipeline import Checked, Compiled, Target, check, compile, generate
from svc.runner import load_namespace

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


def _target(tmp_path) -> Target:
    path = tmp_path / "app.svc"
    path.write_text(textwrap.dedent(SOURCE))
    return Target(file=str(path))


def test_only_await_free_handlers_get_a_sync_twin(tmp_path):
    checked = check(_target(tmp_path))
    assert isinstance(checked, Checked), checked
    module = generate(checked)[-1][1]
    names = {node.name for node in module.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    assert "_svc_sync_computed" in names
    assert "_svc_sync_awaits" not in names


def test_route_table_uses_the_twin_and_svc_callers_still_await(tmp_path):
    compiled = compile(_target(tmp_path))
    assert isinstance(compiled, Compiled), compiled
    namespace = load_namespace(compiled.code)
    routes = {route.path: route.handler for route in namespace["_svc_ROUTES"]}
    assert not inspect.iscoroutinefunction(routes["/computed"])
    assert routes["/computed"]().name == "ada"
    assert inspect.iscoroutinefunction(routes["/awaits"])
    coro = routes["/awaits"]()
    try:
        coro.send(None)
    except StopIteration as done:
        assert done.value.id == 1


def test_the_route_table_is_the_contract_s_description_and_serve_comes_from_the_server(tmp_path):
    from svc.rules.contract import ParamSource, ResultKind, Route
    path = tmp_path / "app.svc"
    path.write_text(textwrap.dedent(SOURCE) + textwrap.dedent('''
        @get("/users/{id}")
        async def user(id: i64, verbose: bool?) -> Result[User?, Error]:
            return ok(None)

        async def serving() -> Result[unit, Error]:
            return await serve(try await db_open(":memory:"), 0)
    '''))
    checked = check(Target(file=str(path)))
    assert isinstance(checked, Checked), checked
    text = ast.unparse(generate(checked)[-1][1])
    assert "from svc.runtime.http import server as _svc_server" in text
    assert "_svc_server.serve(" in text
    compiled = compile(Target(file=str(path)))
    assert isinstance(compiled, Compiled), compiled
    routes = {route.path: route for route in load_namespace(compiled.code)["_svc_ROUTES"]}
    user = routes["/users/{id}"]
    assert type(user) is Route and user.result is ResultKind.JSON_OPTIONAL
    assert [(p.name, p.source, p.type, p.optional) for p in user.params] == [
        ("id", ParamSource.PATH, "i64", False), ("verbose", ParamSource.QUERY, "bool", True)]
