"""The user's guide cannot drift from the compiler: every ```svc sample in docs/guide.md is
checked with `svcc check`; a sample marked `<!-- output below -->` is run and must print the
```output block that follows it; a sample preceded by `<!-- serve: METHOD PATH [BODY] ->
STATUS [RESPONSE] -->` lines is served and must answer each request exactly so. The markers
are those of tests/docs/doc_samples.py, shared with the reference's test."""

from __future__ import annotations

import pytest

from tests.docs.doc_samples import REPO, check, run, samples, serve_and_ask

GUIDE = REPO / "docs" / "guide.md"
SAMPLES = samples(GUIDE)
PRINTING = [s for s in SAMPLES if s.output is not None]
SERVING = [s for s in SAMPLES if s.requests]


def _ids(chosen):
    return [f"line{s.line}" for s in chosen]


def test_the_guide_has_checked_samples_of_every_kind():
    assert len(SAMPLES) >= 5
    assert PRINTING and SERVING
    assert all(s.output is not None for s in SAMPLES if s.wants_output)
    assert not any(s.wants_error for s in SAMPLES), "the guide's samples are complete programs"


@pytest.mark.parametrize("sample", SAMPLES, ids=_ids(SAMPLES))
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
