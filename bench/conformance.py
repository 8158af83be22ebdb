"""Checks that a server answers the workload routes exactly as workload.svc does.

Run before any load so that a peer that is fast because it skips a check (an unknown field,
a string where an integer belongs, an age outside i32, a non-JSON Content-Type) is caught
instead of measured. Usage: conformance.py PORT [--svc]; exit status 1 and one line per
mismatch. With --svc (what `make bench` asks of svc) the svc-only 0.2 routes are checked too.
"""

import http.client
import json
import sys

USER_4K = {"id": 7, "name": "n" * 4096, "age": 41}
JSON = {"Content-Type": "application/json"}

# (method, path, headers, body, expected status, expected JSON body, or None to check only
# the status and that an error body is {"error": <str>}, svc's with the fields it names).
CASES = [
    ("GET", "/small", {}, None, 200, {"id": 1, "name": "ada", "age": 36}),
    ("GET", "/query?limit=5&name=x", {}, None, 200, {"id": 5, "name": "x", "age": 30}),
    ("GET", "/query?name=x", {}, None, 400, None),
    ("GET", "/query?limit=abc&name=x", {}, None, 400, None),
    ("GET", "/query?limit=2147483648&name=x", {}, None, 200, {"id": 2147483648, "name": "x", "age": 30}),
    ("GET", "/query?limit=9223372036854775807&name=x", {}, None, 200, {"id": 9223372036854775807, "name": "x", "age": 30}),
    ("GET", "/query?limit=9223372036854775808&name=x", {}, None, 400, None),
    ("GET", "/query?limit=5", {}, None, 400, None),
    ("GET", "/users/1", {}, None, 200, {"id": 1, "name": "user1", "age": 19}),
    ("GET", "/users/1000", {}, None, 200, {"id": 1000, "name": "user1000", "age": 58}),
    ("GET", "/users/1001", {}, None, 404, None),
    ("GET", "/users/abc", {}, None, 400, None),
    ("GET", "/nowhere", {}, None, 404, None),
    ("POST", "/echo", JSON, {"id": 1, "name": "alice", "age": 30}, 200, {"id": 1, "name": "alice", "age": 30}),
    ("POST", "/echo", JSON, USER_4K, 200, USER_4K),
    ("POST", "/echo", JSON, {"id": 1, "name": "a", "age": 2147483647}, 200, {"id": 1, "name": "a", "age": 2147483647}),
    ("POST", "/echo", JSON, {"id": 1, "name": "a", "age": -2147483648}, 200, {"id": 1, "name": "a", "age": -2147483648}),
    ("POST", "/echo", JSON, {"id": 1, "name": "a", "age": 2147483648}, 400, None),
    ("POST", "/echo", JSON, {"id": 1, "name": "a", "age": -2147483649}, 400, None),
    ("POST", "/echo", JSON, {"id": 1, "name": "a"}, 400, None),
    ("POST", "/echo", JSON, {"id": 1, "name": "a", "age": 3, "extra": 1}, 400, None),
    ("POST", "/echo", JSON, {"id": "1", "name": "a", "age": 3}, 400, None),
    ("POST", "/echo", JSON, {"id": 1, "name": 5, "age": 3}, 400, None),
    ("POST", "/echo", JSON, {"id": 1, "name": "a", "age": "3"}, 400, None),
    ("POST", "/echo", JSON, {"id": 1, "name": "a", "age": True}, 400, None),
    ("POST", "/echo", JSON, {"id": 1, "name": "a", "age": 3.5}, 400, None),
    ("POST", "/echo", JSON, {"id": 1, "name": None, "age": 3}, 400, None),
    ("POST", "/echo", JSON, [1, "a", 3], 400, None),
    ("POST", "/echo", JSON, b'{"id": 1, "name": "a", "age": 3', 400, None),
    ("POST", "/echo", {"Content-Type": "text/plain"}, {"id": 1, "name": "a", "age": 3}, 415, None),
    ("GET", "/echo", {}, None, 405, None),
]


# svc's own routes (the 0.2 paths, the mixed case's POSTs and their neighbours,
# bench/harness/wrk.py PAIRS):
# (method, path, request headers, status, expected header fields, expected JSON or None).
BOB = {"id": 8, "name": "bob", "age": 40}
SVC_CASES = [
    ("GET", "/whoami", {"X-User": "ada"}, 200, {}, {"user": "ada"}),
    ("GET", "/whoami", {"x-USER": "grace"}, 200, {}, {"user": "grace"}),
    ("GET", "/whoami", {}, 200, {}, {"user": None}),
    ("GET", "/whoami/plain", {"X-User": "ada"}, 200, {}, {"user": "ada"}),
    ("GET", "/guarded", {"Authorization": "ada"}, 200, {}, {"user": "ada"}),
    ("GET", "/guarded", {}, 401, {}, {"error": "sign in first"}),
    ("GET", "/guarded/by_hand", {"Authorization": "ada"}, 200, {}, {"user": "ada"}),
    ("GET", "/guarded/by_hand", {}, 401, {}, {"error": "sign in first"}),
    ("GET", "/created", {}, 201, {"Location": "/users/8"}, BOB),
    ("GET", "/created/plain", {}, 200, {}, BOB),
    ("POST", "/users/1/birthday", {}, 204, {}, None),
    ("POST", "/users/1/birthday/plain", {}, 204, {}, None),
    ("POST", "/users/1/touch", {}, 204, {}, None),
    ("POST", "/users/1/touch/plain", {}, 204, {}, None),
    ("GET", "/users/1", {}, 200, {}, {"id": 1, "name": "user1", "age": 19}),  # as it was
]


def fetch_full(port: int, method: str, path: str, headers: dict):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request(method, path, headers=headers)
        response = conn.getresponse()
        return response.status, response.headers, response.read()
    finally:
        conn.close()


def check_svc_case(port: int, case) -> str | None:
    method, path, headers, status, fields, expected = case
    got_status, got_headers, data = fetch_full(port, method, path, headers)
    label = f"{method} {path} {headers or ''}"
    if got_status != status:
        return f"{label}: status {got_status}, expected {status} ({data[:100]!r})"
    for name, value in fields.items():
        if got_headers.get(name) != value:
            return f"{label}: {name} {got_headers.get(name)!r}, expected {value!r}"
    if expected is None:
        return None if data == b"" else f"{label}: body {data[:100]!r}, expected none"
    if json.loads(data) != expected:
        return f"{label}: body {data[:100]!r}, expected {expected!r}"
    return None


def fetch(port: int, method: str, path: str, headers: dict, body) -> tuple[int, str, bytes]:
    if body is not None and not isinstance(body, bytes):
        body = json.dumps(body).encode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.getheader("Content-Type", ""), response.read()
    finally:
        conn.close()


def check_case(port: int, case) -> str | None:
    """Returns a description of the mismatch, or None when the answer is the expected one."""
    method, path, headers, body, status, expected = case
    got_status, content_type, data = fetch(port, method, path, headers, body)
    label = f"{method} {path} {str(body)[:60]!s}"
    if got_status != status:
        return f"{label}: status {got_status}, expected {status} ({data[:100]!r})"
    if not content_type.startswith("application/json"):
        return f"{label}: Content-Type {content_type!r}, expected application/json"
    value = json.loads(data)
    if expected is not None and value != expected:
        return f"{label}: body {data[:100]!r}, expected {expected!r}"
    if expected is None and not _is_error_body(value):
        return f"{label}: error body {data[:100]!r}, expected {{\"error\": \"...\"}}"
    return None


def _is_error_body(value) -> bool:
    """`{"error": str}`, and for svc's 400s also `"fields"`: each field named, with why."""
    if not isinstance(value, dict) or not isinstance(value.get("error"), str):
        return False
    fields = value.get("fields", {})
    return set(value) <= {"error", "fields"} and isinstance(fields, dict) \
        and all(isinstance(reason, str) for reason in fields.values())


def check_health(port: int) -> str | None:
    status, content_type, data = fetch(port, "GET", "/health", {}, None)
    if (status, content_type, data) != (200, "text/plain; charset=utf-8", b"ok"):
        return f"GET /health: {status} {content_type!r} {data[:40]!r}, expected 200 text/plain ok"
    return None


def check(port: int, svc: bool = False) -> list[str]:
    """All mismatches of the server on `port`; an empty list means it conforms. `svc`: also
    the svc-only routes."""
    problems = [check_health(port)] + [check_case(port, case) for case in CASES]
    if svc:
        problems += [check_svc_case(port, case) for case in SVC_CASES]
    return [p for p in problems if p]


if __name__ == "__main__":
    svc = "--svc" in sys.argv[2:]
    found = check(int(sys.argv[1]), svc)
    for problem in found:
        print(problem)
    print(f"{len(CASES) + 1 + (len(SVC_CASES) if svc else 0) - len(found)} passed, {len(found)} failed")
    sys.exit(1 if found else 0)
