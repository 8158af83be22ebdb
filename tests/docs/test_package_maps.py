"""Every package's docstring is its map, and the map cannot drift from the folder.

A package's `__init__.py` docstring lists, one entry a line, each of its modules (`name.py`)
and sub-packages (`name/`) with what it is for: the first thing a new maintainer reads. An
entry is a line indented by exactly four spaces whose first word is `name.py` or `name/`
(deeper-indented lines continue the entry above). The test holds both ways: every module and
sub-package is in its package's map, and every entry names one that exists.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.helpers.svc_process import REPO

SRC = REPO / "src" / "svc"
ENTRY = re.compile(r"^ {4}(\w+\.py|\w+/)(?:\s|$)")
#: Entries written ahead of their modules: the lead adds these on issue 32's other points
#: (the services of a running program; svc.toml's tables as one Settings value). Nothing else
#: may be listed before it exists; remove a name here once its module is in.
ANNOUNCED = {"runtime/services.py", "rules/settings.py"}


def packages(root: Path = SRC) -> list[Path]:
    """Every package folder under `root` (a folder with an `__init__.py`), `root` included."""
    found = [init.parent for init in sorted(root.rglob("__init__.py"))]
    return [p for p in found if "built" not in p.relative_to(root).parts]


def members(package: Path) -> set[str]:
    """The package's modules (`name.py`) and sub-packages (`name/`), as a map names them."""
    names = {p.name for p in package.glob("*.py") if p.name != "__init__.py"}
    names |= {f"{p.name}/" for p in package.iterdir() if (p / "__init__.py").is_file()}
    return names


def map_entries(package: Path) -> list[str]:
    """The names the package's docstring lists, in order."""
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text()), clean=False)
    return [m.group(1) for line in (doc or "").splitlines() if (m := ENTRY.match(line))]


def drift(package: Path, root: Path = SRC, announced: frozenset[str] | set[str] = frozenset()
          ) -> list[str]:
    """What is wrong with one package's map: members it misses, entries naming nothing."""
    where = package.relative_to(root.parent)
    listed = map_entries(package)
    have = members(package)
    problems = [f"{where}: {name} is not in the map" for name in sorted(have - set(listed))]
    for name in listed:
        key = str((package / name).relative_to(root))
        if name not in have and key.rstrip("/") not in announced:
            problems.append(f"{where}: the map lists {name}, which does not exist")
    problems += [f"{where}: {name} is listed twice" for name in sorted(set(listed))
                 if listed.count(name) > 1]
    return problems


def test_every_package_has_a_map_that_matches_its_folder() -> None:
    found = [problem for package in packages() for problem in drift(package, SRC, ANNOUNCED)]
    assert not found, "package maps out of date (the __init__.py docstrings):\n" + "\n".join(found)


def test_the_search_sees_every_package() -> None:
    names = {str(p.relative_to(SRC)) for p in packages()}
    assert {".", "compiler/check", "runtime/http", "runtime/db", "rules", "tools"} <= names


def test_the_check_finds_a_missing_and_a_stale_entry(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "sub" / "__init__.py").write_text('"""Sub.\n\n    leaf.py  a leaf\n"""\n')
    (package / "leaf.py").write_text("")
    (package / "sub" / "leaf.py").write_text("")
    (package / "__init__.py").write_text(
        '"""A package.\n\n    leaf.py   a module\n    gone.py   no longer here\n'
        '              gone.py on a continuation line is not an entry\n'
        '    later.py  announced\n"""\n')
    assert map_entries(package) == ["leaf.py", "gone.py", "later.py"]
    assert drift(package, package, {"later.py"}) == [
        "pkg: sub/ is not in the map", "pkg: the map lists gone.py, which does not exist"]
    assert drift(package / "sub", package) == []
