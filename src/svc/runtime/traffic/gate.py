"""What svc.toml's `[cors]`, `[rate_limit]` and `[route_limits]` do to a request before its
handler runs.

The connection (http/connection.py) calls `Gate.stops` for every request when the
program has any of these tables, and not at all otherwise: a server without them pays one attribute
test per request. `stops` answers the request itself and returns True for

- a request over its client's rate limit: 429 `{"error":"too many requests"}` with
  `Retry-After` (svc.runtime.traffic.rate_limit); /health and /ready are never limited (a load
  balancer's probe must not be refused, nor make a client's budget run out);
- a CORS preflight: 204 with the `Access-Control-Allow-*` fields when allowed, 403 naming
  what is not allowed otherwise (svc.runtime.traffic.cors); a preflight for a path or method no route
  serves gets that 404 or 405 instead, without CORS fields.

Otherwise it leaves the CORS fields of the answer on the connection (`Connection.extra`,
which every answer writes with its `X-Request-Id`) and returns False: the request is served as
usual. The rate limit comes first, so a client over its limit costs nothing more; its 429
carries the CORS fields too, so the page can read it.

`[route_limits."POST /login"]` limits one route per client: after the rate limit and a
preflight's answer, a request whose method some limited route has is resolved by the
program's router (a second look-up, paid only by those requests), and when its route is
limited its bucket for (route, client) loses a token, or the request is answered the same
429. So the guards and the handler of a limited route never run past the limit.

The client of every limit is `Gate.client`: the peer's address, or with `[proxies]` the
address the trusted proxies name (client.py), or with the older `client =
"x-forwarded-for"` the last X-Forwarded-For entry.

`[guard_limits]` limits per guard value (per user) instead, where that value exists: in the
generated function of a guarded route, right after the guard (codegen/guard_calls.py), which
calls `guard_limit(guard, value)`. Its buckets (one table per limited guard) are made by
`install_guard_limits` into the program's services, with the server's, before any worker is
forked; `test_request` makes them per test (svc.runtime.http.test_client).
"""

from __future__ import annotations

from time import monotonic
from typing import TYPE_CHECKING, Any

import msgspec

from svc.runtime.traffic import cors as cors_rules
from svc.runtime.http.responses import JSON, error_body, head
from svc.runtime.http.routing import Refusal
from svc.runtime.traffic.client import Network, client_address, trusted_networks
from svc.runtime.traffic.rate_limit import Buckets, retry_after
from svc.runtime.lib.support import SvcError
from svc.runtime.services import current as current_services

if TYPE_CHECKING:
    from svc.rules.settings import Settings
    from svc.runtime.services import Services
    from svc.runtime.http.connection import Connection
    from svc.runtime.http.protocol import Request

#: Paths no rate limit applies to: liveness and readiness probes.
EXEMPT = frozenset({"/health", "/ready"})
TOO_MANY = error_body("too many requests")
_encode = msgspec.json.Encoder().encode


class Gate:
    def __init__(self, cors: cors_rules.Cors | None, buckets: Buckets | None,
                 forwarded: bool = False, trusted: tuple[Network, ...] = (),
                 routes: dict[tuple[str, str], Buckets] | None = None) -> None:
        self.cors = cors
        self.buckets = buckets
        #: `client = "x-forwarded-for"`: the last address of the last X-Forwarded-For field
        self.forwarded = forwarded
        #: `[proxies] trusted`: whose X-Forwarded-For or Forwarded names the client
        self.trusted = trusted
        #: `[route_limits]`: the buckets of each limited route, by (method, declared path)
        self.routes = routes or {}
        methods = {method for method, _ in self.routes}
        #: the methods of requests that may reach a limited route (HEAD reaches GET's)
        self.route_methods = frozenset(methods | ({"HEAD"} if "GET" in methods else set()))

    def stops(self, conn: Connection, req: Request) -> bool:
        """Answer the request here (True), or leave it to its route (False)."""
        cors = self.cors
        origin = None
        if cors is not None:
            origin = req.header(b"origin")
            conn.extra = cors_rules.actual_fields(cors, origin)
        client = None
        if self.buckets is not None and req.path not in EXEMPT:
            client = self.client(conn, req)
            if self._refused(conn, req, self.buckets, client):
                return True
        if cors is not None and req.method == "OPTIONS" and origin is not None:
            asked = req.header(b"access-control-request-method")
            if asked is not None:
                self._preflight(conn, req, cors, origin, asked)
                return True
        if req.method in self.route_methods:
            buckets = self._route_buckets(conn, req)
            if buckets is not None:
                return self._refused(conn, req, buckets, client or self.client(conn, req))
        return False

    def _refused(self, conn: Connection, req: Request, buckets: Buckets, client: str) -> bool:
        """Take a token of `client`'s bucket, or answer 429 with Retry-After (True)."""
        wait = buckets.admit(client, monotonic())
        if wait <= 0.0:
            return False
        conn.route = None
        conn.finish(req, 429, JSON, TOO_MANY, b"Retry-After: %d\r\n" % retry_after(wait))
        return True

    def _route_buckets(self, conn: Connection, req: Request) -> Buckets | None:
        """The `[route_limits]` buckets of the route the request goes to, if it is limited:
        the router decides, so the limit follows the declared route whatever path text the
        client wrote."""
        found: Any = conn.app.router.resolve(req.method, req.path)
        if found.__class__ is Refusal:
            return None
        route = found[0].route
        return self.routes.get((route.method, route.path))

    def _preflight(self, conn: Connection, req: Request, cors: cors_rules.Cors,
                   origin: bytes, asked: bytes) -> None:
        conn.route = None
        found: Any = conn.app.router.resolve(asked.decode("latin-1").strip(), req.path)
        if found.__class__ is Refusal:  # no route for it: the usual 404 or 405, no CORS
            conn.extra = b""
            conn.finish(req, found.status, JSON, found.body, found.extra)
            return
        allowed, answer = cors_rules.preflight(cors, origin, asked,
                                               req.header(b"access-control-request-headers"))
        if allowed:  # 204 has no Content-Length (RFC 9110, 8.6)
            assert isinstance(answer, bytes)
            conn.extra = b""
            keep = conn.keeps_alive(req)
            conn.send(req, 204, keep, head(204, None, None, keep, answer + conn.id_line(req)))
        else:
            conn.extra = cors_rules.PREFLIGHT_VARY
            conn.finish(req, 403, JSON, error_body(str(answer)))

    def client(self, conn: Connection, req: Request) -> str:
        """The client's key: its address as the trusted proxies name it (client.py), or with
        `client = "x-forwarded-for"` the last entry of the last X-Forwarded-For field when
        there is one (what the proxy in front appended: the entries before it are the
        client's word), else the peer's address (without the port)."""
        name = conn.transport.get_extra_info("peername")
        peer = str(name[0]) if isinstance(name, tuple) and name else "local"
        if self.trusted:
            return client_address(peer, req.headers, self.trusted)
        if self.forwarded:
            return _last_forwarded(req) or peer
        return peer


def _last_forwarded(req: Request) -> str | None:
    """The last entry of the last X-Forwarded-For field, or None."""
    last = None
    for name, value in req.headers:
        if name.lower() == b"x-forwarded-for":
            last = value
    if last is None:
        return None
    entry = last.rpartition(b",")[2].strip()
    return entry.decode("latin-1") if entry else None


def gate_for(settings: Settings, shared: bool) -> Gate | None:
    """The gate of svc.toml's `[cors]`, `[rate_limit]` and `[route_limits]` (None without
    any); `shared`: buckets shared by worker processes forked later."""
    if not settings.has_gate:
        return None
    cors = None if settings.cors is None else cors_rules.Cors(settings.cors)
    buckets, forwarded = None, False
    if settings.rate_limit is not None:
        buckets = Buckets(settings.rate_limit, shared)
        forwarded = settings.rate_limit.client == "x-forwarded-for"
    routes = {_route_key(name): Buckets(limit, shared) for name, limit in settings.route_limits}
    return Gate(cors, buckets, forwarded, trusted_networks(settings.proxies), routes)


def _route_key(name: str) -> tuple[str, str]:
    """`"POST /login"` as (method, path)."""
    method, _, path = name.partition(" ")
    return method, path


def install_guard_limits(services: Services, shared: bool) -> None:
    """Make the buckets of svc.toml's `[guard_limits]` in the program's services (shared by
    the workers forked after it when `shared`)."""
    services.guard_buckets = {guard: Buckets(limit, shared)
                              for guard, limit in services.settings.guard_limits}


def guard_limit(guard: str, value: object) -> SvcError | None:
    """After guard `guard` gave `value` (a user, say): None while that value's bucket has a
    token, else the 429 error the route answers, with Retry-After. Equal values (by their
    JSON) share one bucket."""
    buckets = current_services().guard_buckets.get(guard)
    if buckets is None:
        return None
    wait = buckets.admit(_encode(value).decode("utf-8", "replace"), monotonic())
    if wait <= 0.0:
        return None
    return SvcError("too_many_requests", "too many requests", None,
                    (("Retry-After", str(retry_after(wait))),))
