"""The data the language server answers from: the builtin descriptions, the overlay of
unsaved texts, and the definition spans the checker records. (That every builtin's
description matches the reference is tests/docs/test_reference.py's to check.)"""

from __future__ import annotations

from pathlib import Path

from svc import pipeline
from svc.compiler.builtin_table import BUILTINS
from svc.tools import lsp_index


def test_a_builtin_is_described_by_its_signature_and_summary():
    text = lsp_index.describe_builtin("parse_i64")
    assert text is not None and BUILTINS["parse_i64"].signature in text
    assert text.endswith(BUILTINS["parse_i64"].summary)
    assert lsp_index.describe_builtin("no_such_builtin") is None


def test_an_overlay_text_is_checked_instead_of_the_file_on_disk(tmp_path):
    entry = tmp_path / "app.svc"
    entry.write_text("def main():\n    print(1)\n")
    assert isinstance(pipeline.check(pipeline.Target(file=str(entry))), pipeline.Failed)
    fixed = {str(entry.resolve()): 'def main():\n    print("1")\n'}
    assert isinstance(pipeline.check(pipeline.Target(file=str(entry)), fixed), pipeline.Checked)
    assert "print(1)" in entry.read_text()  # the file itself is left alone


def test_a_program_with_type_errors_still_has_its_references(tmp_path):
    entry = tmp_path / "app.svc"
    entry.write_text("def main():\n    x = 1\n    print(x)\n")
    failed = pipeline.check(pipeline.Target(file=str(entry)))
    assert isinstance(failed, pipeline.Failed) and failed.program is not None
    target = lsp_index.definition_at(failed.program, str(entry), 3, 11)
    assert (target.line, target.col) == (2, 5)


def test_included_files_are_recorded(tmp_path):
    (tmp_path / "page.html").write_text("<p>hi</p>")
    entry = tmp_path / "app.svc"
    entry.write_text('def main():\n    print(include_text("page.html"))\n')
    checked = pipeline.check(pipeline.Target(file=str(entry)))
    assert [Path(p).resolve() for p in checked.program.included_files] == [
        (tmp_path / "page.html").resolve()]


def test_config_is_hovered_from_its_record_and_its_result_is_the_class(tmp_path):
    entry = tmp_path / "app.svc"
    entry.write_text("class Settings:\n    port: i64\n\ndef main():\n"
                     "    s = config[Settings]()\n    print(str(s.port))\n")
    checked = pipeline.check(pipeline.Target(file=str(entry)))
    assert isinstance(checked, pipeline.Checked), checked
    builtin = lsp_index.hover_at(checked.program, str(entry), 5, 9)
    assert builtin is not None and builtin.text.startswith("```svc\nconfig[T]() -> T\n```")
    assert builtin.text.endswith(BUILTINS["config"].summary)
    variable = lsp_index.hover_at(checked.program, str(entry), 5, 5)
    assert variable is not None and "s: Settings" in variable.text
