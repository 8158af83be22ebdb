"""A program checked through the one compile pipeline, as the language server checks it: what
the in-process LSP tests (hover, symbols, completion on a checked program) start from."""

from __future__ import annotations

from svc import pipeline


def checked(tmp_path, text: str):
    """`text` as tmp_path/app.svc, checked: (the checked program, the file's path)."""
    entry = tmp_path / "app.svc"
    entry.write_text(text)
    result = pipeline.check(pipeline.Target(file=str(entry)))
    assert isinstance(result, pipeline.Checked), result
    return result.program, str(entry)
