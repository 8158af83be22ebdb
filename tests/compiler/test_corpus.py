"""The corpus: good programs must compile cleanly; bad ones must give exactly the diagnostics
their `# expect: LINE:COL: message` lines list. The format is in corpus/README.md."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from svc.compiler.diagnostics import render
from svc.pipeline import Checked, Failed, Target, check

CORPUS = Path(__file__).parent / "corpus"
EXPECT = re.compile(r"^\s*#\s*expect:\s*(?:([^:\s]+):)?(\d+):(\d+):\s*(.*?)\s*$")


def find_cases(root: Path) -> list[Path]:
    """Single .svc files and case folders (with svc.toml or main.svc) under `root`."""
    cases: list[Path] = []
    for entry in sorted(root.iterdir()) if root.is_dir() else []:
        if entry.is_dir():
            if (entry / "svc.toml").exists() or (entry / "main.svc").exists():
                cases.append(entry)
            else:
                cases += find_cases(entry)
        elif entry.suffix == ".svc":
            cases.append(entry)
    return cases


def case_id(case: Path) -> str:
    return case.relative_to(CORPUS).as_posix()


def compile_case(case: Path) -> Checked | Failed:
    """Check the case, from the corpus folder so paths are short and stable."""
    cwd = os.getcwd()
    os.chdir(CORPUS)
    try:
        relative = case.relative_to(CORPUS).as_posix()
        if case.is_dir() and (case / "svc.toml").exists():
            return check(Target(project=relative))
        if case.is_dir():
            return check(Target(file=f"{relative}/main.svc"))
        return check(Target(file=relative))
    finally:
        os.chdir(cwd)


def expectations(case: Path) -> list[tuple[str, int, int, str]]:
    """(file relative to the corpus, line, col, message substring) from `# expect:` lines."""
    files = sorted(p for p in case.rglob("*") if p.is_file()) if case.is_dir() else [case]
    expected = []
    for path in files:
        text = path.read_bytes().decode("utf-8", errors="replace")
        for line in text.splitlines():
            m = EXPECT.match(line)
            if m:
                other, line_no, col, message = m.groups()
                target = path.parent / other if other else path
                expected.append((target.relative_to(CORPUS).as_posix(), int(line_no),
                                 int(col), message))
    return sorted(expected)


def describe(diagnostics, sources) -> str:
    return "\n".join(render(d, sources.get(d.span.file)) for d in diagnostics) or "(none)"


GOOD = find_cases(CORPUS / "good")
BAD = [case for folder in sorted(CORPUS.iterdir()) if folder.is_dir() and folder.name != "good"
       for case in find_cases(folder)]


@pytest.mark.parametrize("case", GOOD, ids=case_id)
def test_good_program_compiles(case: Path) -> None:
    result = compile_case(case)
    assert isinstance(result, Checked), describe(result.diagnostics, result.sources)


@pytest.mark.parametrize("case", BAD, ids=case_id)
def test_bad_program_reports_expected_errors(case: Path) -> None:
    expected = expectations(case)
    assert expected, f"{case_id(case)} has no '# expect: LINE:COL: message' lines"
    result = compile_case(case)
    assert isinstance(result, Failed)
    diagnostics, sources = result.diagnostics, result.sources
    got = sorted((os.path.normpath(d.span.file).replace(os.sep, "/"), d.span.line, d.span.col,
                  d.message) for d in diagnostics)
    shown = describe(sorted(diagnostics, key=lambda d: d.sort_key()), sources)
    assert len(got) == len(expected), f"expected {len(expected)} diagnostics, got:\n{shown}"
    for (file, line, col, message), (want_file, want_line, want_col, want) in zip(got, expected):
        assert (file, line, col) == (want_file, want_line, want_col), shown
        assert want in message, shown


def test_corpus_has_cases() -> None:
    assert GOOD and BAD
