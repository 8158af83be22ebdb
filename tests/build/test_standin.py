"""The build pipeline on its own: a hand-made program (no compiler involved) bundled, run with
`env -i`, and rebuilt with the analysis reused.

The stand-in is a program whose code comes from a small Python snippet: it prints,
writes a file in the working directory and, on request, fails from `main`. So these tests pin
what the executable adds around any program: output encoding without a locale, files relative
to the working directory, the exit status of `main`, and no unpack folder left behind.
"""

from __future__ import annotations

import shutil
import subprocess
import time

import pytest
from tests.helpers.executables import POSIX_ONLY, env_i_command, install_alone, \
    scrubbed_env, toolchain_cache, unpack_folders

from svc.bundle import build_executable

pytestmark = [pytest.mark.build, POSIX_ONLY]

STANDIN = '''
import os
from svc.runtime.lib.support import SvcError

def main():
    print("stand-in {tag}: h\\u00e9llo")
    with open("standin.txt", "a", encoding="utf-8") as f:
        f.write("{tag}\\n")
    if os.environ.get("STANDIN_FAIL"):
        return SvcError("invalid", "asked to fail")
    if os.environ.get("STANDIN_UPLOAD"):  # the runtime's lazily imported multipart parser
        from svc.rules.contract import Param, ParamSource
        from svc.runtime.http.uploads import UploadSpec

        spec = UploadSpec((Param("f", ParamSource.UPLOAD, "Upload"),))
        form = spec.form_of(b"multipart/form-data; boundary=b", b"--b\\r\\nContent-Disposition: "
                            b"form-data; name=f; filename=x.txt\\r\\n\\r\\nhello\\r\\n--b--\\r\\n")
        print("upload", form.files["f"].name, form.files["f"].size)
        form.close()
    return None
'''


def build_standin(tag: str, output, cache) -> float:
    """Bundle the stand-in tagged `tag` into `output`; the build's duration in seconds."""
    code = compile(STANDIN.format(tag=tag), "standin.svc", "exec")
    started = time.monotonic()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SVC_CACHE_DIR", str(cache))
        build_executable([("standin.svc", code)], str(output))
    return time.monotonic() - started


@pytest.fixture(scope="module")
def standin(build_cache, tmp_path_factory):
    output = tmp_path_factory.mktemp("standin-dist") / "standin"
    seconds = build_standin("A", output, build_cache)
    print(f"stand-in build: {seconds:.1f} s, {output.stat().st_size / 1e6:.1f} MB")
    return output


def run_alone(executable, tmp_path, **extra_env) -> tuple[subprocess.CompletedProcess, object]:
    """Run the executable to its end, alone in an empty folder, under `env -i`."""
    folder, tmpdir = tmp_path / "run", tmp_path / "tmp"
    tmpdir.mkdir()
    installed = install_alone(executable, folder)
    result = subprocess.run(env_i_command(installed, scrubbed_env(tmpdir, **extra_env)),
                            cwd=folder, capture_output=True, timeout=60)
    assert unpack_folders(tmpdir) == []
    return result, folder


def test_runs_with_nothing_but_itself(standin, tmp_path):
    result, folder = run_alone(standin, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode("utf-8") == "stand-in A: h\u00e9llo\n"
    assert (folder / "standin.txt").read_text() == "A\n"
    assert sorted(p.name for p in folder.iterdir()) == ["standin", "standin.txt"]


def test_it_receives_uploads_with_the_bundled_multipart_parser(standin, tmp_path):
    result, _ = run_alone(standin, tmp_path, STANDIN_UPLOAD="1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode("utf-8").splitlines()[-1] == "upload x.txt 5"


def test_an_error_from_main_is_exit_status_1(standin, tmp_path):
    result, _ = run_alone(standin, tmp_path, STANDIN_FAIL="1")
    assert result.returncode == 1
    assert result.stderr.decode() == "error: asked to fail\n"


def test_a_rebuild_attaches_the_new_program_to_the_cached_executable(standin, build_cache,
                                                                     tmp_path):
    log = toolchain_cache(build_cache) / "pyinstaller.log"
    before = log.stat().st_mtime_ns
    output = tmp_path / "dist" / "standin"
    seconds = build_standin("B", output, build_cache)
    print(f"stand-in rebuild: {seconds:.1f} s")
    assert log.stat().st_mtime_ns == before  # PyInstaller did not run
    result, _ = run_alone(output, tmp_path)
    assert result.stdout.decode("utf-8") == "stand-in B: h\u00e9llo\n"


def test_an_executable_without_a_program_says_so(standin, build_cache, tmp_path):
    bare = tmp_path / "bare"
    bases = sorted((toolchain_cache(build_cache) / "bases").iterdir())
    shutil.copy2(bases[0], bare)  # as PyInstaller made it
    result, _ = run_alone(bare, tmp_path)
    assert result.returncode == 1
    assert result.stderr.decode() == ("error: cannot load the embedded program: no program is "
                                      "attached to this executable\n")
