"""Code generation of `@python` declarations and `python_stub`: the module-level
`python_calls.function(...)` call with the declared types as run-time types, which the runtime
boundary (svc.runtime.lib.python_calls) receives; checked on the generated Python, since the
boundary is the runtime's."""

from __future__ import annotations

import ast
import textwrap

import msgspec
import pytest

from svc.pipeline import Checked, Compiled, Target, check, compile, generate
from svc.runner import load_namespace
from svc.runtime.lib import python_calls

SOURCE = """
enum Mood: calm, cross

class Note:
    title: str
    mood: Mood
    tags: List[str]

@python("textwrap", "shorten", error="invalid")
async def shorten(text: str, width: i64) -> Result[str, Error]

@python("json", "dumps")
async def dump(notes: List[Note], extra: Map[str, f64]?) -> Result[unit, Error]

async def main() -> Result[unit, Error]:
    print(try await shorten("a b c d e f", 5))
    return ok(())
"""

TEST = """
from "app.svc" import shorten

async def test_short() -> Result[unit, Error]:
    python_stub(shorten, ok("a..."))
    assert_eq(try await shorten("x", 1), "a...")
    return ok(())
"""


def _generated(tmp_path, tests: tuple[str, ...] = ()) -> list[tuple[str, ast.Module]]:
    path = tmp_path / "app.svc"
    path.write_text(textwrap.dedent(SOURCE))
    checked = check(Target(file=str(path), tests=tests))
    assert isinstance(checked, Checked), checked
    return generate(checked)


def test_a_declaration_is_a_module_level_call_of_the_runtime_boundary(tmp_path):
    (path, module), = _generated(tmp_path)
    text = ast.unparse(module)
    assert ("shorten = _svc_python_calls.function('shorten', 'textwrap', 'shorten', 'invalid', "
            f"(_svc_T_STR, _svc_T_I64), _svc_T_STR, '{path}:10')") in text
    assert ("dump = _svc_python_calls.function('dump', 'json', 'dumps', 'internal', "
            "(_svc_List[Note], _svc_Optional[_svc_Dict[_svc_T_STR, _svc_T_F64]]), None, "
            f"'{path}:13')") in text
    assert "from svc.runtime.lib import python_calls as _svc_python_calls" in text
    assert "await shorten('a b c d e f', 5)" in text


def test_the_declared_types_reach_the_runtime_as_msgspec_types(tmp_path, monkeypatch):
    """The program loads against a stand-in boundary that records its arguments: the types it
    gets convert Python values strictly, as the runtime will."""
    received: dict[str, tuple] = {}

    def function(name, *rest):
        received[name] = rest
        return object()

    monkeypatch.setattr(python_calls, "function", function)
    path = tmp_path / "app.svc"
    path.write_text(textwrap.dedent(SOURCE))
    compiled = compile(Target(file=str(path)))
    assert isinstance(compiled, Compiled), compiled
    load_namespace(compiled.code)
    module, attribute, kind, (text, width), result, where = received["shorten"]
    assert (module, attribute, kind, text, result, where) == (
        "textwrap", "shorten", "invalid", str, str, f"{path}:10")
    with pytest.raises(msgspec.ValidationError):  # an i64 is range-checked
        msgspec.convert(2 ** 63, width, strict=True)
    _, _, _, params, result, _ = received["dump"]
    notes = msgspec.convert([{"title": "t", "mood": "calm", "tags": ["a"]}], params[0],
                            strict=True)
    assert notes[0].title == "t" and result is None
    assert msgspec.convert(None, params[1], strict=True) is None
    with pytest.raises(msgspec.ValidationError, match="mood"):
        msgspec.convert([{"title": "t", "mood": "sad", "tags": []}], params[0], strict=True)


def test_python_stub_passes_the_functions_name_and_the_answer(tmp_path):
    test = tmp_path / "app_test.svc"
    test.write_text(textwrap.dedent(TEST))
    generated = _generated(tmp_path, (str(test),))
    text = ast.unparse(generated[-1][1])
    assert "_svc_python_calls.python_stub('shorten', 'a...')" in text
