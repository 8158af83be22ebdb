"""The user's guide cannot drift from the compiler: every ```svc sample in docs/guide.md is
checked with `svcc check`; a sample marked `<!-- output below -->` is run and must print the
```output block that follows it; a sample preceded by `<!-- serve: METHOD PATH [BODY] ->
STATUS [RESPONSE] -->` lines is served and must answer each request exactly so; a test file
sample (`<!-- test file below -->`) is run with `svcc test` beside the program before it and
must report what the guide shows. The markers are those of tests/docs/doc_samples.py, shared
with the reference's test."""

from __future__ import annotations

import pytest

from tests.docs.doc_samples import (
    REPO, check, mask_durations, run, run_tests, samples, serve_and_ask,
)

GUIDE = REPO / "docs" / "guide.md"
TESTING = [s for s in samples(GUIDE) if s.tested_program is not None]  # test files
SAMPLES = [s for s in samples(GUIDE) if s.tested_program is None]
PRINTING = [s for s in SAMPLES if s.output is not None]
SERVING = [s for s in SAMPLES if s.requests]
# Run and served samples are checked by `svcc run`, which compiles first: only the others are
# checked on their own.
CHECKED_ONLY = [s for s in SAMPLES if s.output is None and not s.requests]


def _ids(chosen):
    return [f"line{s.line}" for s in chosen]


def test_the_guide_has_checked_samples_of_every_kind():
    assert len(SAMPLES) >= 5
    assert PRINTING and SERVING
    assert all(s.output is not None for s in SAMPLES if s.wants_output)
    assert not any(s.wants_error for s in SAMPLES), "the guide's samples are complete programs"


@pytest.mark.parametrize("sample", CHECKED_ONLY, ids=_ids(CHECKED_ONLY))
def test_sample_checks(tmp_path, sample):
    result = check(tmp_path, sample)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("sample", PRINTING, ids=_ids(PRINTING))
def test_sample_prints_what_the_guide_shows(tmp_path, sample):
    result = run(tmp_path, sample)
    assert (result.returncode, result.stdout) == (0, sample.output), result.stderr


@pytest.mark.parametrize("sample", SERVING, ids=_ids(SERVING))
def test_sample_answers_as_the_guide_says(tmp_path, sample):
    serve_and_ask(tmp_path, sample)


@pytest.mark.parametrize("sample", TESTING, ids=_ids(TESTING))
def test_test_file_sample_reports_what_the_guide_shows(tmp_path, sample):
    result = run_tests(tmp_path, sample)
    assert mask_durations(result.stdout) == mask_durations(sample.output), result.stderr
    failed = not result.stdout.rstrip().endswith(" 0 failed")
    assert result.returncode == (1 if failed else 0), result.stderr


def test_the_guide_shows_a_test_run():
    assert TESTING and all(s.tested_program and s.output for s in TESTING)
