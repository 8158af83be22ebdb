// Checked by tsc --strict with the generated clients (tests/tools/test_client_node.py): how a
// caller uses the streams of live.svc and chat.svc compiles, each message typed as the
// program declares it. Never run.
import { createClient as liveClient, type LiveNotesError, type Note } from "./live.js";
import { createClient as chatClient, type Line, type SvcClosed } from "./chat.js";

export async function follow(): Promise<string> {
  const api = liveClient("", { headers: { "x-member": "ann" } });
  const seen: Note[] = [];
  const stream = api.liveNotes({ room: "lobby" }).onEvent((note, meta) => {
    seen.push(note);
    if (meta.event === "ready" || meta.id === "1") stream.close();
  });
  const done = await stream.done;
  if (done.ok) return `${seen.length} notes`;
  const error: LiveNotesError = done.error;
  return error.kind === "unauthorized" ? "log in first" : error.message;
}

export async function talk(): Promise<number> {
  const api = chatClient("http://127.0.0.1:8091");
  const chat = api.chat({ room: "lobby" });
  const lines: Line[] = [];
  chat.onMessage((line) => lines.push(line)).send({ text: "hello" });
  const echo = api.echo().onMessage((bytes: Uint8Array) => bytes.length);
  echo.send(new Uint8Array([1, 2, 3]));
  echo.close(4000, "done");
  const closed: SvcClosed = await chat.closed;
  return closed.code + lines.length;
}
