"""The client's address of a request: who every per-client limit counts.

A request's peer is whoever opened the connection. Behind a reverse proxy that is the proxy,
and the client's own address is only in what the proxies wrote: `X-Forwarded-For`, where each
proxy appends the address it got the request from, or RFC 7239's `Forwarded` (its `for=`
parameters). Anything in those fields may also have been written by the client, so the
address is read from the right, one hop at a time, as long as the hop that wrote it is a
trusted proxy (svc.toml's `[proxies] trusted`):

- a peer that is not a trusted proxy is the client; its fields are never believed;
- otherwise each entry, right to left, is the address the hop before gave: the first one that
  is not a trusted proxy is the client;
- an entry that is not an address (`unknown`, an obfuscated `_hidden`, garbage) stops the
  walk: the last trusted hop's address counts, since nothing it said can be checked;
- with every entry trusted, the leftmost one counts.

`client_address` is a pure function of the peer, the request's header fields and the trusted
networks, so it is tested on plain values; the gate (gate.py) calls it for every limit.
"""

from __future__ import annotations

import ipaddress
from typing import Iterable

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Fields = Iterable[tuple[bytes, bytes]]


def trusted_networks(entries: Iterable[str]) -> tuple[Network, ...]:
    """`[proxies] trusted`, checked already (svc.rules.traffic), as networks."""
    return tuple(ipaddress.ip_network(entry) for entry in entries)


def client_address(peer: str, fields: Fields, trusted: tuple[Network, ...]) -> str:
    """The client's address of a request from `peer` with header `fields` (module doc)."""
    if not trusted or not _is_trusted(parse_address(peer), trusted):
        return peer
    client = peer
    for entry in reversed(forwarded_entries(fields)):
        address = parse_address(entry)
        if address is None:
            return client
        client = str(address)
        if not _is_trusted(address, trusted):
            return client
    return client


def forwarded_entries(fields: Fields) -> list[str]:
    """The hops the proxies wrote, left to right: every `X-Forwarded-For` field's entries, or
    without one, every `Forwarded` element's `for=` value."""
    forwarded_for: list[str] = []
    forwarded: list[str] = []
    for name, value in fields:
        lower = name.lower()
        if lower == b"x-forwarded-for":
            forwarded_for += [part.strip() for part in value.decode("latin-1").split(",")]
        elif lower == b"forwarded":
            forwarded += _for_values(value.decode("latin-1"))
    return forwarded_for or forwarded


def _for_values(value: str) -> list[str]:
    """The `for=` value of each element of a `Forwarded` field (one per element; an element
    without one gives "", which stops the walk as any malformed entry does)."""
    found = []
    for element in value.split(","):
        found.append("")
        for pair in element.split(";"):
            key, _, text = pair.strip().partition("=")
            if key.strip().lower() == "for":
                found[-1] = text.strip().strip('"')
    return found


def parse_address(text: str) -> Address | None:
    """The IP address of one entry (`203.0.113.7`, `[2001:db8::1]`, either with a `:port`),
    an IPv4-mapped IPv6 address as its IPv4 one; None when it is not an address."""
    host = text.strip()
    if host.startswith("["):
        host, bracket, _ = host[1:].partition("]")
        if not bracket:
            return None
    elif host.count(":") == 1:  # IPv4 with a port
        host = host.partition(":")[0]
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _is_trusted(address: Address | None, trusted: tuple[Network, ...]) -> bool:
    return address is not None and any(address in network for network in trusted)
