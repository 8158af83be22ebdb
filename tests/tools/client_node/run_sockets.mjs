// Talks over chat.svc's WebSockets through its generated JavaScript client (svcc client --lang
// js): node run_sockets.mjs MODE CLIENT.mjs BASE_URL. MODE `chat` drives chat.svc's own routes;
// MODE `echo` sends the same messages to the server's built-in /ws echo instead (every socket
// the client opens goes there), which tests the client's side on any server. Prints one JSON
// line of what it saw; the Python test (tests/tools/test_client_node.py) checks it.
import assert from "node:assert/strict";

const [mode, clientPath, baseUrl] = process.argv.slice(2);
const { createClient } = await import(clientPath);
setTimeout(() => {
  console.error("run_sockets.mjs: no end within 20 s");
  process.exit(1);
}, 20_000).unref();

class ToEcho extends WebSocket {
  constructor(url) {
    super(new URL("/ws", url));
  }
}
const api = createClient(baseUrl, mode === "echo" ? { WebSocket: ToEcho } : {});
const firstMessage = (session) => new Promise((resolve) => session.onMessage(resolve));

// JSON both ways: sent before the socket is open (it waits), answered as a typed message.
const chat = api.chat({ room: "lobby" });
const answered = firstMessage(chat);
chat.send({ text: "hello" });
const line = await answered;
chat.close(1000, "bye");
const chatClosed = await chat.closed;

// Bytes both ways: binary messages, Uint8Arrays.
const echo = api.echo();
const echoed = firstMessage(echo);
echo.send(new Uint8Array([0, 1, 2, 255]));
const bytes = await echoed;
assert.ok(bytes instanceof Uint8Array, String(bytes));
echo.close(4000, "done");
const echoClosed = await echo.closed;

// A message that is not an `In` (TypeScript would refuse it): chat.svc closes with 1007.
let wrongClosed = null;
if (mode === "chat") {
  const wrong = api.chat({ room: "lobby" });
  wrong.send("not a Said");
  wrongClosed = await wrong.closed;
}
console.log(JSON.stringify({ line, chatClosed, bytes: [...bytes], echoClosed, wrongClosed }));
