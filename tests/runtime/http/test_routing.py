"""Route resolution and typed parameter binding, without sockets."""

from __future__ import annotations

import msgspec
import pytest

from svc.rules.contract import Param, ParamSource, PathError, ResultKind, Route
from svc.runtime.http.routing import BindError, Refusal, Router, is_json_media_type, parse_query

# Its subject is the compiled request path: `make test` runs it again on the pure-Python modules.
pytestmark = pytest.mark.compiled_path

PATH, QUERY = ParamSource.PATH, ParamSource.QUERY


async def _h(*args):
    return args


def _router():
    return Router([
        Route("GET", "/t/new", _h),
        Route("GET", "/t/{id}", _h, (Param("id", PATH, "i64"),)),
        Route("DELETE", "/t/{id}", _h, (Param("id", PATH, "i64"),), ResultKind.UNIT),
        Route("GET", "/t/{id}/notes/{n}", _h, (Param("n", PATH, "i32"), Param("id", PATH, "i64"))),
        Route("GET", "/a/{x}/c", _h, (Param("x", PATH, "str"),)),
        Route("GET", "/a/b/{y}", _h, (Param("y", PATH, "str"),)),
    ])


def test_static_beats_capture():
    route, captures = _router().resolve("GET", "/t/new")
    assert captures == () and route.route.path == "/t/new"


def test_capture_and_methods():
    router = _router()
    route, captures = router.resolve("DELETE", "/t/42")
    assert captures == (b"42",)
    assert route.route.result is ResultKind.UNIT
    assert router.resolve("HEAD", "/t/42")[0] is router.resolve("GET", "/t/42")[0]
    refusal = router.resolve("POST", "/t/42")
    assert isinstance(refusal, Refusal) and refusal.status == 405
    assert refusal.extra == b"Allow: DELETE, GET, HEAD, OPTIONS\r\n"


def test_capture_binding_in_param_order():
    route, captures = _router().resolve("GET", "/t/7/notes/3")
    assert route.bind(captures, b"", b"", None, None) == [3, 7]


def test_more_static_segments_first():
    route, captures = _router().resolve("GET", "/a/b/c")
    assert route.route.path == "/a/b/{y}" and captures == (b"c",)


@pytest.mark.parametrize("path", ["/t", "/t/", "/t/1/", "/t//notes/1", "/nope", "/t/1/notes"])
def test_no_match(path):
    assert _router().resolve("GET", path).status == 404


def test_query_parsing():
    assert parse_query(b"a=1&b=x%20y+z&a=2&&c") == {b"a": b"1", b"b": b"x y z", b"c": b""}
    assert parse_query(b"limit=5&name=x") == {b"limit": b"5", b"name": b"x"}
    assert parse_query(b"a%2Bb=1%2B2&c+d=e+f") == {b"a+b": b"1+2", b"c d": b"e f"}


@pytest.mark.parametrize("kind, raw, value", [
    ("i64", b"-9223372036854775808", -(2**63)), ("i32", b"%2B12", 12), ("f64", b"-1.5e3", -1500.0),
    ("f64", b"3", 3.0), ("bool", b"true", True), ("str", b"caf\xc3\xa9", "café"),
])
def test_conversions(kind, raw, value):
    route, _ = Router([Route("GET", "/q", _h, (Param("v", QUERY, kind),))]).resolve("GET", "/q")
    assert route.bind((), b"v=" + raw, b"", None, None) == [value]


@pytest.mark.parametrize("kind, raw", [
    ("i64", b"9223372036854775808"), ("i64", b"1_000"), ("i64", b" 1"), ("i64", b"\xd9\xa3"),
    ("i32", b"2147483648"), ("f64", b"nan"), ("f64", b"1e999"), ("f64", b"1_0"), ("bool", b"1"),
    ("str", b"\xff"),
])
def test_bad_conversions(kind, raw):
    route, _ = Router([Route("GET", "/q", _h, (Param("v", QUERY, kind),))]).resolve("GET", "/q")
    with pytest.raises(BindError) as info:
        route.bind((), b"v=" + raw, b"", None, None)
    assert info.value.status == 400 and "'v'" in info.value.reason


def test_json_media_types():
    assert is_json_media_type(b"application/json")
    assert is_json_media_type(b"Application/JSON; charset=utf-8")
    assert is_json_media_type(b"application/problem+json")
    assert not is_json_media_type(b"text/json")
    assert not is_json_media_type(b"application/x-www-form-urlencoded")


# --- resolve: a match or a refusal --------------------------------------------------------------


def test_resolve_a_static_path_to_its_prebuilt_match():
    router = _router()
    route, captures = router.resolve("GET", "/t/new")
    assert route.route.path == "/t/new" and captures == ()
    assert router.resolve("GET", "/t/new") is router.resolve("GET", "/t/new")  # built once


def test_resolve_a_capture_path_and_head_as_get():
    route, captures = _router().resolve("HEAD", "/t/42")
    assert route.route.method == "GET" and captures == (b"42",)


def test_resolve_refusals():
    router = _router()
    missing = router.resolve("GET", "/nope")
    assert isinstance(missing, Refusal) and (missing.status, missing.extra) == (404, b"")
    assert missing.body == b'{"error":"not found"}'
    wrong = router.resolve("POST", "/t/42")
    assert isinstance(wrong, Refusal) and wrong.status == 405
    assert wrong.extra == b"Allow: DELETE, GET, HEAD, OPTIONS\r\n"
    assert wrong.body == b'{"error":"method not allowed"}'


def test_a_route_that_reads_json_refuses_another_media_type_before_the_body():
    class Item(msgspec.Struct):
        n: int
    router = Router([Route("POST", "/items", _h, (Param("item", ParamSource.BODY, Item),))])
    route, _ = router.resolve("POST", "/items")
    assert route.body_refusal(b"text/plain").status == 415
    assert route.body_refusal(b"application/json") is None and route.body_refusal(None) is None


def test_a_malformed_route_path_is_refused_at_startup():
    with pytest.raises(PathError):
        Router([Route("GET", "/a b", _h)])


def test_each_route_gets_one_answer_strategy_at_startup():
    """The strategy follows the handler (plain def or coroutine function) and the built-in kinds."""
    from svc.runtime.http import builtin_routes
    from svc.runtime.http import answers

    def plain():
        return 1

    router = Router(list(builtin_routes.ROUTES) + [
        Route("GET", "/plain", plain), Route("GET", "/coroutine", _h)])
    chosen = {path: router.resolve("GET", path)[0].answer.__class__
              for path in ("/health", "/stream", "/ws", "/plain", "/coroutine")}
    assert chosen == {"/health": answers.FixedBytes, "/stream": answers.StreamBody,
                      "/ws": answers.UpgradeToWebSocket, "/plain": answers.CallNow,
                      "/coroutine": answers.StartCoroutine}
