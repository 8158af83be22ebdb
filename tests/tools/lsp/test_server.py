"""`svcc lsp` driven over stdio by a real JSON-RPC client, as an editor drives it: a program
of two files in a temporary folder, opened, edited, and asked about."""

from __future__ import annotations

import random

import pytest

from tests.tools.lsp.lsp_client import hover_text, LspClient, position_of, uri

MODELS = """\
class Task:
    id: i64
    title: str
    done: bool

def describe(task: Task) -> str:
    return task.title
"""

APP = """\
from "models.svc" import Task, describe

def make_task(id: i64, title: str) -> Task:
    task = Task(id=id, title=title, done=False)
    return task

@get("/tasks/{id}")
async def show(id: i64) -> Result[Task, Error]:
    found = make_task(id, "write docs")
    print(describe(found))
    return ok(found)

async def main() -> Result[unit, Error]:
    port = try parse_i64(env("SVC_PORT", "8080"))
    db = try await db_open(":memory:")
    return await serve(db, port)
"""


@pytest.fixture
def program(tmp_path):
    (tmp_path / "models.svc").write_text(MODELS)
    (tmp_path / "app.svc").write_text(APP)
    return tmp_path


@pytest.fixture
def client(program):
    c = LspClient(program)
    yield c
    if c.process.poll() is None:
        assert c.close() == 0


def test_a_good_program_publishes_no_diagnostics_and_shuts_down_cleanly(program):
    c = LspClient(program)
    c.open(program / "app.svc")
    assert c.diagnostics(program / "app.svc")[0] == []
    assert c.close() == 0


def test_every_error_of_the_file_as_svcc_check_places_it(client, program):
    app = program / "app.svc"
    broken = APP.replace("task = Task(id=id", "task = Task(idd=id").replace(
        "print(describe(found))", "print(describe(fund))")
    app.write_text(broken)  # the same text on disk, to compare with svcc check
    client.open(app, broken)
    diagnostics, _ = client.diagnostics(app)
    messages = sorted(d["message"] for d in diagnostics)
    assert len(messages) == 2
    assert any("unknown name 'fund'" in m for m in messages)
    fund = position_of(broken, "fund")
    ranges = [d["range"] for d in diagnostics if "'fund'" in d["message"]]
    assert ranges == [{"start": {"line": fund[0], "character": fund[1]},
                       "end": {"line": fund[0], "character": fund[1] + 4}}]
    from tests.helpers.svc_process import run_to_end
    checked = run_to_end(["check", str(app)])
    for m in messages:
        assert m in checked.stderr
    assert f"app.svc:{fund[0] + 1}:{fund[1] + 1}" in checked.stderr


def test_an_imported_files_errors_are_published_for_that_file(client, program):
    (program / "models.svc").write_text(MODELS.replace("return task.title", "return task.nme"))
    client.open(program / "app.svc")
    diagnostics, _ = client.diagnostics(program / "models.svc")
    assert [d["message"] for d in diagnostics] == ["unknown field 'nme' in class Task"]
    assert client.diagnostics(program / "app.svc")[0] == []


def test_a_change_is_checked_and_a_fix_clears_the_diagnostics(client, program):
    app = program / "app.svc"
    client.open(app)
    _, mark = client.diagnostics(app)
    client.change(app, APP.replace("return ok(found)", "return ok(1)"))
    diagnostics, mark = client.diagnostics(app, mark)
    assert [d["message"] for d in diagnostics] == ["argument of ok: expected Task, found i64"]
    client.change(app, APP)
    assert client.diagnostics(app, mark)[0] == []


def test_the_unsaved_text_of_an_open_imported_file_is_what_is_checked(client, program):
    client.open(program / "app.svc")
    assert client.diagnostics(program / "models.svc")[0] == []
    client.open(program / "models.svc", MODELS.replace("title: str", "name: str"))
    params, _ = client.wait_for("textDocument/publishDiagnostics",
                                lambda p: p["uri"] == uri(program / "models.svc")
                                and p["diagnostics"])
    assert "unknown field 'title' in class Task" in [d["message"] for d in params["diagnostics"]]


def test_go_to_definition_across_files_and_within_a_function(client, program):
    app, models = program / "app.svc", program / "models.svc"
    client.open(app)
    client.diagnostics(app)

    def definition(needle, occurrence=1, offset=1):
        result = client.at("textDocument/definition", app,
                           *position_of(APP, needle, occurrence, offset))
        start = result["range"]["start"]
        return result["uri"], start["line"], start["character"]

    assert definition("describe(found)") == (uri(models), *position_of(MODELS, "describe"))
    assert definition("Task, describe") == (uri(models), *position_of(MODELS, "Task"))
    assert definition("Task(id=id") == (uri(models), *position_of(MODELS, "Task"))
    assert definition("-> Task:", offset=4)[0] == uri(models)  # a type annotation
    assert definition("make_task(id,") == (uri(app), *position_of(APP, "make_task"))
    assert definition("task\n") == (uri(app), *position_of(APP, "task = "))  # a variable
    assert definition("found)\n") == (uri(app), *position_of(APP, "found = "))
    assert definition("id, \"write") == (uri(app), *position_of(APP, "id: i64", 2))  # param

    client.open(models)
    result = client.at("textDocument/definition", models,
                       *position_of(MODELS, "task.title", offset=6))
    assert (result["range"]["start"]["line"], result["range"]["start"]["character"]) == \
        position_of(MODELS, "title")  # a field


MATCHING = APP.replace("    print(describe(found))\n", """\
    print(describe(found))
    let maybe: Task? = None
    match maybe:
        case Some(other_task):
            print(other_task.title)
        case None:
            pass
""")


def test_go_to_definition_of_a_keyword_field_and_a_match_binding(client, program):
    app, models = program / "app.svc", program / "models.svc"
    client.open(app, MATCHING)
    assert client.diagnostics(app)[0] == []

    def definition(needle, offset=1):
        result = client.at("textDocument/definition", app, *position_of(MATCHING, needle,
                                                                         offset=offset))
        assert result is not None, needle
        start, end = result["range"]["start"], result["range"]["end"]
        return result["uri"], (start["line"], start["character"]), (end["line"], end["character"])

    # `title=` of a class construction: the field `title` of class Task, in the other file
    line, column = position_of(MODELS, "title: str")
    assert definition("title=title") == (uri(models), (line, column), (line, column + 5))
    line, column = position_of(MODELS, "done: bool")
    assert definition("done=False") == (uri(models), (line, column), (line, column + 4))
    # the value of the keyword is still the parameter
    assert definition("title=title", offset=7)[1] == position_of(MATCHING, "title: str")
    # a match binding: its name inside `Some(...)`, not the whole pattern
    line, column = position_of(MATCHING, "other_task)")
    assert definition("other_task.title") == (uri(app), (line, column), (line, column + 10))


def test_hover_shows_types_builtins_and_routes(client, program):
    app = program / "app.svc"
    client.open(app)
    client.diagnostics(app)
    assert "found: Task" in hover_text(client, app, APP, "found)\n")
    assert "port: i64" in hover_text(client, app, APP, "port)\n")
    parse = hover_text(client, app, APP, "parse_i64")
    assert "parse_i64(text: str) -> Result[i64, Error]" in parse
    assert "decimal integer" in parse
    show = hover_text(client, app, APP, "show")
    assert "async def show(id: i64) -> Result[Task, Error]" in show
    assert "GET /tasks/{id}" in show
    assert "def make_task(id: i64, title: str) -> Task" in hover_text(client, app, APP,
                                                                   "make_task(id,")


def test_completion_offers_names_in_scope_builtins_and_fields_after_a_dot(client, program):
    app = program / "app.svc"
    client.open(app)
    client.diagnostics(app)
    line, _ = position_of(APP, "    return ok(found)")
    labels = {i["label"] for i in client.at("textDocument/completion", app, line, 4)}
    assert {"found", "id", "make_task", "show", "Task", "describe", "print", "db_open",
            "i64"} <= labels
    assert "port" not in labels  # a variable of another function
    edited = APP.replace("print(describe(found))", "print(found.)")
    client.change(app, edited)
    line, character = position_of(edited, "found.)", offset=6)
    items = client.at("textDocument/completion", app, line, character)
    assert {i["label"]: i["detail"] for i in items} == {"id": "i64", "title": "str",
                                                         "done": "bool"}


def test_document_symbols_are_classes_functions_and_routes(client, program):
    app = program / "app.svc"
    client.open(app)
    symbols = client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri(app)}})
    assert [s["name"] for s in symbols] == ["make_task", "GET /tasks/{id}", "show", "main"]
    client.open(program / "models.svc")
    symbols = client.request("textDocument/documentSymbol",
                             {"textDocument": {"uri": uri(program / "models.svc")}})
    assert symbols[0]["name"] == "Task"
    assert [c["name"] for c in symbols[0]["children"]] == ["id", "title", "done"]


def test_garbage_edits_never_crash_the_server(client, program):
    app = program / "app.svc"
    client.open(app)
    _, mark = client.diagnostics(app)
    rng = random.Random(17)
    alphabet = list("()[]{}:.,=\"'\\\n\t #@-+*/<>?!") + ["def ", "class ", "async ", "match ",
                                                          "if ", "\u00e9", "\U0001F600", "\0"]
    text = APP
    for _ in range(60):
        at = rng.randrange(len(text) + 1)
        cut = rng.randrange(0, 5)
        piece = "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 6)))
        text = text[:at] + piece + text[at + cut:]
        client.change(app, text)
        line = rng.randrange(text.count("\n") + 1)
        for method in ("textDocument/hover", "textDocument/definition",
                       "textDocument/completion"):
            client.at(method, app, line, rng.randrange(0, 10))
    client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri(app)}})
    client.change(app, "(" * 5000 + "\n")  # nested far too deep
    client.change(app, APP)
    diagnostics, _ = client.wait_for("textDocument/publishDiagnostics",
                                     lambda p: p["uri"] == uri(app) and p["diagnostics"] == [],
                                     mark)
    assert client.process.poll() is None
    assert "Traceback" not in b"".join(client.stderr).decode(errors="replace")


def test_an_imported_file_of_a_project_is_checked_with_its_project(tmp_path):
    import shutil

    from tests.helpers.svc_process import REPO
    project = tmp_path / "tasks"
    shutil.copytree(REPO / "examples" / "tasks", project)
    client = LspClient(project)
    try:
        models = project / "models.svc"
        client.open(models)  # no main of its own: fine, the project's entry imports it
        assert client.diagnostics(models)[0] == []
        _, mark = client.diagnostics(project / "tasks.svc")
        text = models.read_text()
        client.change(models, text.replace("class Task:", "class Tsk:", 1))
        params, _ = client.wait_for("textDocument/publishDiagnostics",
                                    lambda p: p["uri"] == uri(project / "tasks.svc")
                                    and p["diagnostics"], mark)
        assert any("'Task' is not defined in models.svc" in d["message"]
                   for d in params["diagnostics"])
    finally:
        assert client.close() == 0
