"""The VS Code extension in editors/vscode, checked with its own tools (Node and npm).

Its grammar passes the annotated samples in editors/vscode/tests/*.svc, marks nothing in the
example programs as invalid, and knows every keyword, built-in function and type name of the
compiler (so the two cannot drift apart); the extension packs into a .vsix that holds the
grammar and the language configuration, and that .vsix loads and activates.

npm is required, not optional: a machine without it fails here with a message saying so, rather
than skipping the extension's tests without anyone noticing.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from svc.compiler.builtin_table import BUILTINS, RANGE, TYPE_NAMES
from svc.compiler.front.lexer import ALIASES, KEYWORDS
from tests.helpers import node

REPO = Path(__file__).resolve().parents[2]
EXTENSION = REPO / "editors" / "vscode"
GRAMMAR = EXTENSION / "syntaxes" / "svc.tmLanguage.json"
LANGUAGE_CONFIGURATION = EXTENSION / "language-configuration.json"
BIN = EXTENSION / "node_modules" / ".bin"


NEEDED_BY = "the VS Code extension's tests"


def _program(name: str) -> str:
    return node.program(name, NEEDED_BY)


def _run(args: list[str | Path], timeout: float = 60) -> subprocess.CompletedProcess:
    return node.run(EXTENSION, args, timeout)


_output = node.output


@pytest.fixture(scope="module")
def node_modules() -> Path:
    """The extension's npm packages (`npm ci` once, tests/helpers/node.py)."""
    return node.npm_installed(EXTENSION, NEEDED_BY)


def _grammar() -> dict:
    return json.loads(GRAMMAR.read_text(encoding="utf-8"))


def _matches(rule: dict) -> list[str]:
    """The `match` patterns of a grammar repository entry (one rule or a list of them)."""
    return [r["match"] for r in rule.get("patterns", [rule]) if "match" in r]


# --- the grammar and the compiler agree (no Node needed) ------------------------------------

def test_grammar_and_language_configuration_are_the_ones_package_json_names():
    package = json.loads((EXTENSION / "package.json").read_text(encoding="utf-8"))
    grammar = _grammar()
    assert grammar["scopeName"] == "source.svc"
    [contributed] = package["contributes"]["grammars"]
    assert (contributed["language"], contributed["scopeName"]) == ("svc", "source.svc")
    assert (EXTENSION / contributed["path"]).resolve() == GRAMMAR
    [language] = package["contributes"]["languages"]
    assert (language["id"], language["extensions"]) == ("svc", [".svc"])
    assert (EXTENSION / language["configuration"]).resolve() == LANGUAGE_CONFIGURATION
    configuration = json.loads(LANGUAGE_CONFIGURATION.read_text(encoding="utf-8"))
    assert configuration["comments"]["lineComment"] == "#"
    assert package["main"] == "./extension.js"
    assert package["contributes"]["configuration"]["properties"]["svc.server.path"]["default"] \
        == "svcc"


def test_every_lexer_keyword_is_highlighted_as_a_keyword_or_constant():
    repository = _grammar()["repository"]
    patterns = _matches(repository["keywords"]) + _matches(repository["constants"])
    words = sorted(KEYWORDS | set(ALIASES))
    missing = [w for w in words if not any(re.fullmatch(p, w) for p in patterns)]
    assert not missing, (f"keywords of svc.compiler.front.lexer missing from the 'keywords' or "
                         f"'constants' rules of {GRAMMAR.relative_to(REPO)}: {missing}")


def test_every_builtin_function_and_type_name_is_in_the_grammar():
    repository = _grammar()["repository"]
    [call] = _matches(repository["builtin-call"])
    [types] = _matches(repository["types"])
    # The rule matches a builtin's name where it is called: `len(` or `db_all[`.
    missing = [f for f in sorted(set(BUILTINS) | {RANGE})
               if not ((m := re.match(call, f + "(")) and m.group() == f)]
    missing += [t for t in sorted(TYPE_NAMES) if not re.fullmatch(types, t)]
    assert not missing, (f"names of svc.compiler.builtin_table missing from the 'builtin-call' or "
                         f"'types' rules of {GRAMMAR.relative_to(REPO)}: {missing}")


def _grammar_tool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "svc.tools.vscode_grammar", *args],
                          capture_output=True, text=True, timeout=60)


def test_the_builtin_names_of_the_grammar_are_made_from_the_records():
    """The `builtin-call` rule is derived (python -m svc.tools.vscode_grammar), never edited."""
    result = _grammar_tool("--check")
    assert result.returncode == 0, result.stderr


def test_a_stale_grammar_is_found_named_and_made_again(tmp_path):
    text = GRAMMAR.read_text(encoding="utf-8")
    stale = tmp_path / "svc.tmLanguage.json"
    stale.write_text(text.replace("|db_exec|", "|", 1), encoding="utf-8")
    checked = _grammar_tool("--check", "--grammar", str(stale))
    assert checked.returncode == 1
    assert "stale; run python -m svc.tools.vscode_grammar" in checked.stderr
    made = _grammar_tool("--grammar", str(stale))
    assert made.returncode == 0, made.stderr
    assert stale.read_text(encoding="utf-8") == text


# --- the extension's own tests and its package (Node and npm) -------------------------------

def test_grammar_passes_its_annotated_samples(node_modules):
    samples = sorted((EXTENSION / "tests").glob("*.svc"))
    assert len(samples) >= 6
    result = _run([BIN / "vscode-tmgrammar-test", "--compact", "tests/*.svc"])
    assert result.returncode == 0, _output(result)
    # The runner prints one line per file; an empty glob would pass silently.
    for sample in samples:
        assert sample.name in result.stdout, _output(result)


def test_grammar_marks_nothing_invalid_in_the_example_programs(node_modules):
    result = _run([_program("node"), "tests/check-no-invalid.js"])
    assert result.returncode == 0, _output(result)
    assert re.search(r"check-no-invalid: [1-9]\d* files, 0 invalid tokens", result.stdout)


def test_server_command_resolution(node_modules):
    result = _run([_program("node"), "--test", "tests/unit"])
    assert result.returncode == 0, _output(result)


def test_extension_packs_into_a_vsix_that_loads(node_modules, tmp_path):
    result = _run([BIN / "vsce", "package", "--out", tmp_path / "svc.vsix"])
    assert result.returncode == 0, _output(result)
    # With stdin closed vsce answers its own questions with "y"; at a terminal it would stop.
    assert "Do you want to continue" not in result.stdout + result.stderr, _output(result)
    vsix = tmp_path / "svc.vsix"
    assert vsix.is_file()
    with zipfile.ZipFile(vsix) as package:
        names = set(package.namelist())
        for required in ("extension/package.json", "extension/extension.js",
                         "extension/server-command.js", "extension/syntaxes/svc.tmLanguage.json",
                         "extension/language-configuration.json",
                         "extension/node_modules/vscode-languageclient/package.json"):
            assert required in names, f"{required} is not in the .vsix"
        assert not any(n.startswith("extension/tests/") for n in names)
        packed = json.loads(package.read("extension/syntaxes/svc.tmLanguage.json"))
        assert packed == _grammar()
        package.extractall(tmp_path / "unpacked")
    result = _run([_program("node"), "tests/activate-packaged.js",
                   tmp_path / "unpacked" / "extension"])
    assert result.returncode == 0, _output(result)
