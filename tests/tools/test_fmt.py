"""`svcc fmt` as a user and a CI job run it: real subprocesses on real files. Files rewritten
in place, `--check` changing nothing, files with errors left alone, usage errors; and every
example, test program and documentation sample already in the layout."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.docs.doc_samples import samples
from tests.helpers.svc_process import REPO, run_to_end

MESSY = "def main( ):\n  x=1+2   # three\n  print( str(x) )\n"
TIDY = "def main():\n    x = 1 + 2  # three\n    print(str(x))\n"
BROKEN = "def main():\n    x = (1,\n"


def fmt(*args: str, cwd: Path):
    return run_to_end(["fmt", *args], cwd=cwd)


def test_fmt_rewrites_a_file_in_place_and_names_it(tmp_path: Path) -> None:
    (tmp_path / "app.svc").write_text(MESSY)
    (tmp_path / "tidy.svc").write_text(TIDY)
    result = fmt("app.svc", "tidy.svc", cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "app.svc\n", "")
    assert (tmp_path / "app.svc").read_text() == TIDY
    assert (tmp_path / "tidy.svc").read_text() == TIDY
    again = fmt("app.svc", cwd=tmp_path)
    assert (again.returncode, again.stdout) == (0, "")


def test_fmt_keeps_the_files_permissions_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "app.svc"
    path.write_text(MESSY)
    path.chmod(0o640)
    assert fmt("app.svc", cwd=tmp_path).returncode == 0
    assert path.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.svc"]


def test_check_lists_the_files_that_differ_changes_nothing_and_exits_1(tmp_path: Path) -> None:
    (tmp_path / "a.svc").write_text(MESSY)
    (tmp_path / "b.svc").write_text(TIDY)
    (tmp_path / "c.svc").write_bytes(TIDY.replace("\n", "\r\n").encode())
    result = fmt("--check", "a.svc", "b.svc", "c.svc", cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (1, "a.svc\nc.svc\n", "")
    assert (tmp_path / "a.svc").read_text() == MESSY
    assert (tmp_path / "c.svc").read_bytes() == TIDY.replace("\n", "\r\n").encode()
    assert fmt("--check", "b.svc", cwd=tmp_path).returncode == 0


def test_a_file_with_a_syntax_error_is_not_touched_and_gets_its_diagnostic(
        tmp_path: Path) -> None:
    (tmp_path / "bad.svc").write_text(BROKEN)
    (tmp_path / "app.svc").write_text(MESSY)
    for args in (["bad.svc", "app.svc"], ["--check", "bad.svc"]):
        result = fmt(*args, cwd=tmp_path)
        assert result.returncode == 1
        assert "error: '(' was never closed (expected ')')\n --> bad.svc:2:9\n" in result.stderr
        assert result.stderr.endswith("error: 1 error in bad.svc\n")
        assert "Traceback" not in result.stderr
        assert (tmp_path / "bad.svc").read_text() == BROKEN
    assert (tmp_path / "app.svc").read_text() == TIDY  # the good file is still formatted


def test_a_file_that_is_not_utf8_is_reported_and_not_touched(tmp_path: Path) -> None:
    data = b"def main():\n    print(\"\xff\")\n"
    (tmp_path / "latin.svc").write_bytes(data)
    result = fmt("latin.svc", cwd=tmp_path)
    assert result.returncode == 1
    assert "invalid UTF-8 (byte 0xFF): source files must be UTF-8" in result.stderr
    assert (tmp_path / "latin.svc").read_bytes() == data


def test_project_formats_every_svc_file_under_the_folder(tmp_path: Path) -> None:
    (tmp_path / "svc.toml").write_text('entry = "app.svc"\n')
    (tmp_path / "app.svc").write_text(MESSY)
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "util_test.svc").write_text(MESSY)
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "skip.svc").write_text(MESSY)
    check = fmt("--check", "--project", ".", cwd=tmp_path)
    assert (check.returncode, check.stdout) == (1, f"./app.svc\n./lib{os.sep}util_test.svc\n")
    result = fmt("--project", ".", cwd=tmp_path)
    assert result.returncode == 0
    assert (tmp_path / "lib" / "util_test.svc").read_text() == TIDY
    assert (tmp_path / ".hidden" / "skip.svc").read_text() == MESSY


def test_a_folder_stands_for_every_svc_file_under_it(tmp_path: Path) -> None:
    """`svcc fmt .`, as gofmt and ruff format take folders (issue 35: it said "'.' is not a
    file"); hidden folders skipped, files and folders mixed."""
    (tmp_path / "app.svc").write_text(MESSY)
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "util.svc").write_text(MESSY)
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "skip.svc").write_text(MESSY)
    (tmp_path / "notes.txt").write_text(MESSY)
    check = fmt("--check", ".", cwd=tmp_path)
    assert (check.returncode, check.stdout) == (1, f"./app.svc\n./lib{os.sep}util.svc\n")
    result = fmt("lib", "app.svc", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, f"lib{os.sep}util.svc\napp.svc\n")
    assert (tmp_path / "lib" / "util.svc").read_text() == TIDY
    assert (tmp_path / ".hidden" / "skip.svc").read_text() == MESSY
    assert (tmp_path / "notes.txt").read_text() == MESSY


@pytest.mark.parametrize("args, message", [
    ([], "error: give .svc files or --project DIR"),
    (["missing.svc"], "error: cannot find file 'missing.svc'"),
    (["--project", "nowhere"], "error: project folder 'nowhere' does not exist"),
    (["--project", "."], "error: no svc.toml in project folder '.'"),
    (["--project", ".", "app.svc"], "error: give .svc files or --project DIR, not both"),
])
def test_usage_errors_exit_2_with_one_line(tmp_path: Path, args, message) -> None:
    (tmp_path / "app.svc").write_text(MESSY)
    result = fmt(*args, cwd=tmp_path)
    assert (result.returncode, result.stderr) == (2, message + "\n")
    assert (tmp_path / "app.svc").read_text() == MESSY


# --- everything the project ships is in the layout ---------------------------------------------

#: (A project's `.svc/` folder is svcc's own: installed packages, never a program.)
FORMATTED = sorted(f for f in [*REPO.glob("examples/**/*.svc"),
                               *REPO.glob("tests/e2e/programs/*.svc"),
                               *REPO.glob("tests/compiler/corpus/good/*.svc")]
                   if f.is_file() and ".svc" not in f.parent.parts)
#: A corpus file kept as it is on purpose: it tests the lexer on CRLF line ends.
NOT_FORMATTED = {REPO / "tests/compiler/corpus/good/p_crlf.svc"}
PAGES = [*sorted(REPO.glob("docs/reference/*.md")), REPO / "docs/guide.md"]


def test_every_example_and_test_program_is_in_the_layout() -> None:
    files = [str(p.relative_to(REPO)) for p in FORMATTED if p not in NOT_FORMATTED]
    assert any(f.startswith("examples/") for f in files)
    result = fmt("--check", *files, cwd=REPO)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", ""), (
        "run `svcc fmt` on these files")


def test_every_doc_sample_is_in_the_layout(tmp_path: Path) -> None:
    """Every ```svc sample of the reference and the guide, except those that show a syntax
    error on purpose (`<!-- error below -->`), which cannot be formatted."""
    written = []
    for page in PAGES:
        for sample in samples(page):
            path = tmp_path / f"{sample.id.replace(':', '_')}.svc"
            path.write_text(sample.code)
            written.append((path.name, sample))
    result = fmt("--check", *(name for name, _ in written), cwd=tmp_path)
    unparsed = {line.split(":")[0].split(" --> ")[-1] for line in result.stderr.splitlines()
                if line.startswith(" --> ")}
    assert unparsed <= {name for name, sample in written if sample.wants_error}, result.stderr
    assert result.stdout == "", "samples not in the layout (line = the ```svc line):\n" + (
        result.stdout.replace(".svc", "").replace("_", ":"))


def test_field_rules_stay_one_per_line_above_their_field(tmp_path: Path) -> None:
    """`@length(1, 240)` lines are laid out like other attributes: spacing made canonical,
    each kept on its own line above its field, in the order written."""
    (tmp_path / "app.svc").write_text(
        "class Task:\n  @length( 1,240 )\n  @pattern( \"[a-z]+\")\n  title :str\n"
        "  @range(-5 , 5)\n  score: i64\n\ndef main():\n  pass\n")
    assert fmt("app.svc", cwd=tmp_path).returncode == 0
    assert (tmp_path / "app.svc").read_text() == (
        "class Task:\n    @length(1, 240)\n    @pattern(\"[a-z]+\")\n    title: str\n"
        "    @range(-5, 5)\n    score: i64\n\ndef main():\n    pass\n")


@pytest.mark.parametrize("messy, tidy", [
    ('@python( "slugs","slugify" , error = "invalid" )\n'
     "async def slugify(title:str,max_length:i64?)->Result[str,Error]\n"
     "def main():\n    pass\n",
     '@python("slugs", "slugify", error="invalid")\n'
     "async def slugify(title: str, max_length: i64?) -> Result[str, Error]\n"
     "def main():\n    pass\n"),
    ('@post( "/files" ,body_limit = "10 MiB" )\n'
     "async def save(file:Upload,note:Upload?)->Result[unit,Error]:\n"
     "    return ok(())\n",
     '@post("/files", body_limit="10 MiB")\n'
     "async def save(file: Upload, note: Upload?) -> Result[unit, Error]:\n"
     "    return ok(())\n"),
], ids=["python declaration", "route with a body limit and uploads"])
def test_an_attribute_with_options_keeps_its_line_and_is_spaced_like_a_call(messy, tidy) -> None:
    """In process (the layout itself): a `@python` declaration's attribute line and bodiless
    signature, or a route's `body_limit` option and `Upload?` parameters, get their spacing
    fixed with nothing joined or dropped, and the result laid out again is the same text."""
    from svc.compiler.front.layout import format_text

    assert format_text("t.svc", messy) == (tidy, [])
    assert format_text("t.svc", tidy) == (tidy, [])
