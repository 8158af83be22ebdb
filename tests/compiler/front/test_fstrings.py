"""f-strings through the front end and the checker: the parts the lexer and parser make, the
errors of a malformed literal, and type errors inside `{…}` pointing at their own column
(checked on the rendered caret, as users see it). Run-time formatting is tested in
tests/runtime/lib/test_stdlib.py."""

from __future__ import annotations

import pytest

from svc.compiler.front import syntax
from svc.compiler.diagnostics import render
from svc.compiler.front.lexer import tokenize
from svc.compiler.front.parser import parse
from svc.compiler.source import SourceFile
from svc.pipeline import check_modules


def diagnostics(line: str, prelude: str = "") -> list:
    """Everything reported for `line` as the body of `main` (front end, then checker)."""
    text = f"{prelude}def main():\n    {line}\n"
    source = SourceFile("t.svc", text)
    module, found = parse(source)
    if not found:
        found = check_modules([module], "t.svc")[1]
    return [(d, source) for d in found]


def caret(line: str, prelude: str = "") -> list[tuple[str, str]]:
    """(message, the rendered source line and caret line) of each diagnostic."""
    out = []
    for d, source in diagnostics(line, prelude):
        rendered = render(d, source).splitlines()
        out.append((d.message, "\n".join(rendered[-2:])))
    return out


def fstring_of(code: str) -> syntax.FString:
    module, found = parse(SourceFile("t.svc", f"def main():\n    x = {code}\n"))
    assert not found, found
    return module.items[0].body[0].value


def test_parts_are_literal_text_and_expressions_in_order():
    node = fstring_of('f"Hello, {name}! You have {n + 1} tasks."')
    assert isinstance(node, syntax.FString)
    texts = [p if isinstance(p, str) else type(p).__name__ for p in node.parts]
    assert texts == ["Hello, ", "Name", "! You have ", "Binary", " tasks."]
    name = node.parts[1]
    assert (name.span.line, name.span.col, name.span.end_col) == (2, 19, 23)


def test_double_braces_and_escapes_are_literal():
    node = fstring_of(r'f"{{x}} \t\u{1F600}\"{{"')
    assert node.parts == ["{x} \t\U0001F600\"{"]
    assert fstring_of('f""').parts == []
    assert fstring_of("f'{a}'").parts[0].id == "a"


def test_an_expression_may_hold_strings_braces_and_another_fstring():
    node = fstring_of('f"{join(xs, "}")}-{f"{y}"}"')
    call, nested = node.parts[0], node.parts[2]
    assert isinstance(call, syntax.Call) and call.args[1].value == "}"
    assert node.parts[1] == "-"
    assert isinstance(nested, syntax.FString) and nested.parts[0].id == "y"


def test_f_alone_is_still_a_name():
    tokens, found = tokenize(SourceFile("t.svc", 'f = 1\nx = f + 2\nprint(f "a")\n'))
    assert not found
    assert [t.kind for t in tokens if t.value == "f"] == ["name", "name", "name"]


@pytest.mark.parametrize("code, message, col", [
    ('f"a{x"', "'{' in an f-string was never closed (write '{{' for a literal brace)", 12),
    ('f"a{}b"', "empty expression in an f-string", 12),
    ('f"a{  }b"', "empty expression in an f-string", 12),
    ('f"a}b"', "single '}' in an f-string (write '}}' for a literal brace)", 12),
    ('f"a{x}', "unclosed f-string literal", 9),
    ('f"{x y}"', "expected '}' after the expression in the f-string, found name 'y'", 14),
    ('f"{x +}"', "expected an expression, found '}'", 15),
    ('f"{len(x}"', "expected ',' or ')' in the argument list, found '}'", 17),
    ('f"\\q{x}"', "invalid escape sequence '\\q'", 11),
    ('f"{x $}"', "unexpected character '$'", 14),
])
def test_malformed_fstrings_are_one_clear_error(code, message, col):
    found = diagnostics(f"x = {code}")
    assert len(found) == 1, [d.message for d, _ in found]
    d, _ = found[0]
    assert message in d.message
    assert (d.span.line, d.span.col) == (2, col)


def test_a_type_error_inside_braces_points_at_its_column():
    shown = caret('print(f"total: {1 + "a"} items")')
    assert shown == [("operator '+' needs two numbers or two str, found i64 and str",
                      '2 |     print(f"total: {1 + "a"} items")\n'
                      '  |                     ^^^^^^^')]
    shown = caret('print(f"a {b} c {nope} d")')
    assert [message for message, _ in shown] == ["unknown name 'b'", "unknown name 'nope'"]
    for (_, lines), name in zip(shown, ("{b}", "{nope}")):
        source, marks = lines.splitlines()
        assert marks.index("^") == source.index(name) + 1
        assert marks.strip(" |") == "^" * (len(name) - 2)


@pytest.mark.parametrize("value, type_name, hint", [
    ("[1, 2]", "List[i64]", "json_encode(x)"),
    ("P(x=1)", "P", "json_encode(x)"),
    ("to_bytes(\"a\")", "bytes", "a function that returns a str"),
    ("parse_i64(\"1\")", "Result[i64, Error]", "a function that returns a str"),
    ("html(\"a\")", "Html", "a function that returns a str"),
])
def test_values_str_cannot_format_are_errors_naming_the_type(value, type_name, hint):
    shown = caret(f'print(f"v={{{value}}}")', prelude="class P:\n    x: i64\n\n")
    assert len(shown) == 1
    message, lines = shown[0]
    assert message == (f"an f-string cannot format {type_name} (only str, i64, i32, f64 and "
                       f"bool); format it with {hint}")
    assert lines.splitlines()[1].index("^") == lines.splitlines()[0].index(value)


def test_formattable_types_check():
    prelude = "def f(a: str, b: i64, c: i32, d: f64, e: bool) -> str:\n    return f\"{a}{b}{c}{d}{e}\"\n\n"
    assert diagnostics('print(f(f"{1}", 2, 3, 4.5, True))', prelude) == []
