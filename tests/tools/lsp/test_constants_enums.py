"""Editors on constants and enums: hover shows a constant's type and value and an enum's
members, completion offers them (and `Role.` the members), and go to definition leads from a
use to the constant, the enum and the member."""

from __future__ import annotations

from svc.tools import lsp_index
from tests.tools.lsp.checked import checked

PROGRAM = """\
LIMIT: i64 = 100
enum Role: admin, member

def allowed(r: Role) -> i64:
    match r:
        case Role.admin: return LIMIT
        case Role.member: return 1

def main():
    print(str(allowed(Role.member)))
"""


def test_hover_shows_a_constant_and_an_enum(tmp_path):
    program, file = checked(tmp_path, PROGRAM)
    assert "LIMIT: i64 = 100" in lsp_index.hover_at(program, file, 6, 38).text  # a use
    assert "LIMIT: i64 = 100" in lsp_index.hover_at(program, file, 1, 2).text  # the definition
    assert "enum Role: admin, member" in lsp_index.hover_at(program, file, 2, 7).text
    member = lsp_index.hover_at(program, file, 10, 30).text  # Role.member in main
    assert "enum Role: admin, member" in member and "Role.member" in member
    pattern = lsp_index.hover_at(program, file, 6, 20).text  # case Role.admin
    assert "Role.admin" in pattern


def test_completion_offers_constants_enums_and_members(tmp_path):
    program, file = checked(tmp_path, PROGRAM)
    labels = {c.label: c.kind for c in lsp_index.completions_at(program, file, 10, 5, "    ")}
    assert labels["LIMIT"] == "constant" and labels["Role"] == "enum"
    members = lsp_index.completions_at(program, file, 10, 10, "    Role.")
    assert [(c.label, c.kind) for c in members] == [("admin", "enum_member"),
                                                    ("member", "enum_member")]


def test_go_to_definition_of_a_constant_an_enum_and_a_member(tmp_path):
    program, file = checked(tmp_path, PROGRAM)
    constant = lsp_index.definition_at(program, file, 6, 38)
    assert (constant.line, constant.col) == (1, 1)
    enum = lsp_index.definition_at(program, file, 10, 24)  # `Role` of Role.member
    assert (enum.line, enum.col) == (2, 6)
    member = lsp_index.definition_at(program, file, 10, 30)
    assert (member.line, member.col) == (2, 19)
    in_case = lsp_index.definition_at(program, file, 6, 20)  # `admin` of case Role.admin
    assert (in_case.line, in_case.col) == (2, 12)
    typed = lsp_index.definition_at(program, file, 4, 16)  # the parameter's type `Role`
    assert (typed.line, typed.col) == (2, 6)


def test_symbols_list_constants_and_enums_with_their_members(tmp_path):
    program, file = checked(tmp_path, PROGRAM)
    module = lsp_index.module_of(program, file)
    found = {s.name: s for s in lsp_index.symbols(module, program)}
    assert found["LIMIT"].kind == "constant"
    assert [m.name for m in found["Role"].children] == ["admin", "member"]
