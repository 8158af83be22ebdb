"""The pipeline as plain data: imports (each file once, cycles, missing files), invalid UTF-8,
project folders with `svc.toml`, and what `check` and `compile` return."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from svc.compiler.front import syntax
from svc.compiler.diagnostics import render_all
from svc.compiler.front.imports import load_modules, read_source
from svc.pipeline import Checked, Compiled, Failed, Target, check, compile

MAIN = "def main():\n    pass\n"
ROUTE = '@get("/box")\nasync def box() -> Result[Box, Error]:\n    return ok(Box(v=1))\n'


@pytest.fixture
def in_tmp(tmp_path: Path):
    cwd = os.getcwd()
    os.chdir(tmp_path)
    yield tmp_path
    os.chdir(cwd)


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode() if isinstance(text, str) else text)


def where(diagnostics) -> list[tuple[str, int, int]]:
    return [(d.span.file, d.span.line, d.span.col) for d in diagnostics]


def test_imports_load_each_file_once_dependencies_first(in_tmp: Path) -> None:
    write(in_tmp, {
        "main.svc": 'import "lib/a.svc"\nfrom "lib/b.svc" import B\n' + MAIN,
        "lib/a.svc": 'import "b.svc"\nclass A:\n    x: i64\n',
        "lib/b.svc": 'import "../common.svc"\nclass B:\n    x: i64\n',
        "common.svc": "class C:\n    x: i64\n",
    })
    modules, sources, diagnostics = load_modules("main.svc")
    assert diagnostics == []
    assert [m.path for m in modules] == ["common.svc", "lib/b.svc", "lib/a.svc", "main.svc"]
    assert set(sources) == {"common.svc", "lib/b.svc", "lib/a.svc", "main.svc"}
    imports = [item for m in modules for item in m.items if isinstance(item, syntax.Import)]
    assert {i.resolved_path for i in imports} == {"common.svc", "lib/b.svc", "lib/a.svc"}


def test_an_import_cycle_is_reported_at_the_import_that_closes_it(in_tmp: Path) -> None:
    write(in_tmp, {"main.svc": 'import "a.svc"\n' + MAIN,
                   "a.svc": 'class A:\n    x: i64\nimport "b.svc"\n',
                   "b.svc": 'from "a.svc" import A\n'})
    _, _, diagnostics = load_modules("main.svc")
    assert where(diagnostics) == [("b.svc", 1, 1)]
    assert diagnostics[0].message == "import cycle: a.svc -> b.svc -> a.svc"


def test_a_file_importing_itself_is_a_cycle(in_tmp: Path) -> None:
    write(in_tmp, {"main.svc": '\nimport "./main.svc"\n' + MAIN})
    _, _, diagnostics = load_modules("main.svc")
    assert where(diagnostics) == [("main.svc", 2, 1)]
    assert "main.svc -> main.svc" in diagnostics[0].message


def test_a_missing_import_is_reported_at_its_string(in_tmp: Path) -> None:
    write(in_tmp, {"main.svc": 'import  "gone.svc"\nfrom "sub/none.svc" import X\n' + MAIN})
    _, _, diagnostics = load_modules("main.svc")
    assert where(diagnostics) == [("main.svc", 1, 9), ("main.svc", 2, 6)]
    assert diagnostics[0].message == "cannot find imported file 'gone.svc' (looked for gone.svc)"
    assert diagnostics[0].span.end_col == 19


def test_importing_a_directory(in_tmp: Path) -> None:
    (in_tmp / "dir.svc").mkdir()
    write(in_tmp, {"main.svc": 'import "dir.svc"\n' + MAIN})
    _, _, diagnostics = load_modules("main.svc")
    assert "is a directory" in diagnostics[0].message


def test_errors_in_several_files_are_all_reported(in_tmp: Path) -> None:
    write(in_tmp, {"main.svc": 'import "a.svc"\ndef main(:\n    pass\n',
                   "a.svc": "class A:\n    x i64\n"})
    _, _, diagnostics = load_modules("main.svc")
    assert sorted(where(diagnostics)) == [("a.svc", 2, 7), ("main.svc", 2, 9)]


def test_invalid_utf8_is_reported_at_the_first_bad_byte(in_tmp: Path) -> None:
    write(in_tmp, {"bad.svc": b'def main():\n    s = "\xc3\xa9\xc3(\xff"\n'})
    source, diagnostics = read_source("bad.svc")
    assert where(diagnostics) == [("bad.svc", 2, 11)]
    assert "invalid UTF-8" in diagnostics[0].message
    # kept only to show the line under the caret, the bad bytes replaced
    assert source.line_text(2) == '    s = "\u00e9\ufffd(\ufffd"'
    modules, sources, diagnostics = load_modules("bad.svc")
    assert modules == [] and where(diagnostics) == [("bad.svc", 2, 11)] and "bad.svc" in sources


def test_a_byte_order_mark_is_ignored(in_tmp: Path) -> None:
    write(in_tmp, {"bom.svc": "\ufeff" + MAIN})
    modules, _, diagnostics = load_modules("bom.svc")
    assert diagnostics == [] and modules[0].items[0].name == "main"


def test_check_stops_before_the_checker_on_syntax_errors(in_tmp: Path) -> None:
    write(in_tmp, {"main.svc": "def main(:\n    undefined_name()\n"})
    failed = check(Target(file="main.svc"))
    assert isinstance(failed, Failed)
    assert len(failed.diagnostics) == 1 and "main.svc" in failed.sources


def test_compile_gives_one_code_object_per_file_in_load_order(in_tmp: Path) -> None:
    write(in_tmp, {"main.svc": 'import "lib.svc"\n' + ROUTE + MAIN,
                   "lib.svc": "class Box:\n    v: i64\n"})
    compiled = compile(Target(file="main.svc"))
    assert isinstance(compiled, Compiled), compiled
    assert [path for path, _ in compiled.code] == ["lib.svc", "main.svc"]
    assert [code.co_filename for _, code in compiled.code] == ["lib.svc", "main.svc"]
    assert [route.path for route in compiled.program.routes] == ["/box"]
    assert compiled.project_dir is None


def test_a_failed_check_carries_the_sources_to_render_its_diagnostics(in_tmp: Path) -> None:
    write(in_tmp, {"main.svc": "def main():\n    x = 1 + \"a\"\n"})
    failed = compile(Target(file="main.svc"))
    assert isinstance(failed, Failed)
    assert render_all(failed.diagnostics, failed.sources).splitlines() == [
        "error: operator '+' needs two numbers or two str, found i64 and str",
        " --> main.svc:2:9",
        "  |",
        '2 |     x = 1 + "a"',
        "  |         ^^^^^^^",
        "",
        "error: 1 error in main.svc",
    ]


def test_route_rules_and_body_errors_are_reported_in_one_run(in_tmp: Path) -> None:
    write(in_tmp, {"main.svc": '@get("/a")\nasync def handler() -> i64:\n'
                               '    return 1\n' + "def main():\n    x = nope\n"})
    failed = check(Target(file="main.svc"))
    assert isinstance(failed, Failed)
    assert [(d.span.line, d.message) for d in failed.diagnostics] == [
        (2, "handler 'handler' must return Result[T, Error] where T is JSON-encodable "
            "(class, List, number, str, bool, unit, T?), Html or Response[T], found i64"),
        (5, "unknown name 'nope'"),
    ]


@pytest.mark.parametrize("target, shown", [
    (Target(file="app/main.svc"), "app/main.svc"),
    (Target(project="examples/tasks"), "tasks (examples/tasks)"),
    (Target(project="examples/tasks/"), "tasks (examples/tasks)"),
    (Target(project="tasks"), "tasks"),
])
def test_a_target_is_named_as_a_user_recognises_it(target: Target, shown: str) -> None:
    assert target.display_name == shown


def test_the_current_folder_is_named_by_its_name_and_where_it_is(in_tmp: Path) -> None:
    assert Target(project=".").display_name == f"{in_tmp.name} ({in_tmp})"
    (in_tmp / "sub").mkdir()
    assert Target(project="sub/..").display_name == f"{in_tmp.name} ({in_tmp})"


# --- projects -------------------------------------------------------------------------------

def project(root: Path, toml: str, files: dict[str, str] | None = None) -> list:
    write(root, {"svc.toml": toml, **(files or {"main.svc": MAIN})})
    failed = check(Target(project=str(root)))
    assert isinstance(failed, Failed) and str(root / "svc.toml") in failed.sources
    return [(d.span.line, d.span.col, d.message) for d in failed.diagnostics]


def test_project_reads_entry_and_sets_project_dir(tmp_path: Path) -> None:
    write(tmp_path, {"svc.toml": 'entry = "src/app.svc"\nname = "app"\n',
                     "src/app.svc": 'import "m.svc"\n' + MAIN, "src/m.svc": "class M:\n x: i64\n"})
    checked = check(Target(project=str(tmp_path)))
    assert isinstance(checked, Checked), checked
    assert str(tmp_path / "src" / "app.svc") in checked.sources
    assert checked.project_dir == str(tmp_path)
    assert checked.program.entry == str(tmp_path / "src" / "app.svc")


@pytest.mark.parametrize("toml, expected", [
    ('entry = "main.svc"\nversion = 1\n', (2, 1, "unknown key 'version' in svc.toml")),
    ('entry = "main.svc"\n[package]\nx = 1\n', (2, 2, "unknown key 'package'")),
    ("entry = 5\n", (1, 1, "'entry' in svc.toml must be a string")),
    ('entry = "main.svc"\nname = true\n', (2, 1, "'name' in svc.toml must be a string")),
    ('name = "x"\n', (1, 1, "svc.toml has no 'entry' key")),
    ('entry = "main.svc\n', (1, 18, "invalid svc.toml")),
    ('entry = "main.svc"\nentry = "b.svc"\n', (2, 16, "invalid svc.toml")),
    ('entry = "nope.svc"\n', (1, 1, "the entry file")),
    ('entry = ""\n', (1, 1, "'entry' in svc.toml must name a .svc file")),
])
def test_project_config_errors(tmp_path: Path, toml: str, expected: tuple) -> None:
    found = project(tmp_path, toml)
    assert len(found) == 1, found
    line, col, message = found[0]
    assert (line, col) == expected[:2] and expected[2] in message, found


def test_project_settings_reach_the_checked_program(tmp_path: Path) -> None:
    """`[config]` and `[server]` of svc.toml, for the code generator and `svcc openapi`."""
    write(tmp_path, {"svc.toml": 'entry = "main.svc"\n[config]\nport = 8080\n'
                                 'name = "x"\n[server]\ndemo_routes = false\n',
                     "main.svc": "class C:\n    port: i64\n    name: str\n\n"
                                 "def main():\n    c = config[C]()\n"})
    checked = check(Target(project=str(tmp_path)))
    assert isinstance(checked, Checked), checked
    program = checked.program
    assert program.settings.config == {"port": 8080, "name": "x"}
    assert program.settings.demo_routes is False and list(program.config_classes) == ["C"]
    write(tmp_path, {"svc.toml": 'entry = "main.svc"\n[jobs]\npoll_seconds = 0.05\n'})
    program = check(Target(project=str(tmp_path))).program  # type: ignore[union-attr]
    assert program.settings.config == {} and program.settings.demo_routes is True
    assert program.settings.jobs.poll_seconds == 0.05
    assert program.settings.jobs.lease_grace_seconds == 5.0
    alone = check(Target(file=str(tmp_path / "main.svc")))
    assert isinstance(alone, Checked)
    assert alone.program.settings.config is None and alone.program.settings.demo_routes is True


def test_a_config_key_is_found_under_its_table_not_elsewhere(tmp_path: Path) -> None:
    """The position of a [config] key skips the same name in another table."""
    found = project(tmp_path, 'entry = "main.svc"\n[server]\ndemo_routes = true\n'
                              '[config]\n\n  demo_routes = 1\n')
    assert found == [(6, 3, "no config[T] class has a field 'demo_routes' to read this key of "
                            "svc.toml [config] (config classes: none)")]


@pytest.mark.parametrize("toml", [
    'entry = "main.svc"\n[config]\napi_token = "hunter2"\n',
    'entry = "main.svc"\n[config]\n"db_password" = "hunter2\n',  # does not parse
    'entry = "main.svc"\nconfig.session_secret = "hunter2"\n',
    'entry = "main.svc"\nconfig = { stripe_key = "hunter2" }\n',
])
def test_a_secret_in_svc_toml_is_never_printed(tmp_path: Path, toml: str) -> None:
    write(tmp_path, {"svc.toml": toml, "main.svc": MAIN})
    failed = check(Target(project=str(tmp_path)))
    assert isinstance(failed, Failed)
    shown = render_all(failed.diagnostics, failed.sources)
    assert "hunter2" not in shown, shown
    assert "svc.toml:3:" in shown or "svc.toml:2:" in shown, shown


def test_a_10000_line_program_checks(in_tmp: Path) -> None:
    """The speed benchmark's program is valid (the timing itself is measured by hand)."""
    from tests.helpers.large_program import generate
    (in_tmp / "big.svc").write_text(generate(10_000))
    checked = check(Target(file="big.svc"))
    assert isinstance(checked, Checked), checked
    assert len(checked.sources["big.svc"].lines) >= 10_000
