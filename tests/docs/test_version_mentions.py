"""The product's version is written once, `svc.__version__`, and every place that names it agrees.

pyproject.toml reads it through setuptools' dynamic version; `svcc --version`, the language
server, the build cache and the outbound `User-Agent` import it. The docs and the sources name
the product's version only in a few shapes, each caught below: "svc 0.4" / "svcc 0.4.0",
the reference's "(version 0.4)" titles and "svc/0.4.0". A bare "0.2" is left alone: "the 0.2
paths", "measured at 0.2" and "(0.2)" in a decision's heading are history, not the version.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import svc
from tests.helpers.svc_process import REPO

#: A version in one of the shapes that name the product's (group 1 is the version).
VERSION_SHAPES = (
    re.compile(r"\bsvcc? v?(\d+\.\d+(?:\.\d+)?)\b"),    # svc 0.4, svcc 0.4.0
    re.compile(r"\(version (\d+\.\d+(?:\.\d+)?)\)"),    # # The svc language (version 0.4)
    re.compile(r"\bsvc/(\d+\.\d+(?:\.\d+)?)\b"),        # User-Agent: svc/0.4.0
)
#: Only svc/__init__.py may write the version as a literal.
LITERAL = re.compile(r"""__version__\s*=|version\s*=\s*["']\d+\.\d+""")


def _files() -> list[Path]:
    """The docs, the README and the sources: where a user or a maintainer reads a version."""
    files = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    files += sorted(p for p in (REPO / "src" / "svc").rglob("*.py") if "built" not in p.parts)
    return files


def agrees(version: str, named: str) -> bool:
    """Whether `named` ("0.4" or "0.4.0") is `version` or its major.minor."""
    return version == named or version.startswith(named + ".")


def misnamed(path: Path, version: str) -> list[str]:
    """`path:line: text` for each line naming a product version other than `version`."""
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        named = [m.group(1) for shape in VERSION_SHAPES for m in shape.finditer(line)]
        if any(not agrees(version, n) for n in named):
            found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    return found


def test_pyproject_reads_the_version_from_the_package() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "version" not in project["project"], "the version is written in svc/__init__.py only"
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "svc.__version__"}


def test_the_version_is_a_literal_only_in_the_package() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", svc.__version__)
    init = REPO / "src" / "svc" / "__init__.py"
    written = [str(p.relative_to(REPO)) for p in _files()
               if p.suffix == ".py" and p != init and LITERAL.search(p.read_text())]
    assert not written, f"read svc.__version__ instead: {written}"


def test_the_user_agent_is_built_from_the_version() -> None:
    from svc.runtime.lib import outbound

    assert outbound.USER_AGENT == f"svc/{svc.__version__}"


def test_docs_and_sources_name_only_this_version() -> None:
    found = [line for path in _files() for line in misnamed(path, svc.__version__)]
    assert not found, f"the version is {svc.__version__}:\n" + "\n".join(found)


def test_the_check_finds_another_version() -> None:
    page = REPO / "docs" / "reference" / "README.md"
    assert not misnamed(page, svc.__version__)  # the reference names the version in its title
    assert agrees("0.4.0", "0.4") and agrees("0.4.0", "0.4.0") and not agrees("0.4.0", "0.2")
    lines = ["# The svc language (version 0.2)", "the 0.2 paths, measured at 0.2",
             "User-Agent: svc/0.2", "svcc 0.2.0", "the 0.2 contract (0.2)"]
    hits = [any(not agrees("0.4.0", m.group(1)) for s in VERSION_SHAPES for m in s.finditer(line))
            for line in lines]
    assert hits == [True, False, True, True, False]
