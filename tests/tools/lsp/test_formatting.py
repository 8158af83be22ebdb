"""`textDocument/formatting` from `svcc lsp`, asked by the real JSON-RPC client over stdio:
`svcc fmt`'s layout as one edit of the whole (unsaved) document, no edit when it is already
in the layout or does not parse."""

from __future__ import annotations

import pytest

from tests.tools.lsp.lsp_client import LspClient, uri

MESSY = "def main( ):\n  x=1+2   # three\n  print( str(x) )\n"
TIDY = "def main():\n    x = 1 + 2  # three\n    print(str(x))\n"


@pytest.fixture
def client(tmp_path):
    c = LspClient(tmp_path)
    yield c
    if c.process.poll() is None:
        assert c.close() == 0


def format_request(client: LspClient, path) -> list[dict]:
    return client.request("textDocument/formatting", {
        "textDocument": {"uri": uri(path)},
        "options": {"tabSize": 2, "insertSpaces": False}})  # the layout has no options


def apply(text: str, edits: list[dict]) -> str:
    """Apply whole-document edits as an editor does (positions are 0-based lines)."""
    [edit] = edits
    lines = text.splitlines(keepends=True)
    start, end = edit["range"]["start"], edit["range"]["end"]
    def offset(position: dict) -> int:
        return sum(len(line) for line in lines[:position["line"]]) + position["character"]
    return text[:offset(start)] + edit["newText"] + text[offset(end):]


def test_formatting_is_one_edit_of_the_whole_unsaved_document(client, tmp_path) -> None:
    path = tmp_path / "app.svc"
    path.write_text(TIDY)
    client.open(path, MESSY)  # the editor's text, not the file's
    assert client.capabilities["documentFormattingProvider"]  # editors ask only then
    edits = format_request(client, path)
    assert len(edits) == 1
    assert edits[0]["range"] == {"start": {"line": 0, "character": 0},
                                 "end": {"line": 3, "character": 0}}
    assert apply(MESSY, edits) == TIDY


def test_a_document_without_a_final_newline_is_replaced_to_its_very_end(client,
                                                                       tmp_path) -> None:
    path = tmp_path / "app.svc"
    text = MESSY.rstrip("\n") + "  # é"
    client.open(path, text)
    edits = format_request(client, path)
    assert edits[0]["range"]["end"] == {"line": 2, "character": len(text.splitlines()[2])}
    assert apply(text, edits) == TIDY.rstrip("\n") + "  # é\n"


def test_an_already_formatted_document_gets_no_edit(client, tmp_path) -> None:
    path = tmp_path / "app.svc"
    client.open(path, TIDY)
    assert format_request(client, path) == []


def test_a_document_with_a_syntax_error_gets_no_edit_and_keeps_its_diagnostic(
        client, tmp_path) -> None:
    path = tmp_path / "app.svc"
    client.open(path, "def main():\n    x = (1,\n")
    assert client.diagnostics(path)[0][0]["message"] == "'(' was never closed (expected ')')"
    assert format_request(client, path) == []
    client.change(path, MESSY)  # fixed: now it formats
    assert apply(MESSY, format_request(client, path)) == TIDY
