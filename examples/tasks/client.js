// The JavaScript client of the HTTP API of tasks, made by svcc 0.4.0 (svcc client --lang js).
// Do not edit: make it again when the program changes. It needs only fetch.

/** A route's URL: `baseUrl`, the path, and the query parameters that have a value. */
function urlOf(baseUrl, path, query) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null) search.append(name, String(value));
  }
  const queryText = search.toString();
  return baseUrl.replace(/\/+$/, "") + path + (queryText === "" ? "" : "?" + queryText);
}

const KINDS = {
  400: "invalid",
  401: "unauthorized",
  403: "forbidden",
  404: "not_found",
  405: "method_not_allowed",
  409: "conflict",
  413: "payload_too_large",
  415: "unsupported_media_type",
  422: "unprocessable",
  429: "too_many_requests",
  500: "internal",
  502: "bad_gateway",
  503: "busy",
  504: "timeout",
  507: "insufficient_storage",
};

/** An error answer's body, `{"error": "...", "fields": {...}}`, as an SvcError; a body that is
 * not svc's (a proxy's page) becomes the message as it is. */
function errorOf(status, text) {
  const kind = KINDS[status] ?? "unexpected";
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

/** What every route function shares: the request, then its answer as a Result. */
async function send(
  baseUrl,
  options,
  method,
  path,
  query,
  body,
  read,
) {
  const url = urlOf(baseUrl, path, query);
  const headers = { ...options.headers };
  let payload;
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
    payload = body.raw;
  }
  const doFetch = options.fetch ?? globalThis.fetch;
  const response = await doFetch(url, { method, headers, body: payload });
  if (response.ok && read === "bytes") {
    const bytes = new Uint8Array(await response.arrayBuffer());
    return { ok: true, status: response.status, value: bytes };
  }
  const text = await response.text();
  if (response.ok) {
    const value = read === "text" ? text : read === "json" && text !== "" ? JSON.parse(text) : null;
    return { ok: true, status: response.status, value: value };
  }
  return { ok: false, status: response.status, error: errorOf(response.status, text) };
}

/** An event stream route: fetch reads its `text/event-stream` (in browsers and Node alike,
 * with the client's header fields, which an EventSource cannot send), parsed as the WHATWG
 * HTML standard says, and comes back as an EventSource does. */
function events(
  baseUrl,
  options,
  path,
  query,
) {
  const handlers = [];
  const stop = new AbortController();
  let retry = 2000; // ms before coming back: the server's `retry:` sets it
  let lastId = ""; // sent as Last-Event-ID when coming back
  let status = 0; // of the last answer
  let data = ""; // the event being read: its `data:` lines, name and id
  let name = "";
  let id;

  function dispatch() {
    const text = data.slice(0, -1);
    const meta = {};
    if (name !== "") meta.event = name;
    if (id !== undefined) meta.id = id;
    const hasData = data !== "";
    data = "";
    name = "";
    id = undefined;
    if (!hasData) return; // no `data:` line: no event
    let message;
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

  function field(line) {
    if (line === "") {
      dispatch();
      return;
    }
    if (line.startsWith(":")) return; // a comment: the server's `: ping`
    const colon = line.indexOf(":");
    const key = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (key === "data") data += value + "\n";
    else if (key === "event") name = value;
    else if (key === "id" && !value.includes("\0")) lastId = id = value;
    else if (key === "retry" && /^[0-9]+$/.test(value)) retry = Number(value);
  }

  async function read(body) {
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
      const lineEnd = /\r\n|\r|\n/g;
      let start = 0;
      for (let end = lineEnd.exec(text); end !== null; end = lineEnd.exec(text)) {
        if (end[0] === "\r" && end.index === text.length - 1) break; // maybe half a CRLF
        field(text.slice(start, end.index));
        start = lineEnd.lastIndex;
      }
      text = text.slice(start);
    }
  }

  async function run() {
    const url = urlOf(baseUrl, path, query);
    const doFetch = options.fetch ?? globalThis.fetch;
    while (!stop.signal.aborted) {
      const headers = { ...options.headers };
      headers["Accept"] = "text/event-stream";
      if (lastId !== "") headers["Last-Event-ID"] = lastId;
      try {
        const response = await doFetch(url, { headers, signal: stop.signal });
        status = response.status;
        if (status === 204) return { ok: true, status, value: null };
        const type = response.headers.get("Content-Type") ?? "";
        if (!response.ok || !type.startsWith("text/event-stream") || response.body === null) {
          const text = response.ok ? `not an event stream: ${type}` : await response.text();
          return { ok: false, status, error: errorOf(status, text) };
        }
        await read(response.body);
      } catch {
        // the connection failed or broke (or close() ended it): come back unless closed
      }
      await pause(retry, stop.signal);
    }
    return { ok: true, status, value: null };
  }

  const stream = {
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
function pause(ms, signal) {
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

/** The API at `baseUrl` ("http://127.0.0.1:8080", or "" for the page's own
 * server): one function per route. */
export function createClient(baseUrl, options = {}) {
  return {
    /** GET / (svc: index) */
    index() {
      return send(baseUrl, options, "GET", "/", {},
        undefined, "text");
    },
    /** GET /client.js (svc: client_js) */
    clientJs() {
      return send(baseUrl, options, "GET", "/client.js", {},
        undefined, "bytes");
    },
    /** GET /api/live (svc: live): an event stream */
    live() {
      return events(baseUrl, options, "/api/live", {});
    },
    /** GET /api/tasks (svc: list_tasks) */
    listTasks() {
      return send(baseUrl, options, "GET", "/api/tasks", {},
        undefined, "json");
    },
    /** POST /api/tasks (svc: create_task) */
    createTask(params) {
      return send(baseUrl, options, "POST", "/api/tasks", {},
        { json: params.body }, "json");
    },
    /** GET /api/tasks/{id} (svc: get_task) */
    getTask(params) {
      return send(baseUrl, options, "GET", `/api/tasks/${encodeURIComponent(String(params.id))}`, {},
        undefined, "json");
    },
    /** PUT /api/tasks/{id} (svc: update_task) */
    updateTask(params) {
      return send(baseUrl, options, "PUT", `/api/tasks/${encodeURIComponent(String(params.id))}`, {},
        { json: params.body }, "json");
    },
    /** PATCH /api/tasks/{id} (svc: set_details) */
    setDetails(params) {
      return send(baseUrl, options, "PATCH", `/api/tasks/${encodeURIComponent(String(params.id))}`, {},
        { json: params.body }, "json");
    },
    /** GET /api/tasks/search (svc: search_tasks) */
    searchTasks(params) {
      return send(baseUrl, options, "GET", "/api/tasks/search", { pattern: params.pattern },
        undefined, "json");
    },
    /** GET /api/tags (svc: list_tags) */
    listTags() {
      return send(baseUrl, options, "GET", "/api/tags", {},
        undefined, "json");
    },
    /** DELETE /api/tasks/{id} (svc: delete_task) */
    deleteTask(params) {
      return send(baseUrl, options, "DELETE", `/api/tasks/${encodeURIComponent(String(params.id))}`, {},
        undefined, "json");
    },
    /** POST /api/tasks/{id}/attachments (svc: attach_file) */
    attachFile(params) {
      return send(baseUrl, options, "POST", `/api/tasks/${encodeURIComponent(String(params.id))}/attachments`, {},
        { form: { file: params.file } }, "json");
    },
    /** GET /api/attachments (svc: list_attachments) */
    listAttachments() {
      return send(baseUrl, options, "GET", "/api/attachments", {},
        undefined, "json");
    },
    /** GET /api/attachments/{id} (svc: download_attachment) */
    downloadAttachment(params) {
      return send(baseUrl, options, "GET", `/api/attachments/${encodeURIComponent(String(params.id))}`, {},
        undefined, "bytes");
    },
    /** DELETE /api/attachments/{id} (svc: delete_attachment) */
    deleteAttachment(params) {
      return send(baseUrl, options, "DELETE", `/api/attachments/${encodeURIComponent(String(params.id))}`, {},
        undefined, "json");
    },
    /** GET /api/stats (svc: stats) */
    stats() {
      return send(baseUrl, options, "GET", "/api/stats", {},
        undefined, "json");
    },
  };
}
