"""The product cites only pages a user who clones the repository has.

The language and the server are specified by docs/reference/; code, docs, tests and examples
point there, never to specification pages kept outside the repository (which a user does not
have). The names are assembled below so that this file does not cite them itself.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers.svc_process import REPO

FORBIDDEN = ("../" + "shared", "LANGUAGE" + ".md", "HTTP" + ".md")
SEARCHED = ("src", "docs", "tests", "examples", "README.md")
#: Generated or installed, not written by us (and not in git).
SKIPPED_FOLDERS = {"__pycache__", ".hypothesis", ".pytest_cache", "node_modules"}


def _files():
    for name in SEARCHED:
        top = REPO / name
        if top.is_file():
            yield top
            continue
        for path in sorted(top.rglob("*")):
            parts = set(path.relative_to(REPO).parts)
            if path.is_file() and not parts & SKIPPED_FOLDERS \
                    and not any(p.endswith(".egg-info") for p in parts):
                yield path


def citations(path: Path, root: Path = REPO) -> list[str]:
    """`path:line: text` for every line of `path` that names a forbidden page."""
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return []  # binary files cite nothing
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if any(name in line for name in FORBIDDEN):
            found.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    return found


def test_the_search_covers_the_product():
    files = {str(p.relative_to(REPO)) for p in _files()}
    assert "README.md" in files and "docs/reference/language.md" in files
    assert "src/svc/cli.py" in files and "examples/hello/hello.svc" in files


def test_no_file_cites_a_page_outside_the_repository():
    found = [line for path in _files() for line in citations(path)]
    assert not found, "cite docs/reference/ instead:\n" + "\n".join(found)


def test_the_check_finds_a_citation(tmp_path):
    cited = tmp_path / "cited.py"
    cited.write_text('"""Limits of ' + FORBIDDEN[2] + '."""\n')
    assert citations(cited, tmp_path) == [f"cited.py:1: {cited.read_text().strip()}"]
