"""CORS decisions (svc.runtime.traffic.cors) with plain values: svc.toml's `[cors]` table checked and
turned into settings (svc.rules.traffic), preflights allowed and refused, the fields of answers to
requests that are not preflights."""

from __future__ import annotations

import pytest

from svc.runtime.traffic.cors import (PREFLIGHT_VARY, VARY_ORIGIN, Cors, actual_fields, header_names,
                              is_preflight, preflight)
from svc.rules.traffic import cors_problem, cors_settings

APP = "https://app.example"


def cors(**table) -> Cors:
    table.setdefault("allow_origins", [APP])
    assert cors_problem(table) is None, cors_problem(table)
    return Cors(cors_settings(table))


def fields(data: bytes) -> dict[str, str]:
    lines = [line for line in data.decode().split("\r\n") if line]
    return dict(line.split(": ", 1) for line in lines)


def test_a_preflight_is_options_with_origin_and_a_requested_method() -> None:
    assert is_preflight("OPTIONS", b"https://a.b", b"POST")
    assert not is_preflight("OPTIONS", b"https://a.b", None)
    assert not is_preflight("OPTIONS", None, b"POST")
    assert not is_preflight("POST", b"https://a.b", b"POST")


def test_an_allowed_preflight_echoes_the_origin_method_and_headers() -> None:
    allowed, answer = preflight(cors(allow_headers=["Content-Type", "X-Trace"], max_age=600),
                                APP.encode(), b"PUT", b"content-type,x-trace")
    assert allowed
    assert isinstance(answer, bytes)
    assert fields(answer) == {
        "Access-Control-Allow-Origin": APP,
        "Access-Control-Allow-Methods": "PUT",
        "Access-Control-Allow-Headers": "content-type, x-trace",
        "Access-Control-Max-Age": "600",
        "Vary": "Origin, Access-Control-Request-Method, Access-Control-Request-Headers",
    }


def test_credentials_are_said_on_preflights_and_answers() -> None:
    rules = cors(allow_credentials=True)
    allowed, answer = preflight(rules, APP.encode(), b"POST", None)
    assert allowed and isinstance(answer, bytes)
    assert fields(answer)["Access-Control-Allow-Credentials"] == "true"
    assert "Access-Control-Allow-Headers" not in fields(answer)
    assert "Access-Control-Max-Age" not in fields(answer)  # unsaid: the browser's default
    assert fields(actual_fields(rules, APP.encode())) == {
        "Access-Control-Allow-Origin": APP, "Access-Control-Allow-Credentials": "true",
        "Vary": "Origin"}


@pytest.mark.parametrize("table, origin, method, headers, reason", [
    ({}, b"https://evil.example", b"POST", None,
     "CORS: the origin https://evil.example is not allowed"),
    ({}, b"https://app.example:8443", b"POST", None,  # another port is another origin
     "CORS: the origin https://app.example:8443 is not allowed"),
    ({}, b"http://app.example", b"POST", None,  # and another scheme
     "CORS: the origin http://app.example is not allowed"),
    ({"allow_methods": ["GET", "POST"]}, APP.encode(), b"DELETE", None,
     "CORS: the method DELETE is not allowed"),
    ({"allow_headers": ["content-type"]}, APP.encode(), b"POST", b"content-type,x-secret",
     "CORS: the header x-secret is not allowed"),
    ({}, APP.encode(), b"POST", b"authorization",  # no header is allowed unless listed
     "CORS: the header authorization is not allowed"),
    ({"allow_headers": ["*"]}, APP.encode(), b"POST", b"x-ok, bad name",  # not a name
     "CORS: the header bad name is not allowed"),
])
def test_refused_preflights_name_what_is_not_allowed(table, origin, method, headers,
                                                     reason) -> None:
    assert preflight(cors(**table), origin, method, headers) == (False, reason)


def test_wildcards_allow_any_origin_method_and_header_but_answer_what_was_asked() -> None:
    rules = cors(allow_origins=["*"], allow_methods=["*"], allow_headers=["*"])
    allowed, answer = preflight(rules, b"https://anyone.example", b"PATCH",
                                b"authorization, x-anything")
    assert allowed and isinstance(answer, bytes)
    got = fields(answer)
    assert got["Access-Control-Allow-Origin"] == "*"
    assert got["Access-Control-Allow-Methods"] == "PATCH"
    # `*` would not cover Authorization: the names asked for are echoed
    assert got["Access-Control-Allow-Headers"] == "authorization, x-anything"


def test_header_names_are_compared_without_case() -> None:
    allowed, _ = preflight(cors(allow_headers=["X-Trace-Id"]), APP.encode(), b"POST",
                           b"X-TRACE-ID")
    assert allowed
    assert header_names(b" a ,B,, c ") == ["a", "b", "c"]
    assert header_names(None) == [] and header_names(b"") == []


def test_answers_to_requests_that_are_not_preflights() -> None:
    rules = cors(expose_headers=["X-Request-Id", "X-Total"])
    assert fields(actual_fields(rules, APP.encode())) == {
        "Access-Control-Allow-Origin": APP,
        "Access-Control-Expose-Headers": "X-Request-Id, X-Total", "Vary": "Origin"}
    # a disallowed origin is served, without the fields (the browser hides the answer)
    assert actual_fields(rules, b"https://evil.example") == VARY_ORIGIN
    # no Origin: not a CORS request, but a cache must not reuse it for one
    assert actual_fields(rules, None) == VARY_ORIGIN


def test_any_origin_without_credentials_is_a_plain_star() -> None:
    rules = cors(allow_origins=["*"])
    assert actual_fields(rules, b"https://x.example") == b"Access-Control-Allow-Origin: *\r\n"
    assert actual_fields(rules, None) == b""
    allowed, answer = preflight(rules, b"https://x.example", b"GET", None)
    assert allowed and isinstance(answer, bytes) and answer.endswith(PREFLIGHT_VARY)


@pytest.mark.parametrize("table, key", [
    ({"allow_origins": ["*"], "allow_credentials": True}, "allow_origins"),
    ({"allow_origins": []}, "allow_origins"),
    ({"allow_origins": ["https://app.example/"]}, "allow_origins"),
    ({"allow_origins": ["https://app.example/path"]}, "allow_origins"),
    ({"allow_origins": ["HTTPS://APP.EXAMPLE"]}, "allow_origins"),
    ({"allow_origins": ["app.example"]}, "allow_origins"),
    ({"allow_origins": ["https://app.example:99999"]}, "allow_origins"),
    ({"allow_origins": [APP, 5]}, "allow_origins"),
    ({"allow_origins": [APP], "allow_methods": ["get"]}, "allow_methods"),
    ({"allow_origins": [APP], "allow_methods": ["*", "GET"]}, "allow_methods"),
    ({"allow_origins": [APP], "allow_headers": ["a:b"]}, "allow_headers"),
    ({"allow_origins": [APP], "allow_credentials": 1}, "allow_credentials"),
    ({"allow_origins": [APP], "max_age": 86401}, "max_age"),
    ({"allow_origins": [APP], "max_age": True}, "max_age"),
    ({"allow_origins": [APP], "max_age": 1.5}, "max_age"),
    ({"allow_origins": [APP], "origins": [APP]}, "origins"),
    ({"max_age": 5}, "cors"),
])
def test_bad_cors_tables_name_the_key(table, key) -> None:
    found = cors_problem(table)
    assert found is not None and found[0] == key, found
    assert f"'{key}'" in found[1] or key == "cors" and "'allow_origins'" in found[1]


def test_good_cors_tables_pass() -> None:
    for table in ({"allow_origins": ["*"]},
                  {"allow_origins": ["http://127.0.0.1:8080", "https://[::1]:8443"],
                   "allow_methods": ["GET", "PATCH"], "allow_headers": ["*"],
                   "expose_headers": ["X-Request-Id"], "allow_credentials": True,
                   "max_age": 0}):
        assert cors_problem(table) is None


def test_the_reference_samples_of_both_tables_pass_the_checks() -> None:
    """docs/reference/http.md's `toml` blocks are what svc.toml may hold."""
    import re
    import tomllib
    from pathlib import Path

    from svc.rules.traffic import (
        guard_limits_problem, proxies_problem, rate_limit_problem, route_limits_problem,
    )

    page = Path(__file__).resolve().parents[3] / "docs" / "reference" / "http.md"
    blocks = re.findall(r"```toml\n(.*?)```", page.read_text(encoding="utf-8"), re.DOTALL)
    tables = [tomllib.loads(block) for block in blocks]
    checks = {"cors": cors_problem, "rate_limit": rate_limit_problem,
              "guard_limits": guard_limits_problem, "route_limits": route_limits_problem,
              "proxies": proxies_problem}
    assert {name for table in tables for name in table} == set(checks)
    for table in tables:
        for name, value in table.items():
            assert checks[name](value) is None


def test_random_tables_get_an_answer_never_an_exception() -> None:
    """Any TOML-shaped table: a problem naming a key of it (or the table), or settings that
    make a working Cors."""
    import random

    from svc.rules.traffic import CORS_KEYS, RATE_LIMIT_KEYS, rate_limit_problem, rate_limit_settings
    from svc.runtime.traffic.rate_limit import Buckets

    values = [True, False, 0, 1, -1, 86400, 86401, 10**20, 0.0, 0.5, 2.5, float("inf"),
              float("nan"), "", "*", "GET", "get", "peer", "x-forwarded-for", APP,
              "https://app.example/", "X-Trace", "a b", [], ["*"], [APP], ["*", APP],
              ["GET", "POST"], ["Content-Type"], [1], [[APP]], {}, {"a": 1}]
    rng = random.Random(24)
    for _ in range(3000):
        keys = list(CORS_KEYS) + list(RATE_LIMIT_KEYS) + ["other"]
        table = {rng.choice(keys): rng.choice(values) for _ in range(rng.randint(0, 5))}
        for problem, make in ((cors_problem, lambda t: Cors(cors_settings(t))),
                              (rate_limit_problem,
                               lambda t: Buckets(rate_limit_settings(t), False))):
            found = problem(table)
            if found is None:
                made = make(table)
                if isinstance(made, Cors):
                    preflight(made, APP.encode(), b"GET", b"x-trace")
                    actual_fields(made, APP.encode())
                else:
                    made.admit("10.0.0.1", 1.0)
            else:
                key, message = found
                assert key in table or key in ("cors", "rate_limit"), found
                assert message
