"""`guard("/prefix", f, methods=[...])` through real `svcc` processes: the guard runs on the
routes under the prefix with one of those methods (its 401) and not on the others (served
without it), and `svcc routes` shows it with its methods."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers.svc_process import run_to_end, start

PROGRAM = """\
class Item:
    name: str

class Writer:
    name: str

guard("/items", can_write, methods=["POST", "PUT", "PATCH", "DELETE"])

def can_write(h: Headers) -> Result[Writer, Error]:
    match header(h, "authorization"):
        case Some(token): return ok(Writer(name=token))
        case None: return unauthorized("sign in to write")

@get("/items")
async def items() -> Result[List[Item], Error]:
    return ok([Item(name="first")])

@get("/items/{id}")
async def item(id: i64) -> Result[Item, Error]:
    return ok(Item(name=str(id)))

@post("/items")
async def add(item: Item, writer: Writer) -> Result[str, Error]:
    return ok(f"{item.name} by {writer.name}")

@delete("/items/{id}")
async def remove(id: i64) -> Result[unit, Error]:
    return ok(())

async def main() -> Result[unit, Error]:
    db = try await db_open(":memory:")
    return await serve(db, try parse_i64(env("SVC_PORT", "8080")))
"""


@pytest.fixture
def program(tmp_path: Path) -> Path:
    path = tmp_path / "items.svc"
    path.write_text(PROGRAM)
    return path


def test_the_guard_runs_on_the_chosen_methods_only(program: Path) -> None:
    server = start([str(program)], cwd=program.parent)
    try:
        refused = server.request("POST", "/items", {"name": "x"})
        assert refused.status == 401 and refused.json() == {"error": "sign in to write"}
        assert server.request("DELETE", "/items/3").status == 401
        added = server.request("POST", "/items", {"name": "x"}, headers={"Authorization": "ada"})
        assert added.status == 200 and added.json() == "x by ada"
        assert server.request("DELETE", "/items/3", headers={"Authorization": "ada"}).status \
            == 204
        # reads are not guarded
        assert server.request("GET", "/items").json() == [{"name": "first"}]
        assert server.request("GET", "/items/7").json() == {"name": "7"}
        assert server.request("HEAD", "/items/7").status == 200
    finally:
        server.stop()


def test_svcc_routes_shows_the_guard_with_its_methods(program: Path) -> None:
    result = run_to_end(["routes", str(program)])
    assert result.returncode == 0, result.stderr
    rows = [re.split(r"\s{2,}", line.strip()) for line in result.stdout.splitlines()]
    table = {(r[0], r[1]): r[2:] for r in rows[1:]}
    written = "can_write (prefix /items, POST PUT PATCH DELETE)"
    assert table[("POST", "/items")] == ["add", written]
    assert table[("DELETE", "/items/{id}")] == ["remove", written]
    assert table[("GET", "/items")] == ["items", "-"]
    assert table[("GET", "/items/{id}")] == ["item", "-"]


def test_a_get_handler_asking_for_the_writer_is_an_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.svc"
    bad.write_text(PROGRAM.replace("async def items()", "async def items(w: Writer)"))
    result = run_to_end(["check", str(bad)])
    assert result.returncode == 1
    assert ("handler 'items' takes 'w: Writer', the value of guard 'can_write', but no guard "
            "applies to GET /items") in result.stderr
    assert "Traceback" not in result.stderr
