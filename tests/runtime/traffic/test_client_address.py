"""The client's address of a request (svc.runtime.traffic.client), on plain values, and the
checks of the `[proxies]` and `[route_limits]` tables (svc.rules.traffic)."""

from __future__ import annotations

import pytest

from svc.rules.settings import Settings
from svc.rules.traffic import (
    network_problem, proxies_clash, proxies_problem, route_limit_problem, route_limits_problem,
)
from svc.runtime.traffic.client import (
    client_address, forwarded_entries, parse_address, trusted_networks,
)

PROXIES = trusted_networks(["127.0.0.1", "10.0.0.0/8", "::1"])


def xff(*values: str) -> list[tuple[bytes, bytes]]:
    return [(b"X-Forwarded-For", value.encode()) for value in values]


@pytest.mark.parametrize("peer, fields, client", [
    # a direct client: its header is never believed
    ("203.0.113.7", xff("6.6.6.6"), "203.0.113.7"),
    ("203.0.113.7", [(b"Forwarded", b"for=6.6.6.6")], "203.0.113.7"),
    # a trusted proxy: the first untrusted address from the right
    ("127.0.0.1", xff("203.0.113.7"), "203.0.113.7"),
    ("127.0.0.1", xff("6.6.6.6, 203.0.113.7"), "203.0.113.7"),
    ("127.0.0.1", xff("6.6.6.6, 203.0.113.7, 10.1.2.3"), "203.0.113.7"),
    ("127.0.0.1", xff("6.6.6.6", "203.0.113.7, 10.1.2.3"), "203.0.113.7"),  # fields joined
    ("::1", xff("2001:db8::7"), "2001:db8::7"),
    # no field: the proxy itself; every hop trusted: the leftmost
    ("127.0.0.1", [], "127.0.0.1"),
    ("127.0.0.1", xff("10.0.0.5, 10.0.0.6"), "10.0.0.5"),
    # a malformed entry stops the walk at the last trusted hop
    ("127.0.0.1", xff("203.0.113.7, garbage"), "127.0.0.1"),
    ("127.0.0.1", xff("203.0.113.7, unknown, 10.0.0.9"), "10.0.0.9"),
    ("127.0.0.1", xff("203.0.113.7, "), "127.0.0.1"),
    # Forwarded, when there is no X-Forwarded-For
    ("127.0.0.1", [(b"Forwarded", b'for=6.6.6.6, for="[2001:db8::1]:4711";proto=https')],
     "2001:db8::1"),
    ("127.0.0.1", [(b"forwarded", b"for=192.0.2.60:8080;by=10.0.0.1")], "192.0.2.60"),
    ("127.0.0.1", [(b"Forwarded", b"for=_hidden")], "127.0.0.1"),
    ("127.0.0.1", [(b"Forwarded", b"proto=https")], "127.0.0.1"),
    ("127.0.0.1", [(b"Forwarded", b"for=6.6.6.6")] + xff("203.0.113.7"), "203.0.113.7"),
    # an IPv4-mapped IPv6 address is its IPv4 address
    ("127.0.0.1", xff("::ffff:203.0.113.7"), "203.0.113.7"),
    # a peer that is no address (a Unix socket) is not trusted
    ("local", xff("203.0.113.7"), "local"),
])
def test_the_client_is_the_first_untrusted_hop_from_the_right(peer, fields, client) -> None:
    assert client_address(peer, fields, PROXIES) == client


def test_without_trusted_proxies_the_peer_is_the_client() -> None:
    assert client_address("127.0.0.1", xff("203.0.113.7"), ()) == "127.0.0.1"


def test_entries_and_addresses_are_read_as_proxies_write_them() -> None:
    assert forwarded_entries(xff("a, b", "c")) == ["a", "b", "c"]
    assert forwarded_entries([(b"Forwarded", b"for=a, by=x")]) == ["a", ""]
    assert str(parse_address("[::1]:80")) == "::1"
    assert str(parse_address(" 10.0.0.1:443 ")) == "10.0.0.1"
    for bad in ("", "[::1", "host.example", "1.2.3", "unknown"):
        assert parse_address(bad) is None, bad


@pytest.mark.parametrize("table, key, words", [
    ({}, "proxies", "has no 'trusted'"),
    ({"trusted": ["127.0.0.1"], "other": 1}, "other", "unknown key 'other'"),
    ({"trusted": "127.0.0.1"}, "trusted", "must be an array"),
    ({"trusted": [1]}, "trusted", "must be an array"),
    ({"trusted": []}, "trusted", "at least one"),
    ({"trusted": ["127.0.0.1", "10.0.0.1/8"]}, "trusted", "write 10.0.0.0/8"),
    ({"trusted": ["proxy.internal"]}, "trusted", "not an IP address or a network"),
])
def test_bad_proxies_tables_name_the_key(table, key, words) -> None:
    found = proxies_problem(table)
    assert found is not None and found[0] == key and words in found[1], found


def test_good_proxies_and_the_clash_with_rate_limit_client() -> None:
    assert proxies_problem({"trusted": ["127.0.0.1", "10.0.0.0/8", "::1", "fd00::/8"]}) is None
    assert network_problem("2001:db8::/32") is None
    rate = {"requests_per_second": 1.0, "burst": 2}
    assert proxies_clash({"proxies": {}, "rate_limit": rate}) is None
    assert proxies_clash({"rate_limit": {**rate, "client": "x-forwarded-for"}}) is None
    clash = proxies_clash({"proxies": {}, "rate_limit": {**rate, "client": "peer"}})
    assert clash is not None and "must be left out with [proxies]" in clash


@pytest.mark.parametrize("table, key, words", [
    ({"post /login": {}}, "post /login", "a method in upper case"),
    ({"POST": {}}, "POST", "must name a route"),
    ({"HEAD /x": {}}, "HEAD /x", "must name a route"),
    ({"POST /login": 5}, "POST /login", "must be a table"),
    ({"POST /login": {"burst": 1}}, "POST /login", "has no 'requests_per_second'"),
    ({"POST /v1.0/login": {"requests_per_second": 1, "burst": 1, "client": "peer"}},
     "POST /v1.0/login\0client", "does not apply"),
    ({"POST /login": {"requests_per_second": 1, "burst": 1, "clients": 3}},
     "POST /login\0clients", "from 16"),
])
def test_bad_route_limits_tables_name_the_key(table, key, words) -> None:
    found = route_limits_problem(table)
    assert found is not None and found[0] == key and words in found[1], found


def test_route_limits_name_routes_of_the_program_and_give_settings() -> None:
    limit = {"requests_per_second": 0.5, "burst": 3}
    assert route_limits_problem({"POST /login": limit, "GET /items/{id}": limit}) is None
    assert route_limit_problem("POST /login", {"POST /login"}, "") is None
    assert "is not a route of the program" in str(
        route_limit_problem("POST /logn", {"POST /login"}, ""))
    settings = Settings.from_tables({"route_limits": {"POST /login": limit},
                                     "proxies": {"trusted": ["10.0.0.0/8"]}})
    assert settings.has_gate and settings.proxies == ("10.0.0.0/8",)
    (name, bucket), = settings.route_limits
    assert name == "POST /login" and (bucket.per_second, bucket.burst) == (0.5, 3)
