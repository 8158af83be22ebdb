"""`svcc client`'s output against the real tools: ONE `tsc --strict` over the TypeScript
clients of every example and of three test programs (classes, enums, generics, optional query
parameters, raw bodies), with a typed use of the task manager's client; and ONE Node run of
the task manager's JavaScript client against a real `svcc run --project examples/tasks` (tasks,
errors, and an attachment uploaded as a Blob and downloaded back as bytes).

Node and npm are required, not optional (`make test` installs them, target `node`):
TypeScript comes from tests/tools/client_node/package-lock.json, installed once with `npm ci`
as the VS Code extension's packages are (tests/editor/test_vscode_extension.py).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import node
from tests.helpers.svc_process import REPO, run_to_end
from tests.helpers.tasks_server import start

FOLDER = REPO / "tests" / "tools" / "client_node"
PROGRAMS = {"tasks": ["--project", "examples/tasks"], "hello": ["examples/hello/hello.svc"],
            "workload": ["examples/workload/workload.svc"],
            "maps_generics": ["tests/e2e/programs/maps_generics.svc"],
            "enums": ["tests/e2e/programs/enums.svc"],
            "binding": ["tests/e2e/programs/binding.svc"]}


NEEDED_BY = "the client tests"


def _program(name: str) -> str:
    return node.program(name, NEEDED_BY)


def _run(args: list[str | Path], timeout: float = 120) -> subprocess.CompletedProcess:
    return node.run(FOLDER, args, timeout)


@pytest.fixture(scope="module")
def typescript() -> Path:
    """tsc, from the folder's pinned packages (`npm ci` once, tests/helpers/node.py)."""
    return node.npm_installed(FOLDER, NEEDED_BY) / ".bin" / "tsc"


def _client(args: list[str], lang: str, out: Path) -> None:
    result = run_to_end(["client", "--lang", lang, *args, "-o", str(out)], cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert out.read_text().startswith("// The ")


def test_every_client_passes_tsc_strict(typescript: Path, tmp_path: Path) -> None:
    for name, args in PROGRAMS.items():
        _client(args, "ts", tmp_path / f"{name}.ts")
    shutil.copy(FOLDER / "usage.ts", tmp_path / "usage.ts")
    files = [f"{name}.ts" for name in PROGRAMS] + ["usage.ts"]
    (tmp_path / "tsconfig.json").write_text(json.dumps({"compilerOptions": {
        "strict": True, "noEmit": True, "target": "ES2022", "module": "ES2022",
        "moduleResolution": "bundler", "lib": ["ES2022", "DOM"], "skipLibCheck": True,
        "noUnusedLocals": True}, "files": files}))
    result = _run([typescript, "-p", tmp_path / "tsconfig.json"])
    assert result.returncode == 0, result.stdout + result.stderr
    broken = tmp_path / "broken.ts"  # and tsc does fail where a client's types say no
    broken.write_text('import { createClient } from "./tasks.js";\n'
                      'createClient("").getTask({ id: "1" });\n')
    config = json.loads((tmp_path / "tsconfig.json").read_text())
    config["files"] = ["broken.ts"]
    (tmp_path / "tsconfig.json").write_text(json.dumps(config))
    result = _run([typescript, "-p", tmp_path / "tsconfig.json"])
    assert result.returncode != 0 and "broken.ts(2," in result.stdout, result.stdout


def test_the_javascript_client_drives_the_task_manager(tmp_path: Path) -> None:
    node = _program("node")
    client = tmp_path / "tasks.mjs"
    _client(["--project", "examples/tasks"], "js", client)
    server = start(tmp_path, db=tmp_path / "tasks.sqlite")
    try:
        result = _run([node, FOLDER / "run_tasks.mjs", client.as_uri(),
                       f"http://127.0.0.1:{server.port}/"], timeout=60)
    finally:
        server.stop()
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["missing"] == {"ok": False, "status": 404, "error": {
        "kind": "not_found", "message": seen["missing"]["error"]["message"]}}
    assert seen["missing"]["error"]["message"]
    assert seen["invalid"]["ok"] is False and seen["invalid"]["status"] == 422
    assert seen["invalid"]["error"]["kind"] == "unprocessable"
    assert "title" in seen["invalid"]["error"]["fields"]
    assert seen["wrongShape"]["ok"] is False and seen["wrongShape"]["status"] == 400
    assert seen["wrongShape"]["error"]["kind"] == "invalid"
    assert seen["found"]["ok"] is True and [t["title"] for t in seen["found"]["value"]] == [
        "from node"]
    attached = seen["attached"]["value"]  # the client's file name reduced to a safe one
    assert attached["name"] == "notes.bin" and attached["content_type"] == "application/octet-stream"
    assert attached["sha256"] == hashlib.sha256(bytes(i * 7 % 256 for i in range(1000))).hexdigest()
    assert seen["attachments"]["value"] == [attached]
    assert seen["gone"]["status"] == 404 and seen["gone"]["error"]["kind"] == "not_found"
    assert seen["noTask"]["status"] == 404 and seen["noTask"]["error"]["message"] == (
        "no task with id 987654")
