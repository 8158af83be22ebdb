// Follows live.svc's event streams through its generated JavaScript client (svcc client --lang
// js): node run_live.mjs CLIENT.mjs BASE_URL. Prints one JSON line of what it saw; the Python
// test (tests/tools/test_client_node.py) checks it. A failed expectation exits 1 with the reason.
import assert from "node:assert/strict";

const [clientPath, baseUrl] = process.argv.slice(2);
const { createClient } = await import(clientPath);
setTimeout(() => {
  console.error("run_live.mjs: no end within 30 s");
  process.exit(1);
}, 30_000).unref();

// The stream of notes: `ready` once subscribed, each note published from then on, the end of
// the stream after "bye", and a `ready` again when the client comes back with Last-Event-ID.
const api = createClient(baseUrl, { headers: { "x-member": "ann" } });
const seen = [];
const waiting = [];
const until = (test) => new Promise((resolve) => waiting.push({ test, resolve }));
const stream = api.liveNotes().onEvent((message, meta) => {
  seen.push({ message, meta });
  for (const waiter of waiting.splice(0)) {
    if (waiter.test(message)) waiter.resolve();
    else waiting.push(waiter);
  }
});
await until((note) => note.text === "ann here");
const added = await api.addNote({ body: { id: 1, text: "first" } });
assert.equal(added.ok, true, JSON.stringify(added));
await until((note) => note.id === 1);
await api.addNote({ body: { id: 2, text: "bye" } }); // the server ends the stream
await until((note) => note.text === "ann back after 2"); // 2 s later (retry: 2000)
stream.close();
const closed = await stream.done;

// Refused before the first event: the route's typed errors; nothing to stream: 204.
const refused = await api.liveNotes({ room: "nowhere" }).done;
const anonymous = await createClient(baseUrl).liveNotes().done;
const quiet = await api.quiet().done;

// The parser, on a stream cut where it hurts (the WHATWG rules): a byte order mark, CRLF split
// between chunks, a comment, an event over several data lines, a UTF-8 character split
// between chunks, `retry:`, an id and a name, and an event the end of the stream cuts off;
// then the client comes back after `retry` ms with the last id, and a 204 ends it.
const chunks = [[0xef, 0xbb, 0xbf], "retry: 5\r", "\n: a comment\r\ndata: {\"a\":\r\n", "data: 1}\r\n\r",
  "\nid: x\nevent: e\ndata: \"\xc3", "\xa9\"\n\n", "data: 3"];
const asked = [];
const fakeFetch = async (url, init) => {
  asked.push({ url, lastEventId: init.headers["Last-Event-ID"] ?? null });
  if (asked.length > 1) return new Response(null, { status: 204 });
  const body = new ReadableStream({
    start(controller) {
      for (const chunk of chunks) {
        controller.enqueue(Uint8Array.from(typeof chunk === "string"
          ? [...chunk].map((c) => c.charCodeAt(0)) : chunk));
      }
      controller.close();
    },
  });
  return new Response(body, { headers: { "Content-Type": "text/event-stream" } });
};
const parsed = [];
const fake = createClient("http://fake.invalid/", { fetch: fakeFetch }).quiet()
  .onEvent((message, meta) => parsed.push({ message, meta }));
const fakeDone = await fake.done;

console.log(JSON.stringify({ seen, closed, refused, anonymous, quiet, parsed, asked, fakeDone }));
