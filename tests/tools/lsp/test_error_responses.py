"""Editors on the error makers of issue 24 and PATCH routes: hover on `with_header`,
`unprocessable`, `too_many_requests` and `error_fields` shows their records' signatures, a
`@patch` handler's hover shows its route, completion offers the new builtins, and the document
symbols list a PATCH route as they list the others."""

from __future__ import annotations

from svc.compiler.builtin_table import BUILTINS
from svc.tools import lsp_index
from tests.tools.lsp.checked import checked

PROGRAM = """\
class Patch:
    title: str

@patch("/notes/{id}")
async def patch_note(id: i64, p: Patch) -> Result[str, Error]:
    if p.title == "":
        let reasons: Map[str, str] = Map()
        set(reasons, "title", "must not be empty")
        return unprocessable("not valid", reasons)
    if id == 0:
        return too_many_requests("slow down", 5)
    return with_header(unauthorized("no token"), "WWW-Authenticate", "Bearer")

def reasons_of(e: Error) -> Map[str, str]:
    return error_fields(e)

def main():
    print("x")
"""


def test_hover_on_the_new_builtins_shows_their_signatures(tmp_path):
    program, file = checked(tmp_path, PROGRAM)
    for line, col, name in ((9, 17, "unprocessable"), (11, 17, "too_many_requests"),
                            (12, 17, "with_header"), (15, 12, "error_fields")):
        hover = lsp_index.hover_at(program, file, line, col)
        assert hover is not None, name
        assert BUILTINS[name].signature in hover.text and BUILTINS[name].summary in hover.text


def test_a_patch_handler_shows_its_route(tmp_path):
    program, file = checked(tmp_path, PROGRAM)
    shown = lsp_index.hover_at(program, file, 5, 12).text  # patch_note
    assert shown.endswith("\n\nroute: `PATCH /notes/{id}`")


def test_completion_offers_the_new_builtins(tmp_path):
    program, file = checked(tmp_path, PROGRAM)
    labels = {c.label for c in lsp_index.completions_at(program, file, 18, 5, "    ")}
    assert {"unprocessable", "too_many_requests", "with_header", "error_fields"} <= labels


def test_document_symbols_list_the_patch_route(tmp_path):
    program, file = checked(tmp_path, PROGRAM)
    module = lsp_index.module_of(program, file)
    names = [s.name for s in lsp_index.symbols(module, program)]
    assert names[:3] == ["Patch", "PATCH /notes/{id}", "patch_note"]
