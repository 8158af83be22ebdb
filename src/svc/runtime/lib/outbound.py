"""Calling other services: the `http_get` and `http_send` builtins (and `http_stub` in tests).

Built on aiohttp's client (docs/decisions/http.md, 'Calling other services': measured against
httpx on this machine). This module is imported only by programs that call one of these
builtins (the code generator imports a runtime module where a call needs it), and it is the
only module that imports aiohttp, so a program that never calls out never loads it.

What every call gets, whatever the program asks:

- one `aiohttp.ClientSession` per event loop (`_session`), made at the first call: pooled
  keep-alive connections per host (`POOL_SIZE` at most in all), no cookie jar (one request's
  upstream cookies must not reach another request), no proxies from the environment;
- a connect timeout (`CONNECT_SECONDS`) and a total one (`TOTAL_SECONDS`), both cut to the
  calling request's remaining processing time less `MARGIN_SECONDS`, so a slow upstream is
  answered with a `timeout` error (504) before the server's own limit cuts the handler off;
- an answer size limit (`max_answer_bytes`, `SVC_HTTP_MAX_ANSWER_BYTES`, 10 MiB by default),
  counted on the decoded bytes as they arrive (a compressed bomb stops at the limit too);
- redirects not followed (a 3xx is the answer), TLS certificates always verified;
- failures as svc errors: `timeout` (504) for no answer in time, `bad_gateway` (502) for any
  other (refused, reset, TLS, a malformed or oversized answer, not UTF-8), with a short
  message for the client and the details on one error line of the log (`_failed`);
- one access line per call while the server writes access lines (`outbound GET
  http://host/path 200 1.3ms`, or its JSON object) and the metrics' counts (svc.runtime.observability.metrics).

Every call goes through `send`: the one place a trace span and a `traceparent` header go
(`_hook_before` / `_hook_after`, see their docstrings).

In `svcc test` (the test's services say `testing`: svc.runtime.services) a call first looks
in the stub table that `http_stub` fills (the test's own); a call it does not answer may reach a local host only (127.0.0.1 or localhost: a local
server the test talks to), any other host is a `bad_gateway` error naming the missing stub.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from svc import __version__
from svc.rules.outbound_calls import METHODS, method_problem, url_problem
from svc.runtime import services
from svc.runtime.observability import metrics, serverlog
from svc.runtime.http import eager
from svc.runtime.http.custom_response import Response
from svc.runtime.http.headers import Headers
from svc.runtime.http.context import request_deadline
from svc.runtime.lib.support import SvcError, SvcFault, copy
from svc.runtime.services import current as current_services

#: Seconds to open a connection (TCP and TLS), and for the whole call, at most.
CONNECT_SECONDS = 5.0
TOTAL_SECONDS = 30.0
#: A call inside a request gives up this long before the request's processing limit, so its
#: own 504 (with the reason in the log) comes before the server's.
MARGIN_SECONDS = 0.15
#: The largest answer body read, in bytes, unless SVC_HTTP_MAX_ANSWER_BYTES says otherwise.
DEFAULT_MAX_ANSWER_BYTES = 10 * 1024 * 1024
MAX_ANSWER_VARIABLE = "SVC_HTTP_MAX_ANSWER_BYTES"
#: Connections open at once per process (all hosts); a call waits for one when all are busy.
POOL_SIZE = 256
#: An idle pooled connection is closed after this many seconds.
KEEP_ALIVE_SECONDS = 15.0
#: Fields of the given headers not sent: the client writes its own (the host, the body's
#: framing) or they describe the connection the headers came in on (RFC 9110 §7.6.1).
_NOT_SENT = frozenset({"host", "content-length", "transfer-encoding", "connection",
                       "keep-alive", "proxy-connection", "te", "trailer", "upgrade"})
#: Fields of an answer left out of its Response: they describe the connection and the
#: framing of the bytes received (the body is given decoded), and Date is the sending
#: server's: a handler that answers with the Response gets its own server's.
_NOT_KEPT = frozenset({"content-length", "transfer-encoding", "content-encoding", "connection",
                       "keep-alive", "proxy-connection", "te", "trailer", "upgrade", "date"})
#: What every call says it is: the product and its version (svc.__version__).
USER_AGENT = f"svc/{__version__}"
#: The hosts a test may call without a stub.
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost"})

#: Messages the svc client of a failed call sees; the details go to the log only.
TIMEOUT_MESSAGE = "the upstream service did not answer in time"
BAD_GATEWAY_MESSAGE = "the upstream service failed"

#: One client session per event loop, made at its first call; closed before its loop ends
#: (this module joins the lifecycle registry: svc.runtime.services).
_sessions: dict[asyncio.AbstractEventLoop, aiohttp.ClientSession] = {}
_max_answer: int | None = None


class Failure(Exception):
    """Why a call failed: its error kind (`timeout` or `bad_gateway`) and the detail for the log."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


# --- the builtins ---------------------------------------------------------------------------------

async def http_get(url: str, headers: Headers) -> Response | SvcError:
    """`http_get(url, headers)`: `http_send("GET", url, headers, "")`."""
    return await send("GET", url, headers, "")


async def http_send(method: str, url: str, headers: Headers, body: str) -> Response | SvcError:
    """`http_send(method, url, headers, body)`: the upstream's answer as a Response[str]."""
    return await send(method, url, headers, body)


def http_stub(method: str, url: str, answer: Response) -> None:
    """`http_stub(method, url, answer)` (test files): calls of `method` on exactly `url` are
    answered with a copy of `answer` for the rest of the test, without a connection."""
    _check_request("http_stub", method, url)
    current_services().stubs[(method, url)] = copy(answer)


# --- the one send path ----------------------------------------------------------------------------

async def send(method: str, url: str, headers: Headers, body: str) -> Response | SvcError:
    """Send one request and read its answer: every outbound call passes here.

    The hook point for traces: `_hook_before` runs before anything is sent and returns the
    header fields to send (a span's `traceparent` goes in there) and a value handed back to
    `_hook_after`, which runs once the call is over with its outcome (`"200"`, `"timeout"`,
    `"bad_gateway"`, `"cancelled"`): where a span ends and records it."""
    target = _check_request("http_send", method, url)
    fields = _fields(headers, body)
    fields, hook = _hook_before(method, target, fields)
    started = time.perf_counter()
    outcome = "cancelled"
    try:
        answer = _stubbed(method, url, target.host)
        if answer is None:
            answer = await _exchange(method, url, fields, body)
        outcome = str(answer.status)
        return answer
    except Failure as failure:
        outcome = failure.kind
        _failed(method, target, failure)
        message = TIMEOUT_MESSAGE if failure.kind == "timeout" else BAD_GATEWAY_MESSAGE
        # the cause rides along for the logs (a job's last_error), never for the client
        return SvcError(failure.kind, message, f"outbound {method} {target.shown}: "
                                               f"{failure.detail}")
    finally:
        elapsed = time.perf_counter() - started
        _hook_after(hook, outcome)
        _record(method, target, outcome, elapsed)


def _hook_before(method: str, target: Target,
                 fields: list[tuple[str, str]]) -> tuple[list[tuple[str, str]], Any]:
    """Before a call is sent: the fields to send and what `_hook_after` gets back. With
    traces on (svc.runtime.observability.tracing) a client span starts here, the child of the calling
    request's span, and its `traceparent` goes into the fields (svc.runtime.observability.otel). `target`
    has the URL's scheme, host, port and the URL as the log shows it (`shown`)."""
    tracer = current_services().tracer
    if tracer is None:
        return fields, None
    return tracer.outbound_started(method, target, fields)


def _hook_after(hook: Any, outcome: str) -> None:
    """After a call, whatever became of it: `hook` is what `_hook_before` returned, `outcome`
    the status as text or the error kind; with traces on, the call's span ends here."""
    if hook is not None:
        hook(outcome)


class Target:
    """What a call needs of its URL, worked out once per URL: the scheme, the host (a test's
    stubs and local hosts are decided by it), the port (the scheme's when the URL has none),
    the metrics' `host:port` label and the URL as the log shows it."""

    __slots__ = ("scheme", "host", "port", "label", "shown")

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.scheme = parts.scheme
        self.host = parts.hostname or ""
        self.port = parts.port if parts.port is not None else \
            443 if parts.scheme == "https" else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.label = f"{host}:{self.port}"
        # as the log shows it: no user and password, query or fragment (an API key often
        # travels in the query); the port only when the URL names one
        port = f":{parts.port}" if parts.port is not None else ""
        self.shown = f"{parts.scheme}://{host}{port}{parts.path or '/'}"


def _check_request(what: str, method: str, url: str) -> Target:
    """The URL's target; a method or URL the client cannot send is a fault (the program's
    mistake, like a computed status `respond` refuses), named with the builtin. A literal
    one is a compile error already (the same rules: svc.rules.outbound_calls). A program calls
    the same few URLs again and again, so each is checked and split once (bounded, as a URL
    may be computed)."""
    target = _targets.get(url)
    if target is None:
        problem = url_problem(url)
        if problem is not None:
            raise SvcFault(f"{what}: {problem}")
        target = Target(url)
        if len(_targets) < _TARGETS_KEPT:
            _targets[url] = target
    if method not in METHODS:
        raise SvcFault(f"{what}: {method_problem(method)}")
    return target


_targets: dict[str, Target] = {}
_TARGETS_KEPT = 256


def _fields(headers: Headers, body: str) -> list[tuple[str, str]]:
    """The header fields to send, as text: those that describe a connection or frame a body
    (`Host`, `Content-Length`, ...) left out, since the client writes its own, so a request's
    own `Headers` can be passed on as they came; `Content-Type: application/json` added for a
    body when the headers name no type."""
    fields = []
    typed = False
    for name, value in headers.fields:
        key = name.decode("latin-1")
        lower = key.lower()
        if lower in _NOT_SENT:
            continue
        typed = typed or lower == "content-type"
        fields.append((key, value.decode("utf-8", "replace")))
    if body and not typed:
        fields.append(("Content-Type", "application/json"))
    return fields


def _stubbed(method: str, url: str, host: str) -> Response | None:
    """In a test: the stub's answer (a copy), None to call out (a local host), or a Failure."""
    services = current_services()
    if not services.testing:
        return None
    found = services.stubs.get((method, url))
    if found is not None:
        return copy(found)
    if host in LOCAL_HOSTS:
        return None
    raise Failure("bad_gateway", f"no http_stub answers {method} {url}, and a test may call "
                                 "local hosts only (127.0.0.1, localhost)")


# --- the exchange with aiohttp --------------------------------------------------------------------

async def _exchange(method: str, url: str, fields: list[tuple[str, str]],
                    body: str) -> Response:
    """One request over the loop's session, read whole within the time and size limits."""
    loop = asyncio.get_running_loop()
    total = TOTAL_SECONDS
    deadline = request_deadline()
    if deadline is not None:
        total = min(total, deadline - loop.time() - MARGIN_SECONDS)
        if total <= 0:
            raise Failure("timeout", "not sent: the request's processing time is used up")
    # sock_connect: opening a new connection; a pooled one costs no timer of its own (a
    # `connect` limit would arm one per call, for taking a connection from the pool)
    timeout = aiohttp.ClientTimeout(total=total, sock_connect=min(CONNECT_SECONDS, total))
    limit = _answer_limit()
    try:
        async with _session(loop).request(method, url, headers=fields or None,
                                          data=body.encode("utf-8") if body else None,
                                          allow_redirects=False, timeout=timeout) as answer:
            data = await _read(answer, limit)
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise Failure("bad_gateway", f"the answer is not UTF-8 text (byte "
                                             f"{exc.start})") from None
            return Response(answer.status, text, [
                (name, value) for name, value in answer.headers.items()
                if name.lower() not in _NOT_KEPT])
    except Failure:
        raise
    except asyncio.TimeoutError:
        raise Failure("timeout", f"no answer within {total:.2f} s"
                      + (" (the request's remaining processing time)"
                         if total < TOTAL_SECONDS else "")) from None
    except aiohttp.ClientConnectorCertificateError as exc:
        raise Failure("bad_gateway", f"TLS certificate verification failed: "
                                     f"{exc.certificate_error}") from None
    except aiohttp.ClientSSLError as exc:
        raise Failure("bad_gateway", f"TLS failed: {exc}") from None
    except aiohttp.ClientConnectorError as exc:
        raise Failure("bad_gateway", f"cannot connect: {exc.strerror or exc}") from None
    except aiohttp.ClientError as exc:
        raise Failure("bad_gateway", _reason(exc)) from None
    except OSError as exc:
        raise Failure("bad_gateway", f"{type(exc).__name__}: {exc.strerror or exc}") from None


async def _read(answer: aiohttp.ClientResponse, limit: int) -> bytes:
    """The whole body, refused as soon as it passes `limit` bytes (a Content-Length over it
    before any is read; without one, counted as it arrives, decoded)."""
    length = answer.content_length
    if length is not None and length > limit:
        raise Failure("bad_gateway", f"the answer's Content-Length {length} is over the limit "
                                     f"of {limit} bytes")
    if length is not None and "Content-Encoding" not in answer.headers:
        return await answer.read()  # the usual answer: exactly that much is read
    chunks = []
    size = 0
    async for chunk in answer.content.iter_any():
        size += len(chunk)
        if size > limit:
            raise Failure("bad_gateway", f"the answer is over the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _reason(exc: BaseException) -> str:
    text = str(exc)
    name = type(exc).__name__
    return f"{name}: {text}" if text else name


def _session(loop: asyncio.AbstractEventLoop) -> aiohttp.ClientSession:
    """The loop's session, made at its first call."""
    session = _sessions.get(loop)
    if session is None or session.closed:
        connector = aiohttp.TCPConnector(limit=POOL_SIZE, limit_per_host=0,
                                         keepalive_timeout=KEEP_ALIVE_SECONDS)
        session = _sessions[loop] = aiohttp.ClientSession(
            connector=connector, cookie_jar=aiohttp.DummyCookieJar(), trust_env=False,
            headers={"User-Agent": USER_AGENT}, auto_decompress=True, raise_for_status=False)
    return session


async def close_sessions() -> None:
    """Close this loop's session (its pooled connections): at the end of `process.run`, so a
    server, `main` or a test leaves no connection or warning behind."""
    loop = asyncio.get_running_loop()
    session = _sessions.pop(loop, None)
    if session is not None and not session.closed:
        await session.close()
    for other in [key for key in _sessions if key.is_closed()]:
        del _sessions[other]  # a loop that ended without closing its session


def _answer_limit() -> int:
    """SVC_HTTP_MAX_ANSWER_BYTES (a positive integer), read once; a bad value is a fault
    naming it, at the first call."""
    global _max_answer
    if _max_answer is None:
        raw = os.environ.get(MAX_ANSWER_VARIABLE)
        if raw is None:
            _max_answer = DEFAULT_MAX_ANSWER_BYTES
        else:
            text = raw.strip()
            if not text.isascii() or not text.isdigit() or int(text) <= 0:
                raise SvcFault(f"{MAX_ANSWER_VARIABLE} must be a positive integer (got {raw!r})")
            _max_answer = int(text)
    return _max_answer


# --- the log and the metrics ----------------------------------------------------------------------

def _failed(method: str, target: Target, failure: Failure) -> None:
    """A failed call's details: one error line, always written (like any error's details),
    with the request's id inside a request."""
    serverlog.report(f"outbound {method} {target.shown}: {failure.kind} error: {failure.detail}")


def _record(method: str, target: Target, outcome: str, elapsed: float) -> None:
    """The call's access line (when the server writes access lines) and its metrics."""
    metrics.outbound_called(target.label, method, outcome, elapsed)
    log = current_services().log
    if log is None or log.quiet:
        return
    log.add(serverlog.outbound_line(log.json, eager.running.request, method, target.shown,
                                    outcome, elapsed))


services.join(services.Component("outbound calls", at_loop_end=close_sessions))
