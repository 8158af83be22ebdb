"""A built executable carries the `[config]` table of the svc.toml it was built from, and the
environment overrides it as under `svcc run`; a bad value stops it at start in the same words
(docs/reference/commands.md, svc.toml)."""

from __future__ import annotations

import subprocess

import pytest
from tests.helpers.executables import POSIX_ONLY, env_i_command, install_alone, scrubbed_env, \
    svcc_build

pytestmark = [pytest.mark.build, POSIX_ONLY]

PROGRAM = """\
class Settings:
    greeting: str
    count: i64
    api_token: str?

def main():
    s = config[Settings]()
    print(f"{s.greeting} x{s.count} token:{s.api_token != None}")
"""


@pytest.fixture(scope="module")
def configured(build_cache, tmp_path_factory):
    project = tmp_path_factory.mktemp("configured")
    (project / "svc.toml").write_text('entry = "main.svc"\n[config]\ngreeting = "built in"\n'
                                      "count = 3\n")
    (project / "main.svc").write_text(PROGRAM)
    output = tmp_path_factory.mktemp("configured-dist") / "configured"
    result = svcc_build(build_cache, "--project", str(project), "-o", str(output))
    assert result.returncode == 0, result.stdout + result.stderr
    (project / "svc.toml").write_text('entry = "main.svc"\n')  # the built one is kept
    return output


def run_alone(executable, tmp_path, **extra_env) -> subprocess.CompletedProcess:
    folder, tmpdir = tmp_path / "run", tmp_path / "tmp"
    tmpdir.mkdir()
    installed = install_alone(executable, folder)
    return subprocess.run(env_i_command(installed, scrubbed_env(tmpdir, **extra_env)),
                          cwd=folder, capture_output=True, text=True, timeout=60)


def test_the_built_in_table_is_read_without_svc_toml(configured, tmp_path):
    result = run_alone(configured, tmp_path)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == "built in x3 token:False\n"


def test_the_environment_overrides_it(configured, tmp_path):
    result = run_alone(configured, tmp_path, SVC_CONFIG_COUNT="9",
                       SVC_CONFIG_API_TOKEN="hunter2")
    assert (result.returncode, result.stdout) == (0, "built in x9 token:True\n"), result.stderr


def test_a_bad_value_stops_it_at_start_without_showing_the_value(configured, tmp_path):
    result = run_alone(configured, tmp_path, SVC_CONFIG_COUNT="nine")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == (
        "error: config: SVC_CONFIG_COUNT (the environment variable for Settings.count) must be "
        "an i64 (an integer from -9223372036854775808 to 9223372036854775807), written in "
        "decimal digits with an optional sign; its value is not shown\n")
