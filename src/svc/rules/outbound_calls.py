"""The rules for an outbound call's method and URL (http_get, http_send, http_stub), shared by
the checker (a literal that breaks them is a compile error: compiler/check/http_types.py) and
the runtime (a computed one is a fault: svc/runtime/lib/outbound.py), as svc.rules.contract shares the
server's rules for statuses and header fields."""

from __future__ import annotations

from urllib.parse import urlsplit

#: The methods http_send sends.
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def method_problem(method: str) -> str | None:
    """Why `method` cannot be sent, or None."""
    if method in METHODS:
        return None
    return f"the method must be one of {', '.join(METHODS)} (got {method!r})"


def url_problem(url: str) -> str | None:
    """Why `url` cannot be called (not an absolute http:// or https:// URL with a host, or
    holding spaces or control characters), or None."""
    if any(c in url for c in " \r\n\t\0"):
        return f"a URL may not hold spaces or control characters: {url!r}"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a port that is not a number (or out of range) raises here
    except ValueError as exc:
        return f"not a URL: {url!r} ({exc})"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"not an http:// or https:// URL with a host: {url!r}"
    return None
