"""The version is said once per place a user reads it, and they agree: pyproject.toml,
`svc.__version__`, `svcc --version`, the reference's titles and its `--version` examples."""

from __future__ import annotations

import re
import tomllib

import svc
from tests.helpers.svc_process import REPO, run_to_end


def _project_version() -> str:
    return svc.__version__


def test_svcc_version_is_the_one_version_of_svc() -> None:
    version = _project_version()
    assert version.startswith("0.4.")  # the 0.4 language, server and commands are in
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "version" in pyproject["project"]["dynamic"]  # read from svc.__version__ once
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "svc.__version__"}
    result = run_to_end(["--version"])
    assert (result.returncode, result.stderr) == (0, "")
    first, runtime = result.stdout.splitlines()
    assert first == f"svcc {version}"
    # the second line says which runtime `svcc run` would use (svc.native)
    assert runtime.startswith(("runtime: compiled with mypyc", "runtime: pure Python"))


def test_the_reference_says_the_same_version() -> None:
    version = _project_version()
    minor = ".".join(version.split(".")[:2])
    for page in sorted((REPO / "docs" / "reference").glob("*.md")):
        title = page.read_text().splitlines()[0]
        assert title.endswith(f"(version {minor})"), (page.name, title)
    commands = (REPO / "docs" / "reference" / "commands.md").read_text()
    shown = re.findall(r"svcc (\d+\.\d+\.\d+)", commands)
    assert shown and set(shown) == {version}
