"""The code every generated client carries, whatever the program: the `Result` and error types,
the table from HTTP status to svc's error kind, and the one function that sends a request and
reads its answer.

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

_TEMPLATE = '''\
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

/** The options of `createClient`: a fetch to use instead of the global one, and header fields
 * sent with every request (an Authorization header, say). */
«export interface SvcClientOptions {
  fetch?: typeof fetch;
  headers?: Record<string, string>;
}»

const KINDS«: Record<number, string>» = {
__KINDS__
};

«type Query = Record<string, string | number | boolean | null | undefined>;»
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
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null) search.append(name, String(value));
  }
  const queryText = search.toString();
  const url = baseUrl.replace(/\\/+$/, "") + path + (queryText === "" ? "" : "?" + queryText);
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

_TYPED = re.compile("«([^»]*)»")


def runtime(typed: bool) -> str:
    """The fixed part of a client, in TypeScript (`typed`) or JavaScript."""
    kinds = "\n".join(f"  {status}: \"{kind}\"," for status, kind in KIND_BY_STATUS.items())
    text = _TEMPLATE.replace("__KINDS__", kinds).replace("__UNEXPECTED__", UNEXPECTED)
    text = _TYPED.sub(r"\1" if typed else "", text)
    if not typed:  # a type-only declaration leaves its comment and blank lines behind
        text = re.sub(r"/\*\*(?:(?!\*/).)*\*/\n\n", "", text, flags=re.S)
        text = re.sub(r"\n{3,}", "\n\n", text)
    return text.lstrip("\n")
