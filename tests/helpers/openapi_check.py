"""The task manager's HTTP exchanges, recorded and checked against its `svcc openapi` document.

`tests/helpers/tasks_server.py` records every request its client sends and the answer it got
while a `recording()` is open; `exchange_problems` then checks each pair with openapi-core:

- an answer to a documented operation must validate against it (a documented status, and a
  body of the documented media type and schema);
- a request the server accepted (2xx) must validate against the document: the document must
  never refuse what the server takes;
- an answer to a path or method the document does not have must be an error status with the
  documented `{"error": "..."}` body.

So the document cannot drift from the server: every exchange of the API tests is checked.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator
from urllib.parse import parse_qsl, urlsplit

from tests.helpers.svc_process import run_to_end

HOST_URL = "http://127.0.0.1"


@dataclass(frozen=True)
class Exchange:
    method: str
    target: str
    request_headers: dict[str, str]
    request_body: bytes | None
    status: int
    response_headers: dict[str, str]
    response_body: bytes

    def __str__(self) -> str:
        return f"{self.method} {self.target} -> {self.status}"


_recordings: list[list[Exchange]] = []


@contextmanager
def recording() -> Iterator[list[Exchange]]:
    """Collect the exchanges of every task manager client while open."""
    exchanges: list[Exchange] = []
    _recordings.append(exchanges)
    try:
        yield exchanges
    finally:
        _recordings.remove(exchanges)


def record(exchange: Exchange) -> None:
    for exchanges in _recordings:
        exchanges.append(exchange)


def openapi_document(args: list[str]) -> dict:
    """`svcc openapi <args>`, parsed."""
    result = run_to_end(["openapi", *args])
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def exchange_problems(document: dict, exchanges: list[Exchange]) -> list[str]:
    """What is wrong with each exchange, as one line each (empty: all of them validate)."""
    from openapi_core import Config, OpenAPI
    from openapi_core.testing import MockRequest, MockResponse

    # An event stream's body is text (its events are described by x-svc-item-schema, which
    # openapi-core does not read); openapi-core knows no text/event-stream of its own.
    config = Config(extra_media_type_deserializers={"text/event-stream": bytes.decode})
    api = OpenAPI.from_dict(document, config=config)
    problems = []
    for exchange in exchanges:
        url = urlsplit(exchange.target)
        method = "GET" if exchange.method == "HEAD" else exchange.method
        operation = _operation(document, url.path, method)
        if operation is None:
            problems += _undocumented(document, exchange)
            continue
        request = MockRequest(HOST_URL, method.lower(), url.path,
                              args=dict(parse_qsl(url.query, keep_blank_values=True)),
                              headers=exchange.request_headers, data=exchange.request_body,
                              content_type=exchange.request_headers.get("content-type"))
        if exchange.method == "HEAD":  # no body: the status must be one GET documents
            if str(exchange.status) not in operation["responses"]:
                problems.append(f"{exchange}: status not in the document")
            continue
        response = MockResponse(exchange.response_body, exchange.status,
                                headers=exchange.response_headers,
                                content_type=exchange.response_headers.get("content-type", ""))
        for error in api.iter_response_errors(request, response):
            problems.append(f"{exchange}: response: {_describe(error)}")
        if 200 <= exchange.status < 300:
            for error in api.iter_request_errors(request):
                problems.append(f"{exchange}: accepted, but the document refuses the request: "
                                f"{_describe(error)}")
    return problems


def _operation(document: dict, path: str, method: str) -> dict | None:
    """The documented operation for a concrete path (templates match one segment each)."""
    segments = path.split("/")
    for template, item in document["paths"].items():
        parts = template.split("/")
        if len(parts) == len(segments) and all(
                p == s or (p.startswith("{") and p.endswith("}") and s)
                for p, s in zip(parts, segments)):
            if method.lower() in item:
                return item[method.lower()]
    return None


def _undocumented(document: dict, exchange: Exchange) -> list[str]:
    """A request outside the document must be refused with the documented error body."""
    from openapi_schema_validator import OAS31Validator

    if exchange.status not in (400, 404, 405, 413, 431):
        return [f"{exchange}: not in the document, but answered {exchange.status}"]
    if exchange.method == "HEAD":
        return []
    schema = {**document["components"]["schemas"]["Error"], "components": document["components"]}
    try:
        body = json.loads(exchange.response_body)
    except ValueError:
        return [f"{exchange}: the error body is not JSON: {exchange.response_body[:80]!r}"]
    return [f"{exchange}: error body: {error.message}"
            for error in OAS31Validator(schema).iter_errors(body)]


def _describe(error: Exception) -> str:
    causes = [str(c) for c in getattr(error, "schema_errors", ())]
    cause = error.__cause__
    while cause is not None and not causes:
        causes = [str(c).splitlines()[0] for c in getattr(cause, "schema_errors", ())]
        cause = cause.__cause__
    return f"{type(error).__name__}: {error}" + (f" ({'; '.join(causes)})" if causes else "")
