"""The shape of the code base, checked: no import cycles among svc's modules, no module too long.

A cycle means two modules cannot be understood (or changed, or tested) apart, and it turns into
import-order bugs as soon as one side imports at module level; a lazy import inside a function
hides the cycle from Python but not from the reader, so it counts here too. Imports under
`if TYPE_CHECKING:` never run and are the sanctioned way to name a type, so they do not count.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
MAX_MODULE_LINES = 600


@dataclass(frozen=True)
class Import:
    """One import statement of one module that names another module of the package."""

    importer: str
    imported: str
    line: int


def module_names(src: Path, package: str) -> dict[str, Path]:
    """Every module of `package` under `src`, by dotted name (a package is its __init__)."""
    modules = {}
    for path in sorted((src / package).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> list[Import]:
    """The imports of one module that reach another of `modules`, wherever they are written
    (module level or inside a function), except under `if TYPE_CHECKING:`."""
    found = []
    is_package = path.name == "__init__.py"
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(name, is_package, node.module, node.level)
            # `from pkg import mod` imports the module pkg.mod; `from mod import f` imports mod.
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                       for alias in node.names]
        else:
            continue
        for target in dict.fromkeys(targets):
            if target in modules and target != name:
                found.append(Import(name, target, node.lineno))
    return found


def _runtime_nodes(tree: ast.AST):
    """Every node of `tree` except those inside an `if TYPE_CHECKING:` body."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _absolute(name: str, is_package: bool, module: str | None, level: int) -> str:
    """The absolute name of a (possibly relative) `from ... import` in module `name`."""
    if level == 0:
        return module or ""
    parts = name.split(".")
    if not is_package:
        parts.pop()  # a module's relative imports start from its package
    parts = parts[:len(parts) - (level - 1)]
    return ".".join(parts + ([module] if module else []))


def import_graph(src: Path, package: str) -> dict[str, list[Import]]:
    modules = module_names(src, package)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def tangles(graph: dict[str, list[Import]]) -> list[set[str]]:
    """The groups of modules that import one another, directly or not (the strongly
    connected components of more than one module)."""
    return [component for component in _strongly_connected(graph) if len(component) > 1]


def cycles(graph: dict[str, list[Import]]) -> list[list[Import]]:
    """One cycle for each tangle, as the chain of imports that closes it."""
    return [_cycle_within(graph, component) for component in tangles(graph)]


def _strongly_connected(graph: dict[str, list[Import]]) -> list[set[str]]:
    """Tarjan's algorithm, iterative (the graph is small, but recursion hides no bug here)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            edge = next(edges, None)
            if edge is not None:
                nxt = edge.imported
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(graph[nxt])))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                components.append(component)
    return components


def _cycle_within(graph: dict[str, list[Import]], component: set[str]) -> list[Import]:
    """The shortest chain of imports from the component's first module back to itself."""
    start = min(component)
    paths: dict[str, list[Import]] = {start: []}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for edge in graph[node]:
                if edge.imported == start:
                    return paths[node] + [edge]
                if edge.imported in component and edge.imported not in paths:
                    paths[edge.imported] = paths[node] + [edge]
                    following.append(edge.imported)
        frontier = following
    raise AssertionError(f"no cycle through {start}")  # a component always has one


def long_modules(src: Path) -> dict[str, int]:
    """Modules under `src` longer than MAX_MODULE_LINES, with their line counts."""
    counts = {str(path.relative_to(src.parent)): len(path.read_text(encoding="utf-8").splitlines())
              for path in sorted(src.rglob("*.py"))}
    return {path: count for path, count in counts.items() if count > MAX_MODULE_LINES}


def describe(cycle: list[Import], src: Path) -> str:
    steps = [f"{edge.importer} -> {edge.imported} "
             f"({_file(edge.importer, src)}:{edge.line})" for edge in cycle]
    return "\n    ".join(steps)


def _file(name: str, src: Path) -> str:
    path = src.joinpath(*name.split("."))
    return str((path / "__init__.py" if path.is_dir() else path.with_suffix(".py"))
               .relative_to(src.parent))


# --- the rules ------------------------------------------------------------------------------

def test_no_import_cycles_among_svc_modules() -> None:
    graph = import_graph(SRC, "svc")
    found = [f"{len(tangle)} modules import one another: {', '.join(sorted(tangle))}; "
             f"one cycle:\n    {describe(cycle, SRC)}"
             for tangle, cycle in zip(tangles(graph), cycles(graph))]
    assert not found, "modules of src/svc import each other in a cycle:\n  " + "\n  ".join(found)


def test_no_module_in_src_is_over_600_lines() -> None:
    long = long_modules(SRC)
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them along a seam): {long}"


# --- the checker of the rules, on small made-up packages -----------------------------------

def write_package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def names_of(found: list[list[Import]]) -> list[list[str]]:
    return [[edge.importer for edge in cycle] for cycle in found]


def test_a_cycle_through_a_lazy_import_is_found_and_named(tmp_path: Path) -> None:
    src = write_package(tmp_path / "src", {
        "app/__init__.py": "",
        "app/server.py": "from app import support\n",
        "app/support.py": "def serve():\n    from app.server import run\n    return run\n",
        "app/alone.py": "import app.support\n",
    })
    graph = import_graph(src, "app")
    assert tangles(graph) == [{"app.server", "app.support"}]
    found = cycles(graph)
    assert names_of(found) == [["app.server", "app.support"]]
    assert describe(found[0], src) == (
        "app.server -> app.support (src/app/server.py:1)\n    "
        "app.support -> app.server (src/app/support.py:2)")


def test_imports_under_type_checking_do_not_count(tmp_path: Path) -> None:
    src = write_package(tmp_path, {
        "app/__init__.py": "",
        "app/checker.py": "from app.body import Body\n",
        "app/body.py": ("import typing\nfrom typing import TYPE_CHECKING\n"
                        "if TYPE_CHECKING:\n    from app.checker import Checker\n"
                        "if typing.TYPE_CHECKING:\n    import app.checker\n"
                        "else:\n    pass\n"),
    })
    assert cycles(import_graph(src, "app")) == []


def test_relative_imports_and_packages_are_resolved(tmp_path: Path) -> None:
    src = write_package(tmp_path, {
        "app/__init__.py": "",
        "app/db/__init__.py": "from .rows import Row\n",
        "app/db/rows.py": "from ..loader import load\n",
        "app/loader.py": "from app import db\n",
    })
    assert names_of(cycles(import_graph(src, "app"))) == [["app.db", "app.db.rows", "app.loader"]]


def test_a_module_over_600_lines_is_named(tmp_path: Path) -> None:
    src = write_package(tmp_path / "src", {
        "app/__init__.py": "",
        "app/short.py": "x = 1\n" * 600,
        "app/long.py": "x = 1\n" * 601,
    })
    assert long_modules(src) == {"src/app/long.py": 601}
