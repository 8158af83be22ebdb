"""`svcc client --lang ts|js`, in this process: each type mapping, the error unions, the names,
optional query parameters, and the command line's failures (tsc and Node run the clients in
test_client_node.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from svc.cli import main

PROGRAM = '''
enum Role: admin, member

class User:
    @length(1, 40)
    name: str
    role: Role
    score: f64
    nick: str?
    tags: List[str]
    counts: Map[str, i64]

class Page[T]:
    items: List[T]
    next: str?

@get("/users/{id}")
async def get_user(id: i64, verbose: bool?) -> Result[User?, Error]:
    return ok(None)

@post("/users")
async def create_user(u: User) -> Result[Page[User], Error]:
    return ok(Page(items=[u], next=None))

@delete("/users/{id}")
async def delete_user(id: i64) -> Result[unit, Error]:
    return not_found("no such user")

async def main() -> Result[unit, Error]:
    db = try await db_open(":memory:")
    return await serve(db, 8080)
'''


def _client(tmp_path: Path, capsys, lang: str = "ts", text: str = PROGRAM) -> str:
    source = tmp_path / "app.svc"
    source.write_text(text)
    assert main(["client", "--lang", lang, str(source)]) == 0
    return capsys.readouterr().out


def test_types_map_as_the_server_writes_json(tmp_path, capsys) -> None:
    out = _client(tmp_path, capsys)
    assert 'export type Role = "admin" | "member";' in out
    assert ("export interface User {\n  /** name must be 1 to 40 bytes long */\n  name: string;\n"
            "  role: Role;\n  score: number;\n  nick: string | null;\n"
            "  tags: string[];\n  counts: Record<string, number>;\n}\n") in out
    assert "export interface Page<T> {\n  items: T[];\n  next: string | null;\n}\n" in out
    assert out.startswith("// The TypeScript client of the HTTP API of app, made by svcc ")


def test_one_function_per_route_with_its_parameters_and_errors(tmp_path, capsys) -> None:
    out = _client(tmp_path, capsys)
    # a `T?` result: its value is T, no value is the 404; the optional query is optional
    assert ("getUser(params: { id: number; verbose?: boolean | null }): "
            "Promise<Result<User, GetUserError>>") in out
    assert "createUser(params: { body: User }): Promise<Result<Page<User>, CreateUserError>>" in out
    assert "deleteUser(params: { id: number }): Promise<Result<null, DeleteUserError>>" in out
    errors = out.split("export type DeleteUserError =\n")[1].split(";")[0]
    assert [line.strip() for line in errors.splitlines()] == [
        f'| SvcError<"{kind}">' for kind in (
            "invalid", "not_found", "method_not_allowed", "payload_too_large", "internal",
            "busy", "timeout", "unexpected")]
    create = out.split("export type CreateUserError =\n")[1].split(";")[0]
    assert '"unsupported_media_type"' in create and '"unprocessable"' in create  # @length


def test_javascript_is_the_same_module_without_types(tmp_path, capsys) -> None:
    out = _client(tmp_path, capsys, "js")
    assert "interface" not in out and "Promise<" not in out and "«" not in out
    assert "export function createClient(baseUrl, options = {}) {" in out
    assert "    getUser(params) {" in out and "    createUser(params) {" in out
    assert out == _client(tmp_path, capsys, "js")  # deterministic


def test_a_program_that_does_not_check_prints_its_diagnostics(tmp_path, capsys) -> None:
    source = tmp_path / "bad.svc"
    source.write_text("async def main() -> Result[unit, Error]:\n    return ok(nope)\n")
    assert main(["client", "--lang", "ts", str(source)]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "nope" in captured.err and "Traceback" not in captured.err


def test_a_bad_language_is_a_usage_error(tmp_path, capsys) -> None:
    (tmp_path / "app.svc").write_text(PROGRAM)
    with pytest.raises(SystemExit) as stop:
        main(["client", "--lang", "py", str(tmp_path / "app.svc")])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if line.startswith("svcc client: error:")] == [
        "svcc client: error: argument --lang: invalid choice: 'py' (choose from 'ts', 'js')"]


def test_output_is_written_and_a_folder_refused(tmp_path, capsys) -> None:
    (tmp_path / "app.svc").write_text(PROGRAM)
    out = tmp_path / "client.ts"
    assert main(["client", "--lang", "ts", str(tmp_path / "app.svc"), "-o", str(out)]) == 0
    assert "export function createClient" in out.read_text()
    assert main(["client", "--lang", "ts", str(tmp_path / "app.svc"), "-o", str(tmp_path)]) == 1
    assert capsys.readouterr().err == f"error: cannot write '{tmp_path}': Is a directory\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".svcc")] == []


def test_bytes_are_base64_strings_as_the_server_encodes_them() -> None:
    from svc.compiler.svctypes import BYTES, ListOf, Opt
    from svc.tools.client.typescript import ts_type

    assert ts_type(None, ListOf(Opt(BYTES))) == "(string | null)[]"  # type: ignore[arg-type]


def test_the_task_managers_page_client_is_the_one_svcc_makes(capsys) -> None:
    """examples/tasks/client.js, which the page imports, is exactly what `svcc client --lang
    js` makes of the program now: a route added without making it again fails here."""
    project = Path(__file__).resolve().parents[2] / "examples" / "tasks"
    assert main(["client", "--lang", "js", "--project", str(project)]) == 0
    assert capsys.readouterr().out == (project / "client.js").read_text(), (
        "examples/tasks/client.js is stale: run svcc client --lang js --project examples/tasks "
        "-o examples/tasks/client.js")


def test_files_are_blobs_sent_as_form_data_and_downloads_are_bytes(tmp_path, capsys) -> None:
    out = _client(tmp_path, capsys, text='''
@post("/photos/{id}", body_limit="20 MiB")
async def add_photo(id: i64, photo: Upload, thumb: Upload?, caption: str?) -> Result[str, Error]:
    return ok(upload_name(photo))

@get("/photos/{id}")
async def photo(id: i64) -> Result[Response[bytes], Error]:
    return ok(respond(200, to_bytes("x")))

async def main() -> Result[unit, Error]:
    db = try await db_open(":memory:")
    return await serve(db, 8080)
''')
    assert ("addPhoto(params: { id: number; photo: Blob; thumb?: Blob | null; caption?: string "
            "| null }): Promise<Result<string, AddPhotoError>>") in out
    assert "{ form: { photo: params.photo, thumb: params.thumb } }, \"json\");" in out
    assert "photo(params: { id: number }): Promise<Result<Uint8Array, PhotoError>>" in out
    assert 'SvcError<"insufficient_storage">' in out and 'SvcError<"unsupported_media_type">' in out


LIVE = '''
class Said:
    text: str

class Line:
    n: i64
    text: str

@get("/rooms/{room}/lines")
async def lines(room: str, since: i64?, events: Events[Line]) -> Result[unit, Error]:
    return not_found("no room")

@get("/chat")
async def chat(ws: WebSocket[Said, Line]) -> Result[unit, Error]:
    return ok(())

@get("/raw")
async def raw(ws: WebSocket[bytes, bytes]) -> Result[unit, Error]:
    return ok(())

async def main() -> Result[unit, Error]:
    db = try await db_open(":memory:")
    return await serve(db, 8080)
'''


def test_streams_answer_a_typed_stream_or_session(tmp_path, capsys) -> None:
    out = _client(tmp_path, capsys, text=LIVE)
    assert ("lines(params: { room: string; since?: number | null }): SvcEvents<Line, LinesError> "
            "{\n      return events(baseUrl, options, `/rooms/${encodeURIComponent("
            "String(params.room))}/lines`, { since: params.since });") in out
    assert "chat(): SvcSocket<Said, Line> {\n      return socket(baseUrl, options, \"/chat\", {});" in out
    assert "raw(): SvcSocket<Uint8Array, Uint8Array>" in out  # binary messages, not base64
    # An event stream's errors before its first event are a union as any route's; a WebSocket
    # never shows its refusal's status, so its route has none.
    assert 'export type LinesError =' in out and '| SvcError<"not_found">' in out
    assert "ChatError" not in out and "RawError" not in out
    # Only what the routes use: no `send` (no ordinary route), the events and socket runtime.
    assert "function events<T, E>(" in out and "function socket<In, Out>(" in out
    assert "async function send" not in out and "type Body" not in out
    assert "It needs only fetch and WebSocket." in out
    plain = _client(tmp_path, capsys)  # and a program without streams carries neither
    assert "function events" not in plain and "function socket" not in plain
    assert "async function send<T, E>(" in plain


def test_the_javascript_streams_are_the_same_without_types(tmp_path, capsys) -> None:
    out = _client(tmp_path, capsys, "js", LIVE)
    assert "    lines(params) {\n      return events(baseUrl, options," in out
    assert "    chat() {\n      return socket(baseUrl, options, \"/chat\", {});" in out
    assert "interface" not in out and "«" not in out and "SvcEvents<" not in out
