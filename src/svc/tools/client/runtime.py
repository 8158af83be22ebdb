"""The code every generated client carries: the `Result` and error types, the table from HTTP
status to svc's error kind, and the functions behind the kinds of route the program has: the
one that sends a request and reads its answer (`send`), an event stream route's (`events`:
fetch reading `text/event-stream`) and a WebSocket route's (`socket`: the standard WebSocket).

It is written once, in TypeScript, with each piece of type syntax between « and »: the
TypeScript client keeps those pieces (without the marks), the JavaScript client drops them.
One text, so the two languages cannot drift apart.
"""

from __future__ import annotations

import re

#: svc's error kind of each error status the server answers (svc.runtime.lib.support's
#: STATUS_BY_KIND, `database` folded into `internal`), and names for the statuses the server
#: itself answers before a handler runs (405, 413, 415, and 507 for an upload it had no room for).
KIND_BY_STATUS = {
    400: "invalid", 401: "unauthorized", 403: "forbidden", 404: "not_found",
    405: "method_not_allowed", 409: "conflict", 413: "payload_too_large",
    415: "unsupported_media_type", 422: "unprocessable", 429: "too_many_requests",
    500: "internal", 502: "bad_gateway", 503: "busy", 504: "timeout",
    507: "insufficient_storage",
}
#: The kind of an answer whose status svc never gives (a proxy's 502 page, say).
UNEXPECTED = "unexpected"

_TYPES = '''\
/** A route's answer: its value (a 2xx status), or an error answer. A network failure is not a
 * Result: the promise rejects, as fetch's does. */
«export type Result<T, E> =
  | { ok: true; status: number; value: T }
  | { ok: false; status: number; error: E };»

/** An error answer: svc's error kind (by the status), the server's message, and for `invalid`
 * and `unprocessable` what is wrong with each field. */
«export interface SvcError<K extends string> {
  kind: K;
  message: string;
  fields?: Record<string, string>;
}»

/** The options of `createClient`: a fetch to use instead of the global one, header fields
 * sent with every request (an Authorization header, say; a WebSocket cannot send them), and a
 * WebSocket class to use instead of the global one (Node 20 has none). */
«export interface SvcClientOptions {
  fetch?: typeof fetch;
  headers?: Record<string, string>;
  WebSocket?: typeof WebSocket;
}»

«type Query = Record<string, string | number | boolean | null | undefined>;»

/** A route's URL: `baseUrl`, the path, and the query parameters that have a value. */
function urlOf(baseUrl«: string», path«: string», query«: Query»)«: string» {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null) search.append(name, String(value));
  }
  const queryText = search.toString();
  return baseUrl.replace(/\\/+$/, "") + path + (queryText === "" ? "" : "?" + queryText);
}
'''

_ERRORS = '''
const KINDS«: Record<number, string>» = {
__KINDS__
};

/** An error answer's body, `{"error": "...", "fields": {...}}`, as an SvcError; a body that is
 * not svc's (a proxy's page) becomes the message as it is. */
function errorOf(status«: number», text«: string»)«: SvcError<string>» {
  const kind = KINDS[status] ?? "__UNEXPECTED__";
  try {
    const data = JSON.parse(text);
    if (typeof data === "object" && data !== null && typeof data.error === "string") {
      return data.fields === undefined ? { kind, message: data.error }
        : { kind, message: data.error, fields: data.fields };
    }
  } catch {
    // not JSON: the text itself is the message
  }
  return { kind, message: text };
}
'''

_REQUESTS = '''
«type Read = "json" | "text" | "bytes" | "none";»
«type Body = { json: unknown } | { raw: Uint8Array | string } | { form: Record<string, Blob | null | undefined> };»

/** What every route function shares: the request, then its answer as a Result. */
async function send«<T, E>»(
  baseUrl«: string»,
  options«: SvcClientOptions»,
  method«: string»,
  path«: string»,
  query«: Query»,
  body«: Body | undefined»,
  read«: Read»,
)«: Promise<Result<T, E>>» {
  const url = urlOf(baseUrl, path, query);
  const headers«: Record<string, string>» = { ...options.headers };
  let payload«: BodyInit | undefined»;
  if (body !== undefined && "json" in body) {
    headers["Content-Type"] = "application/json";
    payload = JSON.stringify(body.json);
  } else if (body !== undefined && "form" in body) {
    // multipart/form-data: fetch writes the Content-Type with its boundary
    const form = new FormData();
    for (const [name, file] of Object.entries(body.form)) {
      if (file !== undefined && file !== null) form.append(name, file);
    }
    payload = form;
  } else if (body !== undefined) {
    headers["Content-Type"] = "application/octet-stream";
    payload = body.raw« as BodyInit»;
  }
  const doFetch = options.fetch ?? globalThis.fetch;
  const response = await doFetch(url, { method, headers, body: payload });
  if (response.ok && read === "bytes") {
    const bytes = new Uint8Array(await response.arrayBuffer());
    return { ok: true, status: response.status, value: bytes« as T» };
  }
  const text = await response.text();
  if (response.ok) {
    const value = read === "text" ? text : read === "json" && text !== "" ? JSON.parse(text) : null;
    return { ok: true, status: response.status, value: value« as T» };
  }
  return { ok: false, status: response.status, error: errorOf(response.status, text)« as E» };
}
'''

_EVENTS = '''
/** What comes with an event besides its message: its `event:` name and its `id:`, when the
 * server gave them. */
«export interface SvcEventMeta {
  event?: string;
  id?: string;
}»

/** An event stream route's stream (svc's `Events[T]`), as a browser's EventSource keeps one:
 * after a lost connection, or a stream the server ended, it comes back `retry` ms later (2 s
 * unless the server says), sending the id of the last event it got as Last-Event-ID. */
«export interface SvcEvents<T, E> {
  /** Calls `handler` with each event's message (its JSON data), in order. */
  onEvent(handler: (message: T, meta: SvcEventMeta) => void): SvcEvents<T, E>;
  /** Ends the stream: no more events, no coming back. */
  close(): void;
  /** Settles once the stream has ended for good: ok after `close()` or a 204 (the server has
   * nothing to send); the error answer when the server refused the stream. */
  readonly done: Promise<Result<null, E>>;
}»

/** An event stream route: fetch reads its `text/event-stream` (in browsers and Node alike,
 * with the client's header fields, which an EventSource cannot send), parsed as the WHATWG
 * HTML standard says, and comes back as an EventSource does. */
function events«<T, E>»(
  baseUrl«: string»,
  options«: SvcClientOptions»,
  path«: string»,
  query«: Query»,
)«: SvcEvents<T, E>» {
  const handlers«: ((message: T, meta: SvcEventMeta) => void)[]» = [];
  const stop = new AbortController();
  let retry = 2000; // ms before coming back: the server's `retry:` sets it
  let lastId = ""; // sent as Last-Event-ID when coming back
  let status = 0; // of the last answer
  let data = ""; // the event being read: its `data:` lines, name and id
  let name = "";
  let id«: string | undefined»;

  function dispatch()«: void» {
    const text = data.slice(0, -1);
    const meta«: SvcEventMeta» = {};
    if (name !== "") meta.event = name;
    if (id !== undefined) meta.id = id;
    const hasData = data !== "";
    data = "";
    name = "";
    id = undefined;
    if (!hasData) return; // no `data:` line: no event
    let message«: T»;
    try {
      message = JSON.parse(text);
    } catch {
      return; // not JSON: not an event of this route
    }
    for (const handler of handlers) {
      try {
        handler(message, meta);
      } catch (error) {
        // reported as an EventSource listener's error is, without ending the stream
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }

  function field(line«: string»)«: void» {
    if (line === "") {
      dispatch();
      return;
    }
    if (line.startsWith(":")) return; // a comment: the server's `: ping`
    const colon = line.indexOf(":");
    const key = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (key === "data") data += value + "\\n";
    else if (key === "event") name = value;
    else if (key === "id" && !value.includes("\\0")) lastId = id = value;
    else if (key === "retry" && /^[0-9]+$/.test(value)) retry = Number(value);
  }

  async function read(body«: ReadableStream<Uint8Array>»)«: Promise<void>» {
    data = ""; // a connection starts with no event half read
    name = "";
    id = undefined;
    const reader = body.getReader();
    const decoder = new TextDecoder(); // UTF-8, a leading byte order mark dropped
    let text = "";
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) return;
      text += decoder.decode(chunk.value, { stream: true });
      const lineEnd = /\\r\\n|\\r|\\n/g;
      let start = 0;
      for (let end = lineEnd.exec(text); end !== null; end = lineEnd.exec(text)) {
        if (end[0] === "\\r" && end.index === text.length - 1) break; // maybe half a CRLF
        field(text.slice(start, end.index));
        start = lineEnd.lastIndex;
      }
      text = text.slice(start);
    }
  }

  async function run()«: Promise<Result<null, E>>» {
    const url = urlOf(baseUrl, path, query);
    const doFetch = options.fetch ?? globalThis.fetch;
    while (!stop.signal.aborted) {
      const headers«: Record<string, string>» = { ...options.headers };
      headers["Accept"] = "text/event-stream";
      if (lastId !== "") headers["Last-Event-ID"] = lastId;
      try {
        const response = await doFetch(url, { headers, signal: stop.signal });
        status = response.status;
        if (status === 204) return { ok: true, status, value: null };
        const type = response.headers.get("Content-Type") ?? "";
        if (!response.ok || !type.startsWith("text/event-stream") || response.body === null) {
          const text = response.ok ? `not an event stream: ${type}` : await response.text();
          return { ok: false, status, error: errorOf(status, text)« as E» };
        }
        await read(response.body);
      } catch {
        // the connection failed or broke (or close() ended it): come back unless closed
      }
      await pause(retry, stop.signal);
    }
    return { ok: true, status, value: null };
  }

  const stream«: SvcEvents<T, E>» = {
    onEvent(handler) {
      handlers.push(handler);
      return stream;
    },
    close() {
      stop.abort();
    },
    done: run(),
  };
  return stream;
}

/** Waits `ms`, or less when `signal` aborts first. */
function pause(ms«: number», signal«: AbortSignal»)«: Promise<void>» {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done);
  });
}
'''

_SOCKETS = '''
/** How a WebSocket ended: its close code and reason. 1000 normal, 1001 the server is stopping,
 * 1002 a malformed frame, 1007 a message that did not decode, 1009 a message over 1 MiB, 1011
 * a fault in the handler; 1006 the connection was lost or never made (a refused upgrade
 * included: a WebSocket never shows the status of a guard's refusal). */
«export interface SvcClosed {
  code: number;
  reason: string;
}»

/** A WebSocket route's session (svc's `WebSocket[In, Out]`): what the program receives (`In`)
 * is sent, what it sends (`Out`) comes to `onMessage`. */
«export interface SvcSocket<In, Out> {
  /** Sends `message`: its JSON as a text message, bytes (a Uint8Array) as a binary one. Sent
   * before the socket is open, it waits for it; once the socket is closing, it is dropped. */
  send(message: In): void;
  /** Calls `handler` with each message the program sends, in order. */
  onMessage(handler: (message: Out) => void): SvcSocket<In, Out>;
  /** Starts closing the socket: 1000 unless `code` (3000-4999) says otherwise. */
  close(code?: number, reason?: string): void;
  /** Settles once the socket is closed. */
  readonly closed: Promise<SvcClosed>;
}»

/** A WebSocket route: the standard WebSocket (the global one of browsers and Node 22, or
 * `options.WebSocket`) at the route's URL, ws: or wss:. A browser's WebSocket sends no header
 * fields of the page's choosing, so `options.headers` are not sent: such a route is
 * authenticated by cookies or query parameters. */
function socket«<In, Out>»(
  baseUrl«: string»,
  options«: SvcClientOptions»,
  path«: string»,
  query«: Query»,
)«: SvcSocket<In, Out>» {
  const url = new URL(urlOf(baseUrl, path, query), globalThis.location?.href);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  const ws = new (options.WebSocket ?? globalThis.WebSocket)(url.href);
  ws.binaryType = "arraybuffer";
  const waiting«: (string | BufferSource)[]» = [];
  const handlers«: ((message: Out) => void)[]» = [];
  ws.addEventListener("open", () => {
    for (const message of waiting.splice(0)) ws.send(message);
  });
  ws.addEventListener("message", (event) => {
    const data = event.data;
    const message = typeof data === "string" ? JSON.parse(data) : new Uint8Array(data);
    for (const handler of handlers) handler(message);
  });
  const closed = new Promise«<SvcClosed>»((resolve) => {
    ws.addEventListener("close", (event) => resolve({ code: event.code, reason: event.reason }));
  });
  const session«: SvcSocket<In, Out>» = {
    send(message) {
      const binary = message instanceof Uint8Array;
      const data = binary ? message« as BufferSource» : JSON.stringify(message);
      if (ws.readyState === ws.CONNECTING) waiting.push(data);
      else if (ws.readyState === ws.OPEN) ws.send(data);
    },
    onMessage(handler) {
      handlers.push(handler);
      return session;
    },
    close(code, reason) {
      ws.close(code, reason);
    },
    closed,
  };
  return session;
}
'''

_TYPED = re.compile("«([^»]*)»")


def runtime(typed: bool, requests: bool = True, events: bool = False, sockets: bool = False) -> str:
    """The fixed part of a client, in TypeScript (`typed`) or JavaScript: the functions of the
    kinds of route the program has, ordinary `requests`, `events` streams and `sockets`, and
    what they use (a module that never called a function would carry it for nothing, and
    tsc's noUnusedLocals refuses it)."""
    kinds = "\n".join(f"  {status}: \"{kind}\"," for status, kind in KIND_BY_STATUS.items())
    errors = _ERRORS.replace("__KINDS__", kinds).replace("__UNEXPECTED__", UNEXPECTED)
    text = "".join(part for part, wanted in (
        (_TYPES, True), (errors, requests or events), (_REQUESTS, requests), (_EVENTS, events),
        (_SOCKETS, sockets)) if wanted)
    text = _TYPED.sub(r"\1" if typed else "", text)
    if not typed:  # a type-only declaration leaves its comment and blank lines behind
        text = re.sub(r"/\*\*(?:(?!\*/).)*\*/\n\n", "", text, flags=re.S)
        text = re.sub(r"\n{3,}", "\n\n", text)
    return text.lstrip("\n")
