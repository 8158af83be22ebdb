"""`svcc lsp` on `@python` declarations, over stdio as an editor drives it: hovering the
declaration (its name or its attribute) or a call shows the attribute, the signature and how
the call runs (on the thread pool, or awaited); the document symbols list it; and a project
module that prints when imported does not break the JSON-RPC stream on standard output."""

from __future__ import annotations

import pytest

from tests.tools.lsp.lsp_client import hover_text, serving, uri

APP = """\
@python("html", "escape", error="invalid")
async def escape_html(text: str) -> Result[str, Error]

@python("asyncio", "sleep")
async def nap(seconds: f64) -> Result[unit, Error]

@python("noisy_36", "shout")
async def shout(text: str) -> Result[str, Error]

@get("/echo/{text}")
async def echo(text: str) -> Result[str, Error]:
    try await nap(0.0)
    return await escape_html(text)

async def main() -> Result[unit, Error]:
    db = try await db_open(":memory:")
    return await serve(db, try parse_i64(env("SVC_PORT", "8080")))
"""

ESCAPE = ('```svc\n@python("html", "escape", error="invalid")\n'
          "async def escape_html(text: str) -> Result[str, Error]\n```\n\n"
          "Python function `html.escape`: runs on the thread pool")


@pytest.fixture
def app(tmp_path):
    """A project whose own packages hold a module that prints when it is imported."""
    (tmp_path / "svc.toml").write_text('name = "echo"\nentry = "app.svc"\n')
    packages = tmp_path / ".svc" / "python"
    packages.mkdir(parents=True)
    (packages / "noisy_36.py").write_text("print('imported!')\ndef shout(text):\n"
                                          "    return text.upper()\n")
    path = tmp_path / "app.svc"
    path.write_text(APP)
    return path


@pytest.fixture
def client(app):
    yield from serving(app)


def test_hovers_symbols_and_a_noisy_import(client, app):
    assert hover_text(client, app, APP, "escape_html(text: str)") == ESCAPE
    assert hover_text(client, app, APP, '@python("html"') == ESCAPE
    assert hover_text(client, app, APP, "escape_html(text)") == ESCAPE
    assert hover_text(client, app, APP, "nap(0.0)").endswith(
        "Python function `asyncio.sleep`: awaited on the event loop")
    assert "Python function `noisy_36.shout`" in hover_text(client, app, APP, "shout(text: str)")
    symbols = client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri(app)}})
    details = {s["name"]: s.get("detail") for s in symbols}
    assert details["escape_html"] == ('@python("html", "escape", error="invalid") async def '
                                      "escape_html(text: str) -> Result[str, Error]")
    assert details["nap"].startswith('@python("asyncio", "sleep") async def nap(')
