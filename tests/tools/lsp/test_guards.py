"""`svcc lsp` on guards, over stdio as an editor drives it: hovering a guard (its function, its
name in `@guard(...)` or in `guard("/prefix", ...)`) shows its value and the routes it runs
before; a handler's hover lists each route's guards in order; the prefix declaration shows
its routes; completion inside `@guard(` offers the functions that can be guards; go to
definition from a guard's name; the document symbols list the declaration; broken guard
text never crashes the server."""

from __future__ import annotations

import random

import pytest

from tests.tools.lsp.lsp_client import hover_text, position_of, serving, uri

APP = """\
class User:
    id: i64

class Admin:
    id: i64

guard("/admin", require_user, require_admin)

async def require_user(h: Headers) -> Result[User, Error]:
    match header(h, "authorization"):
        case Some(_): return ok(User(id=1))
        case None: return unauthorized("sign in")

def require_admin(user: User) -> Result[Admin, Error]:
    return ok(Admin(id=user.id))

def helper(n: i64) -> i64:
    return n

@guard(require_user)
@get("/me")
async def me(user: User) -> Result[User, Error]:
    return ok(user)

@get("/admin/stats")
async def stats(admin: Admin) -> Result[i64, Error]:
    return ok(admin.id)

async def main() -> Result[unit, Error]:
    db = try await db_open(":memory:")
    return await serve(db, try parse_i64(env("SVC_PORT", "8080")))
"""


@pytest.fixture
def app(tmp_path):
    path = tmp_path / "app.svc"
    path.write_text(APP)
    return path


@pytest.fixture
def client(app):
    yield from serving(app)


def test_hovering_a_guard_shows_its_value_and_routes(client, app):
    shown = hover_text(client, app, APP, "require_user(h")
    assert "async def require_user(h: Headers) -> Result[User, Error]" in shown
    assert shown.endswith("guard (value `User`) of `GET /me`, `GET /admin/stats`")
    # its name in @guard(...) and in the prefix declaration shows the same
    assert hover_text(client, app, APP, "@guard(require_user)", offset=8) == shown
    assert hover_text(client, app, APP, "require_user, require_admin") == shown
    admin = hover_text(client, app, APP, "require_admin)")
    assert admin.endswith("guard (value `Admin`) of `GET /admin/stats`")


def test_hovering_a_handler_lists_its_guards_in_order(client, app):
    assert hover_text(client, app, APP, "me(user").endswith(
        "route: `GET /me`, guards: require_user")
    assert hover_text(client, app, APP, "stats(admin").endswith(
        "route: `GET /admin/stats`, guards: require_user (prefix /admin), "
        "require_admin (prefix /admin)")


def test_hovering_a_prefix_shows_its_guards_and_routes(client, app):
    assert hover_text(client, app, APP, '"/admin"') == (
        "guards of prefix `/admin`: require_user, require_admin\n\nroutes: `GET /admin/stats`")


def test_completion_in_a_guard_offers_guard_functions(client, app):
    _, mark = client.diagnostics(app)
    text = APP.replace("@guard(require_user)\n", "@guard(req\n")
    client.change(app, text)
    line, character = position_of(text, "@guard(req", offset=len("@guard(req"))
    items = client.at("textDocument/completion", app, line, character)
    labels = {i["label"] for i in (items["items"] if isinstance(items, dict) else items)}
    assert {"require_user", "require_admin"} <= labels
    assert not {"helper", "me", "main", "len"} & labels  # not guards


def test_definition_of_a_guard_name(client, app):
    found = client.at("textDocument/definition", app, *position_of(APP, "require_admin)"))
    line, character = position_of(APP, "require_admin(user")
    assert found["range"]["start"] == {"line": line, "character": character}


def test_document_symbols_list_the_prefix_declaration(client, app):
    symbols = client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri(app)}})
    names = [s["name"] for s in symbols]
    assert names[:3] == ["User", "Admin", "guard /admin"]
    (decl,) = [s for s in symbols if s["name"] == "guard /admin"]
    assert decl["detail"] == "require_user, require_admin"


def test_broken_guards_never_crash_the_server(client, app):
    _, mark = client.diagnostics(app)
    rng = random.Random(24)
    pieces = ["@guard(", "guard(", '"/admin"', "require_user", ",", ")", "(", " ", "\n", "@",
              "User", "Admin", '"/x/"', "nobody"]
    text = APP
    for _ in range(40):
        at = rng.randrange(len(text) + 1)
        cut = rng.randrange(0, 4)
        text = text[:at] + "".join(rng.choice(pieces) for _ in range(rng.randrange(1, 4))) \
            + text[at + cut:]
        client.change(app, text)
        line = rng.randrange(text.count("\n") + 1)
        for method in ("textDocument/hover", "textDocument/definition",
                       "textDocument/completion"):
            client.at(method, app, line, rng.randrange(0, 30))
        client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri(app)}})
    client.change(app, APP)
    client.wait_for("textDocument/publishDiagnostics",
                    lambda p: p["uri"] == uri(app) and p["diagnostics"] == [], mark)
    assert client.process.poll() is None
    assert "Traceback" not in b"".join(client.stderr).decode(errors="replace")


WRITES = APP.replace('guard("/admin", require_user, require_admin)',
                     'guard("/admin", require_user, require_admin, methods=["POST"])').replace(
    'async def stats(admin: Admin) -> Result[i64, Error]:\n    return ok(admin.id)',
    'async def stats() -> Result[i64, Error]:\n    return ok(1)\n\n'
    '@post("/admin/stats")\nasync def reset(admin: Admin) -> Result[i64, Error]:\n'
    '    return ok(admin.id)')


def test_hovers_show_the_methods_of_a_prefix_guard(tmp_path):
    path = tmp_path / "writes.svc"
    path.write_text(WRITES)
    for client in serving(path):
        assert hover_text(client, path, WRITES, "reset(admin").endswith(
            "route: `POST /admin/stats`, guards: require_user (prefix /admin, POST), "
            "require_admin (prefix /admin, POST)")
        assert hover_text(client, path, WRITES, "stats()").endswith("route: `GET /admin/stats`")
        assert hover_text(client, path, WRITES, '"/admin"') == (
            "guards of prefix `/admin` on POST: require_user, require_admin\n\n"
            "routes: `POST /admin/stats`")
