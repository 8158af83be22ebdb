"""`svcc client`'s output against the real tools: ONE `tsc --strict` over the TypeScript
clients of every example and of five test programs (classes, enums, generics, optional query
parameters, raw bodies, event streams, WebSockets), with a typed use of the task manager's
client and of the streams' (and typed misuses, which tsc must refuse); ONE Node run of the task
manager's JavaScript client against a real `svcc run --project examples/tasks` (tasks, errors,
and an attachment uploaded as a Blob and downloaded back as bytes); and Node runs of the
streams' clients against real servers: live.svc's event streams (typed events, a guard's header
field, coming back with Last-Event-ID, errors and 204, and the parser on awkward chunks), the
WebSocket side on the server's built-in /ws echo, and chat.svc's WebSocket routes once the
server has them (svc.runtime.http.sockets).

Node and npm are required, not optional (`make test` installs them, target `node`):
TypeScript comes from tests/tools/client_node/package-lock.json, installed once with `npm ci`
as the VS Code extension's packages are (tests/editor/test_vscode_extension.py).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import node
from tests.helpers import svc_process
from tests.helpers.svc_process import REPO, run_to_end
from tests.helpers.tasks_server import start

FOLDER = REPO / "tests" / "tools" / "client_node"
PROGRAMS = {"tasks": ["--project", "examples/tasks"], "hello": ["examples/hello/hello.svc"],
            "workload": ["examples/workload/workload.svc"],
            "maps_generics": ["tests/e2e/programs/maps_generics.svc"],
            "enums": ["tests/e2e/programs/enums.svc"],
            "binding": ["tests/e2e/programs/binding.svc"],
            "live": ["tests/tools/client_node/live.svc"],
            "chat": ["tests/tools/client_node/chat.svc"]}
#: Typed misuses of the clients, each line of which tsc must refuse: a wrong parameter, a
#: message of the wrong type sent, an event or a message read as what it is not.
BROKEN = """\
import { createClient } from "./tasks.js";
import { createClient as liveClient } from "./live.js";
import { createClient as chatClient } from "./chat.js";
createClient("").getTask({ id: "1" });
chatClient("").chat({ room: "x" }).send({ txt: "hi" });
liveClient("").liveNotes().onEvent((n: number) => n);
chatClient("").echo().send("text");
chatClient("").chat({ room: "x" }).onMessage((line) => line.nope);
"""


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
    for usage in ("usage.ts", "usage_live.ts"):
        shutil.copy(FOLDER / usage, tmp_path / usage)
    files = [f"{name}.ts" for name in PROGRAMS] + ["usage.ts", "usage_live.ts"]
    (tmp_path / "tsconfig.json").write_text(json.dumps({"compilerOptions": {
        "strict": True, "noEmit": True, "target": "ES2022", "module": "ES2022",
        "moduleResolution": "bundler", "lib": ["ES2022", "DOM"], "skipLibCheck": True,
        "noUnusedLocals": True}, "files": files}))
    result = _run([typescript, "-p", tmp_path / "tsconfig.json"])
    assert result.returncode == 0, result.stdout + result.stderr
    (tmp_path / "broken.ts").write_text(BROKEN)  # and tsc does fail where the types say no
    config = json.loads((tmp_path / "tsconfig.json").read_text())
    config["files"] = ["broken.ts"]
    (tmp_path / "tsconfig.json").write_text(json.dumps(config))
    result = _run([typescript, "-p", tmp_path / "tsconfig.json"])
    refused = {int(line) for line in re.findall(r"broken\.ts\((\d+),", result.stdout)}
    assert refused == {4, 5, 6, 7, 8}, result.stdout


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


# --- streams --------------------------------------------------------------------------------------

def _stream_client(program: str, out: Path) -> None:
    _client([str(FOLDER / program)], "js", out)


def test_the_javascript_client_follows_event_streams(tmp_path: Path) -> None:
    node = _program("node")
    client = tmp_path / "live.mjs"
    _stream_client("live.svc", client)
    server = svc_process.start([str(FOLDER / "live.svc")])
    try:
        result = _run([node, FOLDER / "run_live.mjs", client.as_uri(),
                       f"http://127.0.0.1:{server.port}/"], timeout=60)
    finally:
        server.stop()
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["seen"] == [  # typed events, with their name and id; the guard had its header
        {"message": {"id": 0, "text": "ann here"}, "meta": {"event": "ready"}},
        {"message": {"id": 1, "text": "first"}, "meta": {"id": "1"}},
        {"message": {"id": 2, "text": "bye"}, "meta": {"id": "2"}},
        {"message": {"id": 0, "text": "ann back after 2"}, "meta": {"event": "ready"}}]
    assert seen["closed"] == {"ok": True, "status": 200, "value": None}
    assert seen["refused"] == {"ok": False, "status": 404, "error": {
        "kind": "not_found", "message": "no room nowhere"}}
    assert seen["anonymous"]["status"] == 401
    assert seen["anonymous"]["error"]["kind"] == "unauthorized"
    assert seen["quiet"] == {"ok": True, "status": 204, "value": None}
    assert seen["parsed"] == [{"message": {"a": 1}, "meta": {}},
                              {"message": "é", "meta": {"event": "e", "id": "x"}}]
    assert [asked["lastEventId"] for asked in seen["asked"]] == [None, "x"]
    assert seen["fakeDone"] == {"ok": True, "status": 204, "value": None}


def _websocket_node() -> list[str]:
    """node, with the flag that gives Node 20 the global WebSocket Node 22 has."""
    node = _program("node")
    flag = subprocess.run([node, "-e", "process.stdout.write(typeof WebSocket)"],
                          capture_output=True, text=True, timeout=30).stdout
    return [node] if flag == "function" else [node, "--experimental-websocket"]


def _talk(mode: str, program: str, tmp_path: Path) -> dict:
    """run_sockets.mjs in `mode` with chat.svc's client, against a server of `program`."""
    client = tmp_path / "chat.mjs"
    _stream_client("chat.svc", client)
    server = svc_process.start([str(FOLDER / program)])
    try:
        result = _run([*_websocket_node(), FOLDER / "run_sockets.mjs", mode, client.as_uri(),
                       f"http://127.0.0.1:{server.port}"], timeout=60)
    finally:
        server.stop()
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_javascript_clients_websockets_talk_to_the_built_in_echo(tmp_path: Path) -> None:
    """The client's side of WebSocket routes on any server: its sockets sent to /ws."""
    seen = _talk("echo", "live.svc", tmp_path)
    assert seen["line"] == {"text": "hello"}  # the JSON text sent, read back as a value
    assert seen["chatClosed"] == {"code": 1000, "reason": "bye"}
    assert seen["bytes"] == [0, 1, 2, 255]
    assert seen["echoClosed"] == {"code": 4000, "reason": "done"}


@pytest.mark.skipif(importlib.util.find_spec("svc.runtime.http.sockets") is None,
                    reason="WebSocket routes need svc.runtime.http.sockets (not yet merged)")
def test_the_javascript_client_drives_websocket_routes(tmp_path: Path) -> None:
    seen = _talk("chat", "chat.svc", tmp_path)
    assert seen["line"] == {"n": 1, "text": "lobby: hello"}
    assert seen["chatClosed"] == {"code": 1000, "reason": "bye"}
    assert seen["bytes"] == [0, 1, 2, 255]
    assert seen["echoClosed"] == {"code": 4000, "reason": "done"}
    assert seen["wrongClosed"]["code"] == 1007  # not a Said
