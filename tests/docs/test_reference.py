"""The reference (docs/reference/*.md) cannot drift from the compiler and the server.

Every ```svc sample on those pages is checked with `svcc check`. The markers of
tests/docs/doc_samples.py say what more a sample promises, in short:

- a sample without `main` is a fragment: `def main(): pass` is appended before checking;
- `<!-- error below -->`: the check must fail, printing the ```text block that follows;
- `<!-- output below -->`: running it must print exactly the ```output block that follows;
- `<!-- serve: METHOD PATH [BODY] -> STATUS [RESPONSE] -->`: served, it answers so;
- `<!-- test file below -->`: run with `svcc test` beside the program sample before it, it
  reports the ```output block that follows.
"""

from __future__ import annotations

import re

import pytest

from svc.compiler.builtin_table import BUILTINS, RANGE
from tests.docs.doc_samples import (
    REPO, check, mask_durations, run, run_tests, samples, serve_and_ask,
)

PAGES = sorted((REPO / "docs" / "reference").glob("*.md"))
SAMPLES = [s for page in PAGES for s in samples(page)]


def _ids(chosen):
    return [s.id for s in chosen]


TESTING = [s for s in SAMPLES if s.tested_program is not None]  # test files
GOOD = [s for s in SAMPLES if not s.wants_error and s.tested_program is None]
# Run and served samples are checked by `svcc run`, which compiles first (a diagnostic fails
# their test): only the others are checked on their own.
CHECKED_ONLY = [s for s in GOOD if s.output is None and not s.requests]
BAD = [s for s in SAMPLES if s.wants_error]
PRINTING = [s for s in SAMPLES if s.output is not None and s.tested_program is None]
SERVING = [s for s in SAMPLES if s.requests]


def test_the_reference_has_checked_samples_of_every_kind():
    names = {page.name for page in PAGES}
    assert {"README.md", "language.md", "http.md", "builtins.md", "commands.md"} <= names
    assert len(GOOD) >= 15 and BAD and PRINTING and SERVING
    assert all(s.output is not None for s in SAMPLES if s.wants_output)
    assert all(s.error is not None for s in BAD), "an error sample needs its ```text block"


@pytest.mark.parametrize("sample", CHECKED_ONLY, ids=_ids(CHECKED_ONLY))
def test_sample_checks(tmp_path, sample):
    result = check(tmp_path, sample)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("sample", BAD, ids=_ids(BAD))
def test_sample_fails_with_the_diagnostic_shown(tmp_path, sample):
    result = check(tmp_path, sample)
    assert result.returncode == 1, result.stdout
    assert sample.error in result.stderr


@pytest.mark.parametrize("sample", PRINTING, ids=_ids(PRINTING))
def test_sample_prints_what_the_page_shows(tmp_path, sample):
    result = run(tmp_path, sample)
    assert (result.returncode, result.stdout) == (0, sample.output), result.stderr


@pytest.mark.parametrize("sample", SERVING, ids=_ids(SERVING))
def test_sample_answers_as_the_page_says(tmp_path, sample):
    serve_and_ask(tmp_path, sample)


@pytest.mark.parametrize("sample", TESTING, ids=_ids(TESTING))
def test_test_file_sample_reports_what_the_page_shows(tmp_path, sample):
    result = run_tests(tmp_path, sample)
    assert mask_durations(result.stdout) == mask_durations(sample.output), result.stderr


BUILTINS_PAGE = REPO / "docs" / "reference" / "builtins.md"
#: A builtin's signature as the reference writes it: `name(...)`, `async name[T](...) -> R`.
SIGNATURE = re.compile(r"`((?:async )?(\w+)(?:\[T\])?\(.*?\)(?: -> [^`]+)?)`")


def documented_signatures() -> list[tuple[str, str]]:
    """(name, signature) of every builtin the reference describes: in a `### ` heading, or in
    the first column of a table (the error makers, the runtime test functions)."""
    found = []
    for line in BUILTINS_PAGE.read_text().splitlines():
        if line.startswith("### "):
            found += [(name, sig) for sig, name in SIGNATURE.findall(line)]
        elif line.startswith("| `"):
            found += [(name, sig) for sig, name in SIGNATURE.findall(line.split("|")[1])]
    return found


def test_every_builtin_the_compiler_knows_is_in_the_overview():
    """The overview table of builtins.md lists exactly the compiler's builtins (and `range`):
    a builtin added without its reference entry, or one removed, fails here."""
    rows = [line for line in BUILTINS_PAGE.read_text().splitlines() if line.startswith("| [")]
    listed = {name for row in rows for name in re.findall(r"`(\w+)`", row.split("|")[2])}
    assert listed == set(BUILTINS) | {RANGE}


def test_the_reference_gives_each_builtin_the_signature_of_its_record():
    """Each builtin is described once, with the signature its record (and so an editor's
    hover) gives; `range`, which only a `for` loop can call, has no record."""
    documented = [(name, sig) for name, sig in documented_signatures() if name != RANGE]
    names = [name for name, _ in documented]
    assert sorted(names) == sorted(BUILTINS), "each builtin exactly once"
    for name, signature in documented:
        assert signature == BUILTINS[name].signature, name


def test_every_builtin_has_a_one_sentence_summary():
    for name, builtin in BUILTINS.items():
        assert builtin.summary.endswith(".") and "\n" not in builtin.summary, name
