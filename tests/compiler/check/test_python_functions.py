"""The rules of `@python` declarations (check/python_functions.py), each diagnostic at its
place, the compile-time import from the project's packages, and `python_stub`."""

from __future__ import annotations

import sys

from svc.compiler.check import python_functions
from svc.compiler.check.checker import check
from svc.compiler.front import syntax
from svc.compiler.front.parser import parse
from svc.compiler.source import SourceFile
from svc.compiler.svctypes import STR, ResultOf
from svc.pipeline import check_modules

MAIN = "\nasync def main() -> Result[unit, Error]:\n    return ok(())\n"


def problems(text: str, path: str = "t.svc") -> list[tuple[int, int, str]]:
    """(line, column, message) of each checker diagnostic of a program parsed cleanly."""
    module, diagnostics = parse(SourceFile(path, text + MAIN))
    assert not diagnostics, diagnostics
    return [(d.span.line, d.span.col, d.message) for d in check_modules([module], path)[1]]


def checked_with(text: str, python_path: tuple[str, ...]) -> list[tuple[int, int, str]]:
    module, _ = parse(SourceFile("t.svc", text + MAIN))
    return [(d.span.line, d.span.col, d.message)
            for d in check([module], "t.svc", ".", python_path)[1]]


def test_a_declaration_of_a_stdlib_function_checks_and_its_call_is_an_async_call():
    text = ('@python("textwrap", "shorten", error="invalid")\n'
            "async def shorten(text: str, width: i64) -> Result[str, Error]\n\n"
            "async def short() -> Result[str, Error]:\n"
            '    return ok(try await shorten("a b c d e f", 5))\n')
    module, _ = parse(SourceFile("t.svc", text + MAIN))
    program, diagnostics = check_modules([module], "t.svc")
    assert diagnostics == []
    info = program.functions["shorten"]
    assert info.returns == ResultOf(STR) and info.decl.body == []
    (call,) = [n for n in syntax.walk(program.functions["short"].decl)
               if isinstance(n, syntax.Call) and n.target == "shorten"]
    assert call.call_kind == "async_function"


def test_every_boundary_type_crosses():
    text = ("enum Mood: calm, cross\n"
            "class Inner:\n    tags: List[str]\n"
            "class Note:\n    title: str\n    mood: Mood\n    inner: Inner?\n"
            "    scores: Map[str, f64]\n    raw: bytes\n    ok: bool\n    n: i64\n"
            '@python("json", "dumps")\n'
            "async def f(a: Note, b: List[Note]?, c: Map[str, i64]) -> Result[List[Note], Error]\n"
            '@python("json", "dumps")\n'
            "async def g() -> Result[unit, Error]\n")
    assert problems(text) == []


def test_a_missing_module_is_reported_at_its_string():
    text = '@python("no_such_module_36", "f")\nasync def f() -> Result[str, Error]\n'
    assert problems(text) == [(1, 9, "no Python module 'no_such_module_36' (list it in svc.toml "
                                     "[dependencies] and run `svcc install`)")]


def test_a_missing_function_and_one_that_is_not_callable_are_reported_at_its_string():
    text = ('@python("textwrap", "shortn")\nasync def f() -> Result[str, Error]\n'
            '@python("string", "ascii_letters")\nasync def g() -> Result[str, Error]\n')
    assert problems(text) == [(1, 21, "Python module 'textwrap' has no 'shortn'"),
                              (3, 19, "'string.ascii_letters' is not callable")]


def test_a_method_and_names_python_cannot_have_are_refused():
    text = ('@python("textwrap", "TextWrapper.wrap")\nasync def f() -> Result[str, Error]\n'
            '@python("no such", "f")\nasync def g() -> Result[str, Error]\n'
            '@python("html", "class")\nasync def h() -> Result[str, Error]\n')
    assert problems(text) == [
        (1, 21, "'TextWrapper.wrap' is not a plain name: @python names a function of the "
                "module itself (not a class's method: wrap it in a module-level function)"),
        (3, 9, "'no such' is not a Python module's name (such as \"markdown\" or \"os.path\")"),
        (5, 17, "'class' is not a Python name")]


def test_an_unknown_error_kind_is_reported_with_the_closest_one():
    text = '@python("html", "escape", error="not_fund")\nasync def f() -> Result[str, Error]\n'
    ((line, col, message),) = problems(text)
    assert (line, col) == (1, 33)
    assert message.startswith("unknown error kind 'not_fund' for a Python exception (one of ")
    assert message.endswith("'not_found'?")


def test_a_plain_def_is_refused_at_its_name():
    text = '@python("html", "escape")\ndef f(s: str) -> Result[str, Error]\n'
    assert problems(text) == [(2, 5, "a @python function is an 'async def' (its call is "
                                     "awaited): write 'async def f(...)'")]


def test_types_that_cannot_cross_are_refused_at_their_annotation():
    text = ('@python("html", "escape")\nasync def f(a: i32, db: Db, h: Html) -> str\n'
            '@python("html", "escape")\nasync def g(s: str) -> Result[Error?, Error]\n'
            '@python("html", "escape")\nasync def h(s: str) -> Result[Html, Error]\n')
    found = problems(text)
    boundary = "i64, f64, str, bool, bytes, an enum, a class of those, T?, List[T] or Map[str, T]"
    assert (2, 16, f"parameter 'a' of Python function 'f': i32 cannot cross to Python (it may "
                   f"be {boundary})") in found
    assert (2, 25, f"parameter 'db' of Python function 'f': Db cannot cross to Python (it may "
                   f"be {boundary})") in found
    assert (2, 32, f"parameter 'h' of Python function 'f': Html cannot cross to Python (it may "
                   f"be {boundary})") in found
    assert (2, 41, "a Python function returns Result[T, Error] (an exception is its Err), found "
                   "str") in found
    assert (6, 24, f"the result of Python function 'h': Html cannot cross from Python (it may be "
                   f"unit, {boundary})") in found
    assert any(line == 4 for line, _, _ in found)  # Result[Error?, Error]: the Result rule's


def test_a_class_with_a_field_that_cannot_cross_cannot_cross():
    text = ('class Holder:\n    when: i32\n'
            '@python("html", "escape")\nasync def f(h: Holder) -> Result[str, Error]\n')
    assert problems(text) == [(4, 16, "parameter 'h' of Python function 'f': Holder cannot "
                                      "cross to Python (it may be i64, f64, str, bool, bytes, "
                                      "an enum, a class of those, T?, List[T] or Map[str, T])")]


def test_a_python_function_is_no_route_job_schedule_or_guarded_function():
    text = ('@get("/e")\n@python("html", "escape")\nasync def f() -> Result[str, Error]\n')
    assert problems(text)[0] == (1, 1, "'f' is a Python function: it cannot also be a route "
                                       "handler, a job, a schedule or guarded (call it from one)")


def test_the_module_is_imported_from_the_packages_folder_first(tmp_path):
    packages = tmp_path / "packages"
    packages.mkdir()
    (packages / "slugs_36.py").write_text("def slugify(text):\n    return text\n")
    text = '@python("slugs_36", "slugify")\nasync def f(s: str) -> Result[str, Error]\n'
    assert checked_with(text, ())[0][2].startswith("no Python module 'slugs_36'")
    assert checked_with(text, (str(packages),)) == []
    assert str(packages) not in sys.path  # restored after


def test_an_import_that_raises_is_one_line_and_printing_reaches_stderr_only(tmp_path, capfd):
    (tmp_path / "boom_36.py").write_text(
        "print('loading boom')\nraise ValueError('no config\\nsecond line')\n")
    text = '@python("boom_36", "f")\nasync def f() -> Result[str, Error]\n'
    assert checked_with(text, (str(tmp_path),)) == [
        (1, 9, "importing Python module 'boom_36' failed: ValueError: no config")]
    out, err = capfd.readouterr()
    assert out == "" and "loading boom" in err


def test_a_missing_module_inside_the_module_is_an_import_failure(tmp_path):
    (tmp_path / "needs_36.py").write_text("import not_there_36\n")
    text = '@python("needs_36", "f")\nasync def f() -> Result[str, Error]\n'
    assert checked_with(text, (str(tmp_path),)) == [
        (1, 9, "importing Python module 'needs_36' failed: ModuleNotFoundError: No module "
               "named 'not_there_36'")]


def test_each_module_is_imported_once_per_process_and_path(tmp_path):
    (tmp_path / "counted_36.py").write_text(
        f"open({str(tmp_path / 'imports')!r}, 'a').write('x')\ndef f():\n    pass\n")
    for _ in range(3):
        assert not isinstance(python_functions.import_module("counted_36", (str(tmp_path),)), str)
    assert (tmp_path / "imports").read_text() == "x"


def test_a_lone_file_imports_from_its_folders_packages_only_when_it_is_a_project(tmp_path):
    packages = tmp_path / ".svc" / "python"
    packages.mkdir(parents=True)
    (packages / "lone_36.py").write_text("def f():\n    pass\n")
    path = str(tmp_path / "main.svc")
    text = '@python("lone_36", "f")\nasync def f() -> Result[unit, Error]\n'
    assert problems(text, path)[0][2].startswith("no Python module 'lone_36'")
    (tmp_path / "svc.toml").write_text('entry = "main.svc"\n')
    assert problems(text, path) == []


# --- python_stub ------------------------------------------------------------------------------

DECLARED = '@python("html", "escape")\nasync def escape(s: str) -> Result[str, Error]\n'


def test_python_stub_answers_a_declared_function_in_a_test_file():
    text = DECLARED + 'def test_a():\n    python_stub(escape, ok("&lt;"))\n'
    assert problems(text, "t_test.svc") == []


def test_python_stub_outside_a_test_file_is_refused():
    text = DECLARED + 'def a():\n    python_stub(escape, ok("&lt;"))\n'
    assert problems(text) == [(4, 5, "python_stub can only be called in a test file "
                                     "(*_test.svc), which `svcc test` runs")]


def test_python_stub_names_a_python_function_and_answers_its_type():
    text = DECLARED + ('async def other() -> Result[str, Error]:\n    return ok("")\n'
                       'def test_a():\n'
                       '    python_stub(other, ok(""))\n'
                       '    python_stub("escape", ok(""))\n'
                       '    python_stub(escape, ok(3))\n'
                       '    python_stub(escape, not_found("gone"))\n')
    usage = "python_stub(f, ok(...)) names a @python function f by its name"
    assert problems(text, "t_test.svc") == [
        (6, 17, f"'other' is not a @python function: {usage}"),
        (7, 17, usage),
        (8, 28, "argument of ok: expected str, found i64")]
