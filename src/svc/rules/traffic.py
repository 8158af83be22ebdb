"""svc.toml's `[cors]`, `[rate_limit]`, `[guard_limits]`, `[route_limits]` and `[proxies]` tables: their keys, the checks every command makes
on them (svc.project, reported at the key like any svc.toml problem), and the plain settings
the server is built with (svc.runtime.traffic.gate).

    [cors]
    allow_origins = ["https://app.example"]   # required; or ["*"] (any origin)
    allow_methods = ["GET", "POST"]           # default ["*"]: any method a route serves
    allow_headers = ["Content-Type"]          # default []; ["*"]: any header
    expose_headers = ["X-Request-Id"]         # default []
    allow_credentials = true                  # default false; never with allow_origins ["*"]
    max_age = 600                             # seconds a preflight is cached; default: unsaid

    [rate_limit]
    requests_per_second = 5.0                 # required: the refill rate of each bucket
    burst = 10                                # required: the bucket's size
    client = "peer"                           # or "x-forwarded-for" (behind a local proxy)
    clients = 65536                           # buckets kept (bounded memory)

    [guard_limits.require_user]               # a bucket per value of the guard require_user
    requests_per_second = 1.0                 # (per user, when it gives the user)
    burst = 5

    [route_limits."POST /login"]              # a bucket per client address of one route
    requests_per_second = 0.2
    burst = 5

    [proxies]                                 # who may say, in X-Forwarded-For or Forwarded,
    trusted = ["127.0.0.1", "10.0.0.0/8"]     # which address a request comes from

Plain data and functions only, like svc.rules.config_values: the compiler checks the tables, the
generated program carries them as literals, and the runtime turns them into settings with
`cors_settings` and `rate_limit_settings` (which trust a table that passed the checks).
"""

from __future__ import annotations

import ipaddress
import math
import re
from dataclasses import dataclass

from svc.rules.config_values import toml_type

#: `[cors]` keys and what each holds (for messages).
CORS_KEYS = {
    "allow_origins": "an array of origins like \"https://app.example\", or [\"*\"]",
    "allow_methods": "an array of methods like \"GET\", or [\"*\"]",
    "allow_headers": "an array of header names, or [\"*\"]",
    "expose_headers": "an array of header names",
    "allow_credentials": "true or false",
    "max_age": "a whole number of seconds from 0 to 86400",
}
#: `[rate_limit]` keys and what each holds.
RATE_LIMIT_KEYS = {
    "requests_per_second": "a number above 0 (tokens added to a client's bucket per second)",
    "burst": "a whole number from 1 to 1000000 (the bucket's size)",
    "client": "\"peer\" or \"x-forwarded-for\"",
    "clients": "a whole number from 16 to 16777216 (client buckets kept at most)",
}
#: How a client is told apart: the connection's peer address, or the last address of the
#: last X-Forwarded-For field (what a proxy in front of the server appended).
CLIENT_KINDS = ("peer", "x-forwarded-for")
DEFAULT_CLIENTS = 65536
#: Browsers cap a preflight's cache anyway (Chromium at 2 hours, Firefox at 24).
MAX_AGE_LIMIT = 86400
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+", re.ASCII)
_ORIGIN = re.compile(r"[a-z][a-z0-9+\-.]*://(\[[0-9a-f:.]+\]|[a-z0-9\-.]+)(:[0-9]{1,5})?",
                     re.ASCII)


@dataclass(frozen=True)
class CorsSettings:
    origins: tuple[str, ...]  # ("*",) for any
    methods: tuple[str, ...]  # ("*",) for any the routes serve
    headers: tuple[str, ...]  # lower case; ("*",) for any
    expose: tuple[str, ...]
    credentials: bool
    max_age: int | None


@dataclass(frozen=True)
class RateLimitSettings:
    per_second: float
    burst: int
    client: str  # one of CLIENT_KINDS
    clients: int


def cors_problem(table: dict) -> tuple[str, str] | None:
    """(key, message) for the first problem of a `[cors]` table, or None."""
    for key, value in table.items():
        if key not in CORS_KEYS:
            return key, f"unknown key '{key}' in svc.toml [cors] (allowed: {', '.join(CORS_KEYS)})"
        problem = _cors_value_problem(key, value)
        if problem is not None:
            return key, f"'{key}' in svc.toml [cors] {problem}"
    if "allow_origins" not in table:
        return "cors", ("svc.toml [cors] has no 'allow_origins' (write: allow_origins = "
                        "[\"https://app.example\"])")
    if table.get("allow_credentials") is True and "*" in table["allow_origins"]:
        return "allow_origins", ("'allow_origins' in svc.toml [cors] cannot be [\"*\"] with "
                                 "allow_credentials = true (browsers refuse credentials with "
                                 "a wildcard origin): list the origins")
    return None


def _cors_value_problem(key: str, value: object) -> str | None:
    """What is wrong with one `[cors]` value (the words after the key), or None."""
    expected = CORS_KEYS[key]
    if key == "allow_credentials":
        return None if isinstance(value, bool) else f"must be {expected}, got {toml_type(value)}"
    if key == "max_age":
        if isinstance(value, int) and not isinstance(value, bool) \
                and 0 <= value <= MAX_AGE_LIMIT:
            return None
        return f"must be {expected}, got {toml_type(value)}"
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        return f"must be {expected}, got {toml_type(value)}"
    if key == "allow_origins" and not value:
        return "must name at least one origin (or [\"*\"])"
    for item in value:
        wildcard = item == "*" and key != "expose_headers"
        if wildcard and len(value) > 1:
            return "holds \"*\" and other entries: \"*\" stands alone"
        if not wildcard and not _item_fits(key, item):
            return f"holds {toml_type(item)}, which is not {_item_kind(key)}"
    return None


def _item_fits(key: str, item: str) -> bool:
    if key == "allow_origins":
        match = _ORIGIN.fullmatch(item)
        return match is not None and (match.group(2) is None or int(match.group(2)[1:]) < 65536)
    if key == "allow_methods":
        return _TOKEN.fullmatch(item) is not None and item == item.upper()
    return _TOKEN.fullmatch(item) is not None


def _item_kind(key: str) -> str:
    if key == "allow_origins":
        return ("an origin (scheme://host or scheme://host:port, in lower case, no path or "
                "trailing slash)")
    if key == "allow_methods":
        return "a method in upper case"
    return "a header name"


def rate_limit_problem(table: dict) -> tuple[str, str] | None:
    """(key, message) for the first problem of a `[rate_limit]` table, or None."""
    for key, value in table.items():
        if key not in RATE_LIMIT_KEYS:
            return key, (f"unknown key '{key}' in svc.toml [rate_limit] (allowed: "
                         f"{', '.join(RATE_LIMIT_KEYS)})")
        if not _rate_value_fits(key, value):
            return key, (f"'{key}' in svc.toml [rate_limit] must be {RATE_LIMIT_KEYS[key]}, "
                         f"got {toml_type(value)}")
    for key in ("requests_per_second", "burst"):
        if key not in table:
            return "rate_limit", (f"svc.toml [rate_limit] has no '{key}' (write: "
                                  "requests_per_second = 5.0 and burst = 10)")
    return None


def _rate_value_fits(key: str, value: object) -> bool:
    if key == "client":
        return value in CLIENT_KINDS
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if key == "requests_per_second":
        return math.isfinite(value) and 0 < value <= 1e9
    if not isinstance(value, int):
        return False
    if key == "burst":
        return 1 <= value <= 1_000_000
    return 16 <= value <= 16_777_216


#: The keys of one `[guard_limits.<guard>]` table: a rate limit's, but for `client`.
GUARD_LIMIT_KEYS = {key: text for key, text in RATE_LIMIT_KEYS.items() if key != "client"}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)


def guard_limits_problem(table: dict) -> tuple[str, str] | None:
    """(key, message) for the first problem of a `[guard_limits]` table (one table per guard,
    named by the guard function), or None; the key is `name` or `name.key`. Whether each names a guard of the program whose
    value is a class is checked with the program (svc.pipeline, `guard_limit_problem`)."""
    for name, limit in table.items():
        if not isinstance(limit, dict) or not _NAME.fullmatch(name):
            return name, (f"'{name}' in svc.toml [guard_limits] must be a table named by a guard "
                          f"function ([guard_limits.{name if _NAME.fullmatch(name) else 'f'}] "
                          f"with requests_per_second and burst), got {toml_type(limit)}")
        found = _inner_limit_problem(limit, f"[guard_limits.{name}]",
                                     "the guard's value is the client")
        if found is not None:
            return (name if found[0] is None else f"{name}.{found[0]}"), found[1]
    return None


def _inner_limit_problem(limit: dict, where: str, why: str) -> tuple[str | None, str] | None:
    """(key, or None for the table itself, and message) for the first problem of one table
    of `[guard_limits]` or `[route_limits]`, named `where` in messages: a rate limit's keys
    but `client`, which does not apply (`why`)."""
    if "client" in limit:
        return "client", f"'client' in svc.toml {where} does not apply: {why}"
    found = rate_limit_problem(limit)
    if found is None:
        return None
    key, message = found
    message = message.replace("[rate_limit]", where).replace(", client, clients", ", clients")
    return (None if key == "rate_limit" else key), message


#: The methods a route is declared with (`@get` ... `@delete`): a `[route_limits]` key's first word.
ROUTE_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
_ROUTE_KEY = re.compile(r"([A-Z]+) (/\S*)", re.ASCII)


def route_limits_problem(table: dict) -> tuple[str, str] | None:
    """(key, message) for the first problem of a `[route_limits]` table (one table per route,
    named `"METHOD /path"` as the route is declared), or None; the key is `route` or
    `route\0key`, the route itself may hold dots. Whether each names a route of the program is
    checked with the program (svc.pipeline, `route_limit_problem`)."""
    for route, limit in table.items():
        match = _ROUTE_KEY.fullmatch(route)
        if match is None or match.group(1) not in ROUTE_METHODS:
            return route, (f"'{route}' in svc.toml [route_limits] must name a route as it is "
                           "declared, a method in upper case and a path: "
                           "[route_limits.\"POST /login\"]")
        if not isinstance(limit, dict):
            return route, (f"'{route}' in svc.toml [route_limits] must be a table "
                           f"([route_limits.\"{route}\"] with requests_per_second and burst), "
                           f"got {toml_type(limit)}")
        found = _inner_limit_problem(limit, f"[route_limits.\"{route}\"]",
                                     "the client is told apart by its address (see [proxies])")
        if found is not None:
            return (route if found[0] is None else f"{route}\0{found[0]}"), found[1]
    return None


def route_limit_problem(route: str, declared: set[str], close: str) -> str | None:
    """Why `[route_limits."<route>"]` cannot apply to the program whose routes are `declared`
    (`"METHOD /path"` each), or None; `close` ends the message (a suggestion or "")."""
    if route in declared:
        return None
    return (f"'{route}' in svc.toml [route_limits] is not a route of the program (a method and "
            f"a path exactly as declared, such as @post(\"/login\") → \"POST /login\"){close}")


def proxies_problem(table: dict) -> tuple[str, str] | None:
    """(key, message) for the first problem of a `[proxies]` table, or None."""
    for key, value in table.items():
        if key != "trusted":
            return key, f"unknown key '{key}' in svc.toml [proxies] (allowed: trusted)"
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            return key, ("'trusted' in svc.toml [proxies] must be an array of addresses or "
                         f"networks like \"10.0.0.0/8\", got {toml_type(value)}")
        if not value:
            return key, ("'trusted' in svc.toml [proxies] must name at least one address or "
                         "network (leave [proxies] out to trust no proxy)")
        for item in value:
            problem = network_problem(item)
            if problem is not None:
                return key, f"'trusted' in svc.toml [proxies] holds {toml_type(item)}: {problem}"
    if "trusted" not in table:
        return "proxies", ("svc.toml [proxies] has no 'trusted' (write: trusted = "
                           "[\"127.0.0.1\"], the addresses of the proxies in front)")
    return None


def network_problem(text: str) -> str | None:
    """Why `text` is neither an IP address nor a network (`10.0.0.0/8`), or None."""
    try:
        ipaddress.ip_network(text, strict=True)
    except ValueError as exc:
        if "host bits set" in str(exc):
            base = ipaddress.ip_network(text, strict=False)
            return f"a network's address has bits set past its prefix (write {base})"
        return "not an IP address or a network (like \"10.0.0.1\", \"10.0.0.0/8\", \"::1\")"
    return None


def proxies_clash(tables: dict) -> str | None:
    """Why `[rate_limit] client` cannot be given beside `[proxies]`, or None."""
    if "proxies" in tables and "client" in (tables.get("rate_limit") or {}):
        return ("'client' in svc.toml [rate_limit] must be left out with [proxies]: the client "
                "is then the address the trusted proxies name (http.md, \"Rate limits\")")
    return None


def guard_limit_problem(name: str, value_kinds: set[str]) -> str | None:
    """Why `[guard_limits.<name>]` cannot apply to the program, given the kinds of value
    (`"class"`, `"unit"`) the routes' guards called `name` give; None when it can."""
    if not value_kinds:
        return (f"'{name}' in svc.toml [guard_limits] is not a guard of any route (a function "
                "named in @guard(...) or guard(\"/prefix\", ...))")
    if "class" not in value_kinds:
        return (f"'{name}' in svc.toml [guard_limits] gives no value (its Ok is unit): a limit "
                "per guard value needs a guard that returns a class, such as the user")
    return None


def cors_settings(table: dict) -> CorsSettings:
    """The settings of a `[cors]` table that passed `cors_problem`."""
    max_age = table.get("max_age")
    return CorsSettings(tuple(table["allow_origins"]), tuple(table.get("allow_methods", ["*"])),
                        tuple(name.lower() for name in table.get("allow_headers", [])),
                        tuple(table.get("expose_headers", [])),
                        bool(table.get("allow_credentials", False)),
                        max_age if isinstance(max_age, int) else None)


def rate_limit_settings(table: dict) -> RateLimitSettings:
    """The settings of a `[rate_limit]` table that passed `rate_limit_problem` (also of one
    table of `[guard_limits]` or `[route_limits]`, whose client is not said)."""
    return RateLimitSettings(float(table["requests_per_second"]), int(table["burst"]),
                             str(table.get("client", "peer")),
                             int(table.get("clients", DEFAULT_CLIENTS)))
