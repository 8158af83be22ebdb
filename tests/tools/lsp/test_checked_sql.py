"""`svcc lsp` on checked SQL, over stdio as an editor drives it: in a project that declares its
migrations, a misspelt column is a diagnostic at its place in the string as the user types,
gone once fixed; the server shuts down cleanly (the schemas it kept open are closed)."""

from __future__ import annotations

from tests.tools.lsp.lsp_client import LspClient

APP = """\
class User:
    id: i64
    name: str

@get("/users/{id}")
async def get_user(db: Db, id: i64) -> Result[User?, Error]:
    return await db_one[User](db, "SELECT id, name FROM users WHERE id = ?1", id)

async def main() -> Result[unit, Error]:
    db = try await db_open(":memory:")
    try await db_migrate(db)
    return await serve(db, 8080)
"""


def test_a_misspelt_column_is_shown_in_the_string_as_you_type(tmp_path) -> None:
    (tmp_path / "migrations" / "sqlite").mkdir(parents=True)
    (tmp_path / "migrations" / "sqlite" / "001_users.sql").write_text(
        "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL);\n")
    (tmp_path / "svc.toml").write_text('entry = "app.svc"\n[migrations]\nsqlite = "migrations/sqlite"\n')
    path = tmp_path / "app.svc"
    path.write_text(APP)
    client = LspClient(tmp_path)
    try:
        client.open(path)
        assert client.diagnostics(path)[0] == []
        mark = client.mark()
        client.change(path, APP.replace("SELECT id, name FROM", "SELECT id, nmae FROM"))
        diagnostics, index = client.diagnostics(path, after=mark)
        assert [d["message"] for d in diagnostics] == [
            "SQL error (sqlite): no such column: nmae; did you mean 'name'?"]
        start = diagnostics[0]["range"]["start"]
        line = APP.splitlines()[6]
        assert start == {"line": 6, "character": line.index("name FROM")}
        client.change(path, APP)
        assert client.diagnostics(path, after=index + 1)[0] == []
    finally:
        assert client.close() == 0
