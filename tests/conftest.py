"""The suite's map, and the fixtures every test folder may use.

The folders mirror `src/svc/`, so the tests of a module are found by its path:

    tests/rules/                      svc/rules/ (the layer under compiler and runtime)
    tests/compiler/{front,check,codegen}/
                                      svc/compiler/{front,check,codegen}/; tests/compiler/
                                      itself holds what spans the compiler: the corpus of good
                                      and bad programs, `svcc check`, the pipeline, fuzzing
    tests/runtime/{http,traffic,observability,background,db,lib}/
                                      svc/runtime/<the same>/ (in process: fake transports,
                                      demo servers, real databases)
    tests/tools/ (lsp/ in a folder)   svc/tools/: fmt, openapi, the `svcc test` runner, watch
    tests/native/                     svc/native/ (the compiled request path and its build)

Then the folders of what has no single module:

    tests/e2e/      programs run as users run them (`svcc run` in a subprocess, real sockets);
                    their programs are in tests/e2e/programs/
    tests/build/    `svcc build`'s executables (marker `build`)
    tests/ui/       the task manager in headless Chromium (marker `ui`)
    tests/docs/     the samples of docs/ checked against the compiler and runtime
    tests/editor/   the VS Code extension in editors/vscode
    tests/bench/    the benchmark harness of bench/ (benchmarks themselves live in bench/)
    tests/helpers/  code the tests share (servers in subprocesses, a PostgreSQL cluster ...)
    tests/test_architecture.py  the shape of src/svc (import cycles, module sizes)

Markers (pyproject.toml): `compiled_path` marks the test modules whose subject is one of the
modules mypyc compiles (`svc.native.MODULES`); `make test` runs them a second time on the
pure-Python modules (SVC_NATIVE=0), since only those modules differ between the two runs.
tests/native/test_markers.py checks that no such module is missed.

`make test` runs the suite with pytest-xdist (`-n 4 --dist loadfile`): a test module runs
whole on one worker, so its module-scoped servers start once; the session fixtures are per
worker (each worker has its own PostgreSQL cluster), and every server a test starts listens on
a free port of its own. The build tests share one build cache across workers
(tests/build/conftest.py).
"""

from __future__ import annotations

import pytest

from tests.helpers.compile_and_run import Runner
from tests.helpers.postgres import start_cluster


@pytest.fixture(scope="session")
def postgres_cluster():
    """Started on first use (initdb, pg_ctl on a free port of 127.0.0.1), removed at the end."""
    cluster = start_cluster()
    yield cluster
    cluster.remove()


@pytest.fixture
def run(tmp_path, capsys) -> Runner:
    """Compile a small main-only program and run it in this process (see Runner)."""
    return Runner(tmp_path, capsys)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """With `--dist loadfile` (make test): every file is one unit of work, except that all of
    tests/build is one. Its tests take turns on one build cache (`svcc build` locks it), so
    spread over the workers they would hold each waiting worker idle while another builds; in
    one worker they run back to back and the other workers go on with the rest."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class BuildsInOneWorker(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.startswith("tests/build/"):
                return "tests/build"
            return super()._split_scope(nodeid)

    return BuildsInOneWorker(config, log)
