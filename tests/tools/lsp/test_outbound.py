"""Editors on the outbound HTTP client: hover on `http_get` and `http_send` shows their
records' signatures and summaries, completion offers them (and `http_stub` in a test file),
and a call's result hovers as the Response it is."""

from __future__ import annotations

from svc import pipeline
from svc.compiler.builtin_table import BUILTINS
from svc.tools import lsp_index
from tests.tools.lsp.checked import checked

PROGRAM = """\
async def fetch(url: str) -> Result[str, Error]:
    r = try await http_get(url, headers_of([]))
    s = try await http_send("POST", url, headers_of([]), "{}")
    return ok(body(r) + body(s))

def main():
    print("x")
"""


def test_hover_on_the_client_builtins_shows_their_signatures(tmp_path):
    program, file = checked(tmp_path, PROGRAM)
    for line, col, name in ((2, 19, "http_get"), (3, 19, "http_send")):
        hover = lsp_index.hover_at(program, file, line, col)
        assert hover is not None, name
        assert BUILTINS[name].signature in hover.text and BUILTINS[name].summary in hover.text


def test_hover_on_the_answer_shows_its_type(tmp_path):
    program, file = checked(tmp_path, PROGRAM)
    hover = lsp_index.hover_at(program, file, 2, 5)  # r
    assert hover is not None and "Response[str]" in hover.text


def test_completion_offers_the_client_builtins(tmp_path):
    program, file = checked(tmp_path, PROGRAM)
    labels = {c.label for c in lsp_index.completions_at(program, file, 7, 5, "    ")}
    assert {"http_get", "http_send"} <= labels


def test_completion_in_a_test_file_offers_http_stub(tmp_path):
    (tmp_path / "app.svc").write_text(PROGRAM)
    test_file = tmp_path / "app_test.svc"
    test_file.write_text('def test_one():\n    http_stub("GET", "http://127.0.0.1/x", '
                         'respond(200, ""))\n')
    result = pipeline.check(pipeline.Target(file=str(tmp_path / "app.svc"),
                                            tests=(str(test_file),)))
    assert isinstance(result, pipeline.Checked), result
    labels = {c.label for c in lsp_index.completions_at(result.program, str(test_file), 2, 5,
                                                        "    ")}
    assert "http_stub" in labels
