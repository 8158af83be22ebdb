"""Editors on maps and generic classes: hover shows `Page[Task]` and `Map[str, i64]` types
(an instantiation with its own field types), go to definition leads from `Page[Task]` to the
generic class, and completion offers an instantiation's fields after `p.`."""

from __future__ import annotations

from svc.tools import lsp_index
from tests.tools.lsp.checked import checked

PROGRAM = """\
class Task:
    id: i64

class Page[T]:
    items: List[T]
    next: str?

def first(p: Page[Task]) -> Map[str, i64]:
    let m: Map[str, i64] = Map()
    set(m, "n", p.items[0].id)
    return m

def main():
    p = Page[Task](items=[Task(id=1)], next=None)
    counts = first(p)
    print(str(len(counts)))
"""


def test_hover_shows_instantiated_and_map_types(tmp_path):
    program, file = checked(tmp_path, PROGRAM)
    generic = lsp_index.hover_at(program, file, 4, 8).text  # class Page[T]:
    assert "class Page[T]:" in generic and "items: List[T]" in generic
    used = lsp_index.hover_at(program, file, 8, 15).text  # `Page[Task]` of the parameter
    assert "class Page[Task]:" in used and "items: List[Task]" in used
    assert "m: Map[str, i64]" in lsp_index.hover_at(program, file, 9, 9).text
    assert "Page[Task]" in lsp_index.hover_at(program, file, 14, 5).text  # p = ...
    assert "Map[str, i64]" in lsp_index.hover_at(program, file, 15, 5).text  # counts = ...


def test_go_to_definition_of_a_generic_class(tmp_path):
    program, file = checked(tmp_path, PROGRAM)
    in_type = lsp_index.definition_at(program, file, 8, 15)  # Page of Page[Task]
    assert (in_type.line, in_type.col) == (4, 7)
    in_call = lsp_index.definition_at(program, file, 14, 10)  # Page of Page[Task](...)
    assert (in_call.line, in_call.col) == (4, 7)
    argument = lsp_index.definition_at(program, file, 8, 20)  # Task of Page[Task]
    assert (argument.line, argument.col) == (1, 7)


def test_completion_offers_fields_of_an_instantiation_and_the_generic_class(tmp_path):
    program, file = checked(tmp_path, PROGRAM)
    fields = lsp_index.completions_at(program, file, 15, 7, "    p.")
    assert [(c.label, c.detail) for c in fields] == [("items", "List[Task]"), ("next", "str?")]
    labels = {c.label: c for c in lsp_index.completions_at(program, file, 15, 5, "    ")}
    assert labels["Page"].kind == "class" and labels["Page"].detail == "class Page[T]"
    assert labels["Map"].kind == "type"
