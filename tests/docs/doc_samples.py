"""The ```svc samples of a Markdown page and the markers that say how each is tested.

Shared by the guide's test and the reference's test, so both pages follow one convention:

- Every ```svc block is a sample. A sample without a `main` function is a fragment: the
  harness appends `def main(): pass` (at the end, so line numbers stay those of the page).
- `<!-- output below -->` before a sample: it is run, and must print exactly the ```output
  block that follows it.
- `<!-- error below -->` before a sample: `svcc check` must fail, and its stderr must contain
  the ```text block that follows verbatim (the sample is checked as `example.svc`).
- `<!-- test file below -->` before a sample: it is a test file of the program sample before
  it (error samples left out). The program is written under the name the test file imports (`from "notes.svc" ...`),
  the sample next to it as `notes_test.svc`, and `svcc test notes.svc` must print the
  ```output block that follows, test times aside (`mask_durations`).
- `<!-- serve: METHOD PATH [BODY] -> STATUS [RESPONSE] -->` lines before a sample, or the
  same lines (without the comment marks) in a ```requests block right after it, where readers
  see them: it is served (`svcc run`, SVC_PORT set to a free port) and must answer each request
  so; a BODY that parses as JSON is sent as application/json, any other as text/plain (unless
  a `-H "Content-Type: ..."` before it says otherwise).
  BODY may start with request header fields written as curl takes them, `-H "Name: value"`
  (`GET /me -H "Authorization: Bearer t" -> 200`).

- `<!-- migration below: DIALECT -->` before a ```sql block: the block is a migration file of
  the next sample, which is then written as a project (`svc.toml` declaring
  `migrations/DIALECT/`, the sample as its entry `example.svc`) and checked, run or served
  with `--project .`, so its SQL is checked against that schema as a reader's would be.

Markers are HTML comments, so they do not show when the page is rendered.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path

from tests.helpers.svc_process import REPO, run_to_end, start

SAMPLE_NAME = "example.svc"
_FENCE = re.compile(r"^```(\w*)\s*$")
_REQUEST = r"(\S+) (\S+)(?: (.*?))? -> (\d{3})(?: (.*?))?"
_SERVE = re.compile(rf"^<!-- serve: {_REQUEST} -->$")
_REQUEST_LINE = re.compile(rf"^{_REQUEST}$")
_HEADER_OPTION = re.compile(r'-H "([^":]+):\s*([^"]*)"\s*')
_MAIN = re.compile(r"^(async +)?def +main *\(", re.MULTILINE)
_FRAGMENT_MAIN = "\n\ndef main():\n    pass\n"


@dataclass
class Sample:
    page: str
    line: int
    code: str
    requests: list[tuple] = field(default_factory=list)
    output: str | None = None
    wants_output: bool = False
    error: str | None = None
    wants_error: bool = False
    tested_program: str | None = None  # a test file sample: the program it tests
    migrations: dict[str, str] = field(default_factory=dict)  # dialect -> its one migration

    @property
    def id(self) -> str:
        return f"{Path(self.page).stem}:{self.line}"

    @property
    def program(self) -> str:
        """The text that is checked: the sample, with a `main` added to a fragment."""
        return self.code if _MAIN.search(self.code) else self.code + _FRAGMENT_MAIN


def samples(page: Path) -> list[Sample]:
    """The svc samples of `page` with their markers, in order."""
    lines = page.read_text().splitlines()
    found: list[Sample] = []
    markers: list[str] = []
    migrations: dict[str, str] = {}  # for the next sample
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if not fence:
            markers = markers + [lines[i]] if lines[i].startswith("<!--") else []
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        body = "\n".join(lines[i + 1:end]) + "\n"
        language = fence.group(1)
        last = found[-1] if found else None
        migration = next((m for m in markers if m.startswith("<!-- migration below: ")), None)
        if language == "sql" and migration is not None:
            migrations[migration.split(": ", 1)[1].removesuffix(" -->").strip()] = body
        if language == "svc":
            found.append(_sample(page, i + 1, body, markers))
            found[-1].migrations, migrations = migrations, {}
            if "<!-- test file below -->" in markers:
                programs = [s for s in found[:-1]
                            if s.tested_program is None and not s.wants_error]
                found[-1].tested_program = programs[-1].code if programs else ""
                found[-1].wants_output = True
        elif language == "output" and last and last.wants_output and last.output is None:
            last.output = body
        elif language == "text" and last and last.wants_error and last.error is None:
            last.error = body
        elif language == "requests" and last:
            last.requests += [_request(page, i + 2 + n, line)
                              for n, line in enumerate(body.splitlines()) if line.strip()]
        markers = []
        i = end + 1
    return found


def _sample(page: Path, line: int, code: str, markers: list[str]) -> Sample:
    sample = Sample(page=str(page.relative_to(REPO)), line=line, code=code)
    for marker in markers:
        serve = _SERVE.match(marker)
        if serve:
            sample.requests.append(serve.groups())
        elif marker == "<!-- output below -->":
            sample.wants_output = True
        elif marker == "<!-- error below -->":
            sample.wants_error = True
    return sample


def _request(page: Path, line: int, text: str) -> tuple:
    """One line of a ```requests block: METHOD PATH [BODY] -> STATUS [RESPONSE]."""
    match = _REQUEST_LINE.match(text.strip())
    if match is None:
        raise ValueError(f"{page}:{line}: not METHOD PATH [BODY] -> STATUS [RESPONSE]: {text}")
    return match.groups()


def write(folder: Path, sample: Sample) -> list[str]:
    """The sample as `example.svc` in `folder` (a fresh folder per sample), with its
    migrations as a project; the program's arguments to svcc."""
    path = folder / SAMPLE_NAME
    path.write_text(sample.program)
    if not sample.migrations:
        return [SAMPLE_NAME]
    toml = f'entry = "{SAMPLE_NAME}"\n[migrations]\n'
    for dialect, text in sample.migrations.items():
        (folder / "migrations" / dialect).mkdir(parents=True, exist_ok=True)
        (folder / "migrations" / dialect / "001_schema.sql").write_text(text)
        toml += f'{dialect} = "migrations/{dialect}"\n'
    (folder / "svc.toml").write_text(toml)
    return ["--project", "."]


def check(folder: Path, sample: Sample):
    """`svcc check example.svc`, run in `folder` so diagnostics name the file as the page does.

    A sample without migrations is checked in this process, through the same `svcc` entry
    point, its output captured: the pages hold more than a hundred samples, and a process
    each cost half a CPU-second of `make test`. One with migrations is checked in a process of
    its own (its SQL check may start a PostgreSQL cluster, which ends with that process)."""
    args = ["check", *write(folder, sample)]
    if sample.migrations:
        return run_to_end(args, cwd=folder)
    from svc.cli import main

    out, err = io.StringIO(), io.StringIO()
    previous = os.getcwd()
    os.chdir(folder)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            status = main(args)
    finally:
        os.chdir(previous)
    return subprocess.CompletedProcess(["svcc", *args], status, out.getvalue(), err.getvalue())


def run(folder: Path, sample: Sample):
    return run_to_end(["run", *write(folder, sample)], cwd=folder)


_IMPORTED = re.compile(r'^(?:from|import) +"([\w.-]+)\.svc"', re.MULTILINE)
_DURATION = re.compile(r"\((\d+ ms|\d+\.\d\d s)\)$", re.MULTILINE)


def run_tests(folder: Path, sample: Sample):
    """`svcc test` on a test file sample and the program it tests (see the module docstring)."""
    imported = _IMPORTED.search(sample.code)
    name = imported.group(1) if imported else Path(SAMPLE_NAME).stem
    (folder / f"{name}.svc").write_text(sample.tested_program or "")
    (folder / f"{name}_test.svc").write_text(sample.code)
    return run_to_end(["test", f"{name}.svc"], cwd=folder)


def mask_durations(report: str) -> str:
    """A test report with every test's time written `(T)`: times differ from run to run."""
    return _DURATION.sub("(T)", report)


def serve_and_ask(folder: Path, sample: Sample) -> None:
    """Serve the sample and assert each of its requests is answered as the page says."""
    server = start(write(folder, sample), cwd=folder)
    try:
        for method, path, body, status, expected in sample.requests:
            raw, headers = None, {}
            while body and _HEADER_OPTION.match(body):
                option = _HEADER_OPTION.match(body)
                headers[option.group(1)] = option.group(2)
                body = body[option.end():] or None
            if body is not None and "Content-Type" not in headers:
                try:
                    json.loads(body)
                    headers["Content-Type"] = "application/json"
                except ValueError:
                    headers["Content-Type"] = "text/plain"
            if body is not None:
                raw = body.encode()
            r = server.request(method, path, raw=raw, headers=headers)
            where = f"{method} {path} ({sample.page} line {sample.line})"
            assert r.status == int(status), (where, r.body)
            if expected is not None:
                assert r.body.decode() == expected, where
    finally:
        assert server.stop() == 0
