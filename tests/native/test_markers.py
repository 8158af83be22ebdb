"""The `compiled_path` marker misses no test of the compiled modules.

`make test` runs the suite once on the compiled request path, then the marked test modules
of tests/runtime again on the pure-Python modules
(SVC_NATIVE=0): only the modules of
`svc.native.MODULES` differ between the two runs. So a test module that imports one of them
must be marked (or its pure-Python twin would go untested), and every compiled module must be
imported by at least one marked module (or the second run would not test it in process).
"""

from __future__ import annotations

import ast
from pathlib import Path

from svc.native import MODULES

TESTS = Path(__file__).resolve().parents[1]


def imported_modules(tree: ast.Module) -> set[str]:
    """Every module a test module imports, anywhere in it: `import a.b`, `from a.b import c`
    (a.b, and a.b.c in case c is a module)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def is_marked(tree: ast.Module) -> bool:
    """Whether the module sets `pytestmark` to `pytest.mark.compiled_path`, alone or in a list."""
    for node in tree.body:
        if (isinstance(node, ast.Assign)
                and any(isinstance(target, ast.Name) and target.id == "pytestmark"
                        for target in node.targets)):
            return any(isinstance(part, ast.Attribute) and part.attr == "compiled_path"
                       for part in ast.walk(node.value))
    return False


def modules_by_path() -> dict[str, ast.Module]:
    return {str(path.relative_to(TESTS.parent)): ast.parse(path.read_text())
            for path in sorted(TESTS.rglob("test_*.py"))}


def test_every_test_module_that_imports_a_compiled_module_is_marked() -> None:
    unmarked = {name: sorted(imported_modules(tree) & set(MODULES))
                for name, tree in modules_by_path().items() if not is_marked(tree)}
    assert {name: found for name, found in unmarked.items() if found} == {}, (
        "add `pytestmark = pytest.mark.compiled_path` to these modules")


def test_every_compiled_module_is_imported_by_a_marked_test_module() -> None:
    covered: set[str] = set()
    for tree in modules_by_path().values():
        if is_marked(tree):
            covered |= imported_modules(tree)
    assert sorted(set(MODULES) - covered) == []


def test_the_checks_read_imports_and_marks_as_written() -> None:
    tree = ast.parse("import pytest\n"
                     "from svc.runtime.http import connection, context\n"
                     "pytestmark = [pytest.mark.compiled_path, pytest.mark.skipif(False, reason='')]\n"
                     "def test():\n    import svc.runtime.http.protocol\n")
    assert {"svc.runtime.http.connection", "svc.runtime.http.context",
            "svc.runtime.http.protocol"} <= imported_modules(tree)
    assert is_marked(tree)
    assert not is_marked(ast.parse("import pytest\npytestmark = pytest.mark.ui\n"))
