"""Editors on topics and streams: hover on a topic constant names its topic, a handler's hover
says its route is an event stream or a WebSocket and of which messages, hover on the builtins
shows their records, completion offers them and the types, and a message of the wrong class is
a diagnostic at its place."""

from __future__ import annotations

from svc import pipeline
from svc.compiler.builtin_table import BUILTINS
from svc.tools import lsp_index
from tests.tools.lsp.checked import checked

PROGRAM = """\
class Note:
    text: str

NOTES: Topic[Note] = topic("notes")

@get("/live")
async def live(db: Db, events: Events[Note]) -> Result[unit, Error]:
    notes = try await subscribe(db, NOTES)
    while send_event(events, Note(text="hi")):
        match await receive(notes):
            case Some(n): send_event(events, n)
            case None: return ok(())
    return ok(())

@get("/chat")
async def chat(db: Db, ws: WebSocket[Note, Note]) -> Result[unit, Error]:
    try await publish(db, NOTES, Note(text="joined"))
    return ok(())

def main():
    print("x")
"""


def test_hover_on_a_topic_constant_names_its_topic(tmp_path):
    program, file = checked(tmp_path, PROGRAM)
    text = lsp_index.hover_at(program, file, 4, 1).text
    assert 'NOTES: Topic[Note] = topic("notes")' in text
    assert "at most once, in order per publisher" in text
    use = lsp_index.hover_at(program, file, 8, 38).text  # NOTES in subscribe(db, NOTES)
    assert 'topic("notes")' in use


def test_a_handler_says_what_its_stream_carries(tmp_path):
    program, file = checked(tmp_path, PROGRAM)
    assert lsp_index.hover_at(program, file, 7, 12).text.endswith(
        "\n\nroute: `GET /live`, an event stream of Note")
    assert lsp_index.hover_at(program, file, 16, 12).text.endswith(
        "\n\nroute: `GET /chat`, a WebSocket (receives Note, sends Note)")


def test_hover_on_the_live_builtins_shows_their_signatures(tmp_path):
    program, file = checked(tmp_path, PROGRAM)
    for line, col, name in ((8, 23, "subscribe"), (9, 11, "send_event"), (10, 21, "receive"),
                            (17, 15, "publish")):
        hover = lsp_index.hover_at(program, file, line, col)
        assert hover is not None, name
        assert BUILTINS[name].signature in hover.text, name


def test_completion_offers_the_live_builtins_and_types(tmp_path):
    program, file = checked(tmp_path, PROGRAM)
    labels = {c.label for c in lsp_index.completions_at(program, file, 21, 5, "    ")}
    assert {"publish", "subscribe", "receive", "send_event", "last_event_id", "ws_receive",
            "ws_send", "ws_close", "ws_forward", "Topic", "Events", "WebSocket",
            "Subscription"} <= labels


def test_a_message_of_the_wrong_class_is_a_diagnostic_at_its_place(tmp_path):
    entry = tmp_path / "app.svc"
    entry.write_text(PROGRAM.replace('publish(db, NOTES, Note(text="joined"))',
                                     "publish(db, NOTES, 7)"))
    result = pipeline.check(pipeline.Target(file=str(entry)))
    [found] = result.diagnostics
    assert found.message == "argument 3 of publish: expected Note, found i64"
    assert (found.span.line, found.span.col) == (17, 34)
