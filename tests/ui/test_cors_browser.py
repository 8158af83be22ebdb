"""CORS in a real browser: a page served from one origin (a static server on 127.0.0.1:A)
fetches an svc server on 127.0.0.1:B (another origin: another port) with a JSON POST and a
custom header, which makes Chromium send a preflight first (once: the answer's max-age keeps
it), and with credentials (a cookie).
The fetch succeeds when svc.toml's `[cors]` allows the page's origin, and fails with a
TypeError in the page when it does not (a page on 127.0.0.1:C)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.helpers.svc_process import start

PROGRAM = """\
class Note:
    text: str

class Echo:
    text: str
    trace: str?
    cookie: str?

@post("/echo")
async def echo(note: Note, h: Headers) -> Result[Echo, Error]:
    return ok(Echo(text=note.text, trace=header(h, "X-Trace"), cookie=header(h, "Cookie")))

async def main() -> Result[unit, Error]:
    db = try await db_open(":memory:")
    return await serve(db, try parse_i64(env("SVC_PORT", "8080")))
"""

PAGE = b"""<!doctype html><html><head><title>other origin</title></head><body>
<script>
document.cookie = "session=s3cret; path=/";
async function call(target) {
  try {
    const answer = await fetch(target + "/echo", {
      method: "POST", credentials: "include",
      headers: {"Content-Type": "application/json", "X-Trace": "t-42"},
      body: JSON.stringify({text: "from the page"}),
    });
    return {ok: true, status: answer.status, body: await answer.json()};
  } catch (error) {
    return {ok: false, error: error.name};
  }
}
</script></body></html>"""


class Page(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the standard library's name
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def page_servers():
    """Two static servers of the same page on 127.0.0.1: their origins."""
    servers = [ThreadingHTTPServer(("127.0.0.1", 0), Page) for _ in range(2)]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    yield [f"http://127.0.0.1:{server.server_address[1]}" for server in servers]
    for server in servers:
        server.shutdown()
        server.server_close()


def svc_server(folder: Path, allowed: str):
    (folder / "main.svc").write_text(PROGRAM)
    (folder / "svc.toml").write_text(
        'entry = "main.svc"\n[cors]\n'
        f'allow_origins = ["{allowed}"]\nallow_methods = ["POST"]\n'
        'allow_headers = ["Content-Type", "X-Trace"]\nallow_credentials = true\nmax_age = 60\n')
    return start(["--project", str(folder)], cwd=folder)


def test_a_page_of_an_allowed_origin_reads_the_answer_and_another_cannot(
        browser, page_servers, tmp_path: Path) -> None:
    allowed, refused = page_servers
    server = svc_server(tmp_path, allowed)
    target = f"http://127.0.0.1:{server.port}"
    # No context.route here: Playwright's interception answers preflights itself, and the
    # point is the browser's own CORS checks against the server's answers. The page reaches
    # nothing but these 127.0.0.1 servers (asserted below from the requests it made).
    context = browser.new_context()
    seen: list[str] = []
    try:
        page = context.new_page()
        page.on("request", lambda request: seen.append(f"{request.method} {request.url}"))
        page.goto(allowed + "/")
        got = page.evaluate("target => call(target)", target)
        assert got == {"ok": True, "status": 200, "body": {
            "text": "from the page", "trace": "t-42", "cookie": "session=s3cret"}}
        # within max_age the browser asks no second time
        assert page.evaluate("target => call(target)", target) == got

        other = context.new_page()
        other.on("request", lambda request: seen.append(f"{request.method} {request.url}"))
        other.goto(refused + "/")
        failed = other.evaluate("target => call(target)", target)
        assert failed == {"ok": False, "error": "TypeError"}
    finally:
        context.close()
        server.stop()
    log = "".join(server.stderr)
    # the browser asked first, the server answered the preflight, then served the POST; the
    # second POST used the cached preflight (max_age = 60)
    assert log.count("OPTIONS /echo 204") == 1 and log.count("POST /echo 200") == 2
    assert "OPTIONS /echo 403" in log  # the other origin's preflight, refused
    assert log.count("POST /echo") == 2  # the refused page's POST was never sent
    assert all(url.split()[1].startswith("http://127.0.0.1:") for url in seen)
