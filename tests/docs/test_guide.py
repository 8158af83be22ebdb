"""The user's guide cannot drift from the compiler: every ```svc sample in docs/guide.md is
checked with `svcc check`; a sample marked `<!-- output below -->` is run and must print the
```output block that follows it; a sample preceded by `<!-- serve: METHOD PATH [BODY] ->
STATUS [RESPONSE] -->` lines is served and must answer each request exactly so."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

import pytest

from tests.helpers.svc_process import REPO, run_to_end, start

GUIDE = REPO / "docs" / "guide.md"
_FENCE = re.compile(r"^```(\w*)\s*$")
_SERVE = re.compile(r"^<!-- serve: (\S+) (\S+)(?: (.*?))? -> (\d{3})(?: (.*?))? -->$")


@dataclass
class Sample:
    line: int
    code: str
    requests: list[tuple] = field(default_factory=list)
    output: str | None = None
    wants_output: bool = False


def samples() -> list[Sample]:
    """The svc samples of the guide with their markers, in order."""
    lines = GUIDE.read_text().splitlines()
    found: list[Sample] = []
    markers: list[str] = []
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if not fence:
            markers = markers + [lines[i]] if lines[i].startswith("<!--") else []
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        body = "\n".join(lines[i + 1:end]) + "\n"
        if fence.group(1) == "svc":
            sample = Sample(line=i + 1, code=body)
            for marker in markers:
                serve = _SERVE.match(marker)
                if serve:
                    sample.requests.append(serve.groups())
                elif marker == "<!-- output below -->":
                    sample.wants_output = True
            found.append(sample)
        elif fence.group(1) == "output" and found and found[-1].wants_output:
            found[-1].output = body
        markers = []
        i = end + 1
    return found


SAMPLES = samples()


def _write(tmp_path, sample: Sample) -> str:
    path = tmp_path / f"guide_{sample.line}.svc"
    path.write_text(sample.code)
    return str(path)


def test_the_guide_has_checked_samples_of_every_kind():
    assert len(SAMPLES) >= 5
    assert any(s.requests for s in SAMPLES) and any(s.output for s in SAMPLES)
    assert all(s.output is not None for s in SAMPLES if s.wants_output)


@pytest.mark.parametrize("sample", SAMPLES, ids=[f"line{s.line}" for s in SAMPLES])
def test_sample_checks(tmp_path, sample):
    result = run_to_end(["check", _write(tmp_path, sample)])
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("sample", [s for s in SAMPLES if s.output is not None],
                         ids=[f"line{s.line}" for s in SAMPLES if s.output is not None])
def test_sample_prints_what_the_guide_shows(tmp_path, sample):
    result = run_to_end(["run", _write(tmp_path, sample)])
    assert (result.returncode, result.stdout) == (0, sample.output), result.stderr


@pytest.mark.parametrize("sample", [s for s in SAMPLES if s.requests],
                         ids=[f"line{s.line}" for s in SAMPLES if s.requests])
def test_sample_answers_as_the_guide_says(tmp_path, sample):
    server = start([_write(tmp_path, sample)])
    try:
        for method, path, body, status, expected in sample.requests:
            raw, headers = None, {}
            if body is not None:
                raw = body.encode()
                try:
                    json.loads(body)
                    headers["Content-Type"] = "application/json"
                except ValueError:
                    headers["Content-Type"] = "text/plain"
            r = server.request(method, path, raw=raw, headers=headers)
            where = f"{method} {path} (guide line {sample.line})"
            assert r.status == int(status), (where, r.body)
            if expected is not None:
                assert r.body.decode() == expected, where
    finally:
        assert server.stop() == 0
