"""A built executable carries the `[cors]` and `[rate_limit]` tables of the svc.toml it was
built from (docs/reference/commands.md, svc.toml): run alone under `env -i`, with no svc.toml
beside it, it answers preflights and limits clients as `svcc run` does, with two workers."""

from __future__ import annotations

import pytest
from tests.helpers.executables import POSIX_ONLY, install_alone, start, svcc_build
from tests.helpers.svc_process import send

pytestmark = [pytest.mark.build, POSIX_ONLY]

PROGRAM = """\
@get("/hello")
async def hello() -> Result[str, Error]:
    return ok("hi")

async def main() -> Result[unit, Error]:
    db = try await db_open("hello.sqlite")
    return await serve(db, try parse_i64(env("SVC_PORT", "8080")))
"""

TOML = """\
entry = "main.svc"
[cors]
allow_origins = ["http://app.example"]
[rate_limit]
requests_per_second = 0.01
burst = 4
"""


def test_the_built_executable_answers_preflights_and_limits(build_cache, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "svc.toml").write_text(TOML)
    (project / "main.svc").write_text(PROGRAM)
    output = tmp_path / "dist" / "hello"
    result = svcc_build(build_cache, "--project", str(project), "-o", str(output))
    assert result.returncode == 0, result.stdout + result.stderr
    folder, tmpdir = tmp_path / "run", tmp_path / "tmp"
    tmpdir.mkdir()
    server = start(install_alone(output, folder), folder, tmpdir, SVC_WORKERS="2")
    try:
        asked = send(server.port, "OPTIONS", "/hello", None, {
            "Origin": "http://app.example", "Access-Control-Request-Method": "GET"})
        assert asked.status == 204
        assert asked.headers["access-control-allow-origin"] == "http://app.example"
        statuses = [send(server.port, "GET", "/hello", None, {}).status for _ in range(6)]
        assert statuses == [200, 200, 200, 429, 429, 429]  # the preflight took one token
    finally:
        assert server.stop() == 0, "".join(server.stderr)
