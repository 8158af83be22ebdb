"""A small Language Server Protocol client: `svcc lsp` in a subprocess, spoken to with
Content-Length framed JSON-RPC over its stdin and stdout, as an editor does.

A reader thread sorts what the server sends into responses (by id) and notifications (in
order), so a test can wait for "the diagnostics of this file" while the server also logs.
Used by the language-server tests and by bench/lsp_latency.py.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from tests.helpers.svc_process import svcc

TIMEOUT = 20.0


def uri(path: str | Path) -> str:
    return Path(path).resolve().as_uri()


class LspClient:
    def __init__(self, root: str | Path | None = None) -> None:
        self.process = subprocess.Popen(svcc() + ["lsp"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.next_id = 0
        self.responses: dict[int, Any] = {}
        self.notifications: list[dict] = []
        self.arrived = threading.Condition()
        self.stderr: list[bytes] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        self.versions: dict[str, int] = {}
        root_uri = uri(root) if root else None
        initialized = self.request("initialize", {"processId": None, "rootUri": root_uri,
                                                  "capabilities": {}})
        self.capabilities: dict = initialized["capabilities"]  # what the server offers
        self.notify("initialized", {})

    # --- framing --------------------------------------------------------------------------

    def send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def _read(self) -> None:
        stream = self.process.stdout
        while True:
            headers = {}
            while True:
                line = stream.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.decode().partition(":")
                headers[name.strip().lower()] = value.strip()
            message = json.loads(stream.read(int(headers["content-length"])))
            with self.arrived:
                if "id" in message and "method" not in message:
                    self.responses[message["id"]] = message
                elif "id" in message:  # a request from the server (e.g. registerCapability)
                    self.send({"id": message["id"], "result": None})
                else:
                    self.notifications.append(message)
                self.arrived.notify_all()

    def _drain_stderr(self) -> None:
        for line in self.process.stderr:
            self.stderr.append(line)

    # --- requests and notifications -------------------------------------------------------

    def request(self, method: str, params: Any, timeout: float = TIMEOUT) -> Any:
        """Send a request and wait for its response; an error response raises."""
        self.next_id += 1
        number = self.next_id
        self.send({"id": number, "method": method, "params": params})
        with self.arrived:
            if not self.arrived.wait_for(lambda: number in self.responses, timeout):
                raise TimeoutError(f"no response to {method} in {timeout} s; stderr: "
                                   f"{b''.join(self.stderr).decode(errors='replace')}")
            response = self.responses.pop(number)
        if "error" in response:
            raise RuntimeError(f"{method}: {response['error']}")
        return response.get("result")

    def notify(self, method: str, params: Any) -> None:
        self.send({"method": method, "params": params})

    def wait_for(self, method: str, match=lambda params: True, after: int = 0,
                 timeout: float = TIMEOUT) -> tuple[dict, int]:
        """The first notification `method` (from index `after`) whose params `match`, and
        the index after it."""
        def find():
            for i in range(after, len(self.notifications)):
                n = self.notifications[i]
                if n.get("method") == method and match(n.get("params")):
                    return n["params"], i + 1
            return None
        with self.arrived:
            if not self.arrived.wait_for(lambda: find() is not None, timeout):
                raise TimeoutError(f"no {method} in {timeout} s")
            return find()

    def diagnostics(self, path: str | Path, after: int = 0,
                    timeout: float = TIMEOUT) -> tuple[list[dict], int]:
        """The next diagnostics published for `path` (from notification index `after`)."""
        params, index = self.wait_for("textDocument/publishDiagnostics",
                                      lambda p: p["uri"] == uri(path), after, timeout)
        return params["diagnostics"], index

    def mark(self) -> int:
        """The index of the next notification: to wait only for what comes after now."""
        with self.arrived:
            return len(self.notifications)

    # --- documents ------------------------------------------------------------------------

    def open(self, path: str | Path, text: str | None = None) -> None:
        text = Path(path).read_text() if text is None else text
        self.versions[uri(path)] = 1
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri(path), "languageId": "svc", "version": 1, "text": text}})

    def change(self, path: str | Path, text: str) -> None:
        """Replace the whole text of an open document."""
        self.versions[uri(path)] += 1
        self.notify("textDocument/didChange", {
            "textDocument": {"uri": uri(path), "version": self.versions[uri(path)]},
            "contentChanges": [{"text": text}]})

    def edit(self, path: str | Path, line: int, character: int, end_line: int,
             end_character: int, text: str) -> None:
        """An incremental change (0-based LSP positions)."""
        self.versions[uri(path)] += 1
        self.notify("textDocument/didChange", {
            "textDocument": {"uri": uri(path), "version": self.versions[uri(path)]},
            "contentChanges": [{"range": {
                "start": {"line": line, "character": character},
                "end": {"line": end_line, "character": end_character}}, "text": text}]})

    def at(self, method: str, path: str | Path, line: int, character: int) -> Any:
        """A position request (definition, hover, completion) at 0-based line/character."""
        return self.request(method, {"textDocument": {"uri": uri(path)},
                                     "position": {"line": line, "character": character}})

    def close(self, timeout: float = 10.0) -> int:
        """shutdown, exit, and the server's exit status."""
        try:
            self.request("shutdown", None)
            self.notify("exit", None)
            return self.process.wait(timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()


def position_of(text: str, needle: str, occurrence: int = 1, offset: int = 0) -> tuple[int, int]:
    """The 0-based (line, character) of the `occurrence`-th `needle` in text, plus
    `offset` characters: where a test points the cursor."""
    index = -1
    for _ in range(occurrence):
        index = text.index(needle, index + 1)
    index += offset
    line = text.count("\n", 0, index)
    return line, index - (text.rfind("\n", 0, index) + 1)


def hover_text(client: LspClient, path: Path, text: str, needle: str, occurrence: int = 1,
               offset: int = 1) -> str | None:
    """The hover shown with the cursor on `needle` (see position_of), or None for none."""
    result = client.at("textDocument/hover", path, *position_of(text, needle, occurrence, offset))
    return result["contents"]["value"] if result else None


def serving(program: Path):
    """A pytest fixture's body: a server with `program` open, which must have no diagnostics,
    shut down cleanly after the test (unless the test ended it)."""
    client = LspClient(program.parent)
    client.open(program)
    assert client.diagnostics(program)[0] == []
    yield client
    if client.process.poll() is None:
        assert client.close() == 0
