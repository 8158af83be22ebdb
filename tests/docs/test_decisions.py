"""The decisions stay findable: docs/decisions/ is one page per area with an index, and every
reference to a decision, anywhere in the repository, names a page that exists.

The index (docs/decisions/README.md) has a line per page and per decision (a page's `##`
sections); a decision's heading is on one page only. The pages and the measurement logs they
moved to bench/measurements/ link each other: every relative link between them must reach a
file, and a `#fragment` one of its headings.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.helpers.svc_process import REPO

DECISIONS = REPO / "docs" / "decisions"
INDEX = DECISIONS / "README.md"
MEASUREMENTS = REPO / "bench" / "measurements"
#: A reference to the decisions in any text: `docs/decisions.md`, `docs/decisions/http.md`.
REFERENCE = re.compile(r"docs/decisions(?:/[\w.-]*|\.md)?")
SEARCHED = ("src", "docs", "tests", "bench", "examples", "editors", "README.md", "Makefile",
            "pyproject.toml")
SKIPPED_FOLDERS = {"__pycache__", ".hypothesis", ".pytest_cache", "node_modules", "built",
                   ".work", ".git"}
LINK = re.compile(r"\]\(([^)\s]+)\)")
CODE = re.compile(r"`[^`]*`")


def pages() -> list[Path]:
    return sorted(p for p in DECISIONS.glob("*.md") if p != INDEX)


def headings(path: Path) -> list[str]:
    return re.findall(r"(?m)^#{1,6} (.+)$", path.read_text(encoding="utf-8"))


def slug(heading: str) -> str:
    """A heading's fragment as GitHub makes it: lower case, punctuation dropped, spaces to -."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def _files():
    for name in SEARCHED:
        top = REPO / name
        if top.is_file():
            yield top
            continue
        for path in sorted(top.rglob("*")):
            parts = path.relative_to(REPO).parts
            if path.is_file() and not set(parts) & SKIPPED_FOLDERS \
                    and not any(part.endswith(".egg-info") for part in parts) \
                    and path != Path(__file__).resolve():  # this file names stale ones on purpose
                yield path


def stale_references(path: Path, root: Path = REPO) -> list[str]:
    """`path:line: reference` for each reference to a decisions page that does not exist."""
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return []
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for match in REFERENCE.finditer(line):
            named = match.group(0).rstrip(".,")
            if not (root / named).exists():
                found.append(f"{path.relative_to(root)}:{number}: {named}")
    return found


def links(text: str) -> list[str]:
    """The targets of a Markdown text's links, outside code spans."""
    return LINK.findall(CODE.sub("", text))


def broken_links(path: Path) -> list[str]:
    """Relative links of a Markdown file whose file or `#fragment` does not exist."""
    found = []
    for target in links(path.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        file, _, fragment = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        if not linked.exists():
            found.append(f"{path.relative_to(REPO)}: {target} (no such file)")
        elif fragment and linked.suffix == ".md" and fragment not in map(slug, headings(linked)):
            found.append(f"{path.relative_to(REPO)}: {target} (no such heading)")
    return found


def test_every_reference_to_a_decision_names_an_existing_page() -> None:
    found = [line for path in _files() for line in stale_references(path)]
    assert not found, ("docs/decisions.md was split into docs/decisions/ (the index is "
                       "docs/decisions/README.md):\n" + "\n".join(found))


def test_the_index_lists_every_page_and_every_decision_once() -> None:
    index = INDEX.read_text(encoding="utf-8")
    listed_links = links(index)
    for page in pages():
        assert listed_links.count(page.name) == 1, f"the index has no line for {page.name}"
        for heading in re.findall(r"(?m)^## (.+)$", page.read_text(encoding="utf-8")):
            assert listed_links.count(f"{page.name}#{slug(heading)}") == 1, (page.name, heading)
    listed = {link.partition("#")[0] for link in listed_links if not link.startswith("..")}
    assert listed == {p.name for p in pages()}, "the index links a page that does not exist"


def test_a_decision_is_on_one_page_only() -> None:
    seen: dict[str, str] = {}
    for page in pages():
        for heading in re.findall(r"(?m)^## (.+)$", page.read_text(encoding="utf-8")):
            assert heading not in seen, f"{heading!r} is on {seen[heading]} and {page.name}"
            seen[heading] = page.name
    assert len(seen) >= 38  # the decisions of docs/decisions.md before the split


def test_links_between_decisions_and_measurements_reach_their_target() -> None:
    files = [INDEX, *pages(), *sorted(MEASUREMENTS.glob("*.md"))]
    found = [problem for path in files for problem in broken_links(path)]
    assert not found, "\n".join(found)


def test_the_checks_find_a_stale_reference_and_a_broken_link(tmp_path: Path) -> None:
    (tmp_path / "docs" / "decisions").mkdir(parents=True)
    (tmp_path / "docs" / "decisions" / "http.md").write_text("# Decisions\n\n## Workers\n")
    source = tmp_path / "code.py"
    source.write_text("# see docs/decisions.md, and docs/decisions/http.md.\n"
                      "# docs/decisions/gone.md\n")
    assert stale_references(source, tmp_path) == ["code.py:1: docs/decisions.md",
                                                  "code.py:2: docs/decisions/gone.md"]
    assert slug("Workers (`SVC_WORKERS`, 0.2)") == "workers-svc_workers-02"
