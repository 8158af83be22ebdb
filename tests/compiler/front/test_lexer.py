"""The lexer: tokens, layout (INDENT/DEDENT), literals and escapes, and its diagnostics."""

from __future__ import annotations

import pytest

from svc.compiler.front.lexer import tokenize
from svc.compiler.source import SourceFile


def lex(text: str):
    tokens, diagnostics = tokenize(SourceFile("t.svc", text))
    return tokens, diagnostics


def kinds(text: str) -> list[str]:
    tokens, diagnostics = lex(text)
    assert diagnostics == []
    return [t.kind for t in tokens]


def errors(text: str) -> list[tuple[int, int, str]]:
    return [(d.span.line, d.span.col, d.message) for d in lex(text)[1]]


def test_blocks_become_indent_and_dedent() -> None:
    text = "def f():\n    if x:\n        pass\n    return\n"
    assert kinds(text) == [
        "def", "name", "(", ")", ":", "newline",
        "indent", "if", "name", ":", "newline",
        "indent", "pass", "newline",
        "dedent", "return", "newline",
        "dedent", "eof"]


def test_blank_and_comment_lines_are_ignored() -> None:
    text = "# top\n\ndef f():  # trailing\n\n      # odd indent comment\n    pass\n"
    assert kinds(text) == ["def", "name", "(", ")", ":", "newline", "indent", "pass",
                           "newline", "dedent", "eof"]


def test_newlines_and_indentation_inside_brackets_are_ignored() -> None:
    text = "x = f(1,\n        2,\n  [3,\n4],\n)\n"
    assert kinds(text) == ["name", "=", "name", "(", "int", ",", "int", ",", "[", "int", ",",
                           "int", "]", ",", ")", "newline", "eof"]


def test_positions_are_one_based_columns_of_characters() -> None:
    tokens, _ = lex('s = "é" + x\n')
    assert [(t.kind, t.line, t.col, t.end_col) for t in tokens[:5]] == [
        ("name", 1, 1, 2), ("=", 1, 3, 4), ("str", 1, 5, 8), ("+", 1, 9, 10), ("name", 1, 11, 12)]


def test_keywords_and_the_lower_case_spellings() -> None:
    tokens, _ = lex("true false null True None let match case await try")
    assert [t.kind for t in tokens[:-2]] == ["True", "False", "None", "True", "None", "let",
                                             "match", "case", "await", "try"]


def test_operators() -> None:
    text = "-> += -= *= == != <= >= < > + - * / % = ( ) [ ] , : . @ ?"
    assert kinds(text)[:-2] == text.split()


@pytest.mark.parametrize("text, value", [
    ("0", 0), ("42", 42), ("1_000", 1000), ("9_223_372_036_854_775_807", 2**63 - 1),
])
def test_integer_literals(text: str, value: int) -> None:
    tokens, diagnostics = lex(text)
    assert diagnostics == [] and tokens[0].kind == "int" and tokens[0].value == value


def test_float_literals() -> None:
    tokens, _ = lex("2.5 0.125 1_0.5")
    assert [(t.kind, t.value) for t in tokens[:3]] == [("float", 2.5), ("float", 0.125),
                                                        ("float", 10.5)]


@pytest.mark.parametrize("literal", ["1e5", "1.", "1__0", "1_", "0x10", "12abc", "1.5e3"])
def test_malformed_numbers_are_one_error(literal: str) -> None:
    assert errors(f"x = {literal}\n") == [(1, 5, f"invalid number literal '{literal}'")]


def test_string_escapes_are_decoded() -> None:
    tokens, diagnostics = lex(r'''"a\nb\rc\td\0e\"f\'g\\h" 'it\'s "x"' "\u{1F600}\u{e9}\u{0}"''')
    assert diagnostics == []
    assert [t.value for t in tokens[:3]] == ["a\nb\rc\td\0e\"f'g\\h", "it's \"x\"",
                                             "\U0001F600\u00e9\0"]


def test_non_ascii_text_in_strings_and_comments() -> None:
    tokens, diagnostics = lex('s = "日本語 ✓"  # коммент\n')
    assert diagnostics == [] and tokens[2].value == "日本語 ✓"


@pytest.mark.parametrize("source, col, message", [
    (r'x = "a\qb"', 7, "invalid escape sequence '\\q'"),
    (r'x = "\x41"', 6, "invalid escape sequence '\\x'"),
    (r'x = "\u0041"', 6, "expected \\u{...} with 1 to 6 hex digits"),
    (r'x = "\u{}"', 6, "expected \\u{...} with 1 to 6 hex digits"),
    (r'x = "\u{1234567}"', 6, "expected \\u{...} with 1 to 6 hex digits"),
    (r'x = "\u{D800}"', 6, "U+D800 is not a Unicode scalar value"),
    (r'x = "\u{DFFF}"', 6, "U+DFFF is not a Unicode scalar value"),
    (r'x = "\u{110000}"', 6, "U+110000 is not a Unicode scalar value"),
    ('x = "abc', 5, "unclosed string literal"),
    ("x = 'abc\"", 5, "unclosed string literal"),
    ('x = "abc\\', 5, "unclosed string literal"),
])
def test_string_errors_have_precise_columns(source: str, col: int, message: str) -> None:
    found = errors(source + "\n")
    assert len(found) == 1
    assert found[0][:2] == (1, col) and message in found[0][2]


def test_highest_scalar_value_is_accepted() -> None:
    tokens, diagnostics = lex(r'"\u{10FFFF}"')
    assert diagnostics == [] and tokens[0].value == "\U0010FFFF"


def test_tab_in_indentation_is_an_error() -> None:
    assert errors("def f():\n\tpass\n") == [(2, 1, "tab in indentation (indent with spaces)")]
    assert errors("def f():\n  \t  pass\n")[0][:2] == (2, 3)


def test_tab_in_indentation_is_reported_once_per_file() -> None:
    text = "def f():\n\tx = 1\n\tif x:\n\t\tpass\n\treturn\n"
    assert errors(text) == [(2, 1, "tab in indentation (indent with spaces)")]
    tokens, _ = lex(text)
    assert [t.kind for t in tokens].count("indent") == 2


def test_tab_after_indentation_is_whitespace() -> None:
    assert errors("x = 1\t+ 2\n") == []


def test_dedent_must_land_on_an_enclosing_level() -> None:
    text = "def f():\n    if x:\n        pass\n  pass\n"
    assert errors(text) == [(4, 3, "unindent does not match any outer indentation level")]


def test_unexpected_characters_are_reported_once_per_run() -> None:
    assert errors("x = a && b\n") == [(1, 7, "unexpected character '&' (use 'and')")]
    assert errors("x = 1 ; y = 2\n")[0][:2] == (1, 7)
    assert errors("x = \x07\n") == [(1, 5, "unexpected character 'U+0007'")]


def test_unclosed_bracket_is_reported_at_the_opener() -> None:
    tokens, diagnostics = lex("def f():\n    x = g(1,\n    return x\n")
    assert [(d.span.line, d.span.col) for d in diagnostics] == [(2, 10)]
    assert "'(' was never closed" in diagnostics[0].message
    assert "return" in [t.kind for t in tokens]


def test_unclosed_bracket_at_end_of_file() -> None:
    assert errors("x = [1, 2\n")[0][:2] == (1, 5)


def test_crlf_and_cr_line_endings() -> None:
    assert kinds("def f():\r\n    pass\r\n") == kinds("def f():\n    pass\n")
    assert kinds("def f():\r    pass\r") == kinds("def f():\n    pass\n")


def test_eof_closes_open_blocks_without_a_final_newline() -> None:
    assert kinds("def f():\n    if x:\n        pass")[-4:] == ["newline", "dedent", "dedent",
                                                            "eof"]


def test_empty_source() -> None:
    assert kinds("") == ["eof"]
    assert kinds("# only a comment") == ["eof"]
