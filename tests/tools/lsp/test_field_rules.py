"""Editors on field rules: hovering a field (or one of its rules) shows the field with its
rules as written and what each says to a value that breaks it; hovering the class shows the
rules above their fields."""

from __future__ import annotations

from svc.tools import lsp_index
from tests.tools.lsp.checked import checked

PROGRAM = """\
class Order:
    @length(1, 240)
    @pattern("[a-z ]+")
    title: str
    @range(-5, 5)
    score: i64?
    done: bool

def main():
    print(Order(title="a", score=None, done=False).title)
"""


def test_hovering_a_field_shows_its_rules(tmp_path):
    program, file = checked(tmp_path, PROGRAM)
    text = lsp_index.hover_at(program, file, 4, 6).text  # on `title`
    assert "@length(1, 240)\n@pattern(\"[a-z ]+\")\ntitle: str" in text
    assert "`@length`: must be 1 to 240 bytes long; `@pattern`: must match [a-z ]+" in text
    score = lsp_index.hover_at(program, file, 6, 6).text
    assert "@range(-5, 5)\nscore: i64?" in score and "must be between -5 and 5" in score
    done = lsp_index.hover_at(program, file, 7, 6).text
    assert "done: bool" in done and "@" not in done and "checked" not in done


def test_hovering_a_rule_shows_its_field(tmp_path):
    program, file = checked(tmp_path, PROGRAM)
    text = lsp_index.hover_at(program, file, 2, 7).text  # on `@length`
    assert "title: str" in text and "must be 1 to 240 bytes long" in text


def test_hovering_the_class_shows_each_fields_rules_above_it(tmp_path):
    program, file = checked(tmp_path, PROGRAM)
    text = lsp_index.hover_at(program, file, 1, 8).text
    assert ("class Order:\n    @length(1, 240)\n    @pattern(\"[a-z ]+\")\n    title: str\n"
            "    @range(-5, 5)\n    score: i64?\n    done: bool") in text
