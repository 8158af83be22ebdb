// The JavaScript client of the HTTP API of tasks, made by svcc 0.4.0 (svcc client --lang js).
// Do not edit: make it again when the program changes. It needs only fetch.

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
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null) search.append(name, String(value));
  }
  const queryText = search.toString();
  const url = baseUrl.replace(/\/+$/, "") + path + (queryText === "" ? "" : "?" + queryText);
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
    /** GET /api/live (svc: live) */
    live() {
      return send(baseUrl, options, "GET", "/api/live", {},
        undefined, "none");
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
