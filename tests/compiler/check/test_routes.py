"""The route table rules (routes.py) on plain declaration data, without a parser."""

from __future__ import annotations

import pytest

from svc.compiler.front import syntax
from svc.compiler.program import FunctionInfo, ParamInfo, RouteInfo
from svc.compiler.check.routes import bind_params, build_routes, check_conflicts, holds_f64, result_kind
from svc.compiler.source import Span
from svc.compiler.svctypes import (
    BOOL, BYTES, DB, F64, HTML, I32, I64, STR, UNIT, ClassRef, ListOf, Opt, ResultOf, View,
)
from svc.rules.contract import PathError, ResultKind, parse_path
from svc.rules.contract import ParamSource as S

CLASSES = {"Task": [I64, STR], "Blob": [BYTES], "Node": [STR, ListOf(ClassRef("Node"))]}


def fields(name: str):
    return CLASSES[name]


def span(line: int, file: str = "tasks.svc") -> Span:
    return Span(file, line, 6, line, 12)


def handler(name: str, params, returns=ResultOf(UNIT), routes=(), is_async=True) -> FunctionInfo:
    attrs = [syntax.RouteAttr(span(line), method, path, span(line))
             for method, path, line in routes]
    decl = syntax.FunctionDef(span(1), name, span(1), [], None, [], is_async, attrs)
    return FunctionInfo(name, list(params), returns, is_async, decl, "tasks.svc")


def route(method: str, path: str, line: int) -> RouteInfo:
    return RouteInfo(method, path, "h", (), ResultKind.UNIT, False, span(line))


@pytest.mark.parametrize("path, captures", [
    ("/", []), ("/tasks", []), ("/t/{id}", ["id"]), ("/a/{x}/b/{y_2}", ["x", "y_2"]),
    ("/v1.0/~me/a-b_c:d@e", []),
])
def test_valid_paths_and_their_captures(path: str, captures: list[str]) -> None:
    assert parse_path(path).captures == tuple(captures)


@pytest.mark.parametrize("path, problem", [
    ("tasks", "must start with '/'"), ("", "must start with '/'"), ("/a//b", "empty segment"),
    ("/a/", "empty segment"), ("/a/{}", "empty capture"), ("/a/{1x}", "not an identifier"),
    ("/a/x{id}", "bad character '{'"), ("/a b", "bad character ' '"),
    ("/a?q=1", "bad character '?'"), ("/a/%20", "bad character '%'"),
    ("/{id}/{id}", "twice"),
])
def test_malformed_paths(path: str, problem: str) -> None:
    with pytest.raises(PathError) as error:
        parse_path(path)
    assert problem in str(error.value)


def test_path_shape_ignores_capture_names() -> None:
    assert parse_path("/t/{id}/x").shape == parse_path("/t/{key}/x").shape == "/t/{}/x"
    assert parse_path("/t/new").shape != parse_path("/t/{id}").shape


def test_parameters_bind_by_rule() -> None:
    fn = handler("h", [("id", I32), ("db", DB), ("task", ClassRef("Task")), ("limit", I64),
                       ("q", Opt(STR)), ("ratio", F64), ("flag", Opt(BOOL))])
    params, problems = bind_params(fn, ["id"], fields)
    assert problems == []
    assert params == [
        ParamInfo("id", S.PATH, I32), ParamInfo("db", S.DB, DB),
        ParamInfo("task", S.BODY, ClassRef("Task")), ParamInfo("limit", S.QUERY, I64),
        ParamInfo("q", S.QUERY, STR, True), ParamInfo("ratio", S.QUERY, F64),
        ParamInfo("flag", S.QUERY, BOOL, True),
    ]


def test_raw_bodies_and_recursive_body_classes_bind() -> None:
    params, problems = bind_params(handler("h", [("body", View(BYTES))]), [], fields)
    assert problems == [] and params == [ParamInfo("body", S.RAW, View(BYTES))]
    params, problems = bind_params(handler("h", [("n", ClassRef("Node"))]), [], fields)
    assert problems == [] and params[0].source is S.BODY


@pytest.mark.parametrize("params, captures, problem", [
    ([("a", ClassRef("Task")), ("b", ClassRef("Task"))], [], "reads the request body twice"),
    ([("raw", BYTES), ("a", ClassRef("Task"))], [], "reads the request body twice"),
    ([("xs", ListOf(I64))], [], "parameter 'xs: List[i64]' of handler 'h' cannot be bound"),
    ([("b", ClassRef("Blob"))], [], "cannot be bound"),  # bytes field: not JSON
    ([("x", Opt(BYTES))], [], "cannot be bound"),
    ([("id", F64)], ["id"], "path parameter 'id' of handler 'h' must be i64, i32, str or an enum, found f64"),
    ([], ["id"], "capture '{id}' has no parameter named 'id' in handler 'h'"),
])
def test_unbindable_parameters(params, captures, problem: str) -> None:
    _, problems = bind_params(handler("h", params), captures, fields)
    assert len(problems) == 1 and problem in problems[0]


@pytest.mark.parametrize("returns, kind", [
    (ResultOf(ClassRef("Task")), ResultKind.JSON), (ResultOf(ListOf(I64)), ResultKind.JSON),
    (ResultOf(Opt(ClassRef("Task"))), ResultKind.JSON_OPTIONAL), (ResultOf(HTML), ResultKind.HTML),
    (ResultOf(UNIT), ResultKind.UNIT), (ResultOf(STR), ResultKind.JSON),
    (ResultOf(BOOL), ResultKind.JSON),
    (ResultOf(BYTES), None), (ResultOf(DB), None), (I64, None), (UNIT, None),
    (ResultOf(ClassRef("Blob")), None),
])
def test_result_kinds(returns, kind) -> None:
    assert result_kind(returns, fields) == kind


def test_conflicts_name_both_routes() -> None:
    routes = [route("GET", "/t/{id}", 4), route("GET", "/t/{id}", 8),
              route("DELETE", "/t/{key}", 12), route("POST", "/t/{id}", 16),
              route("GET", "/t/new", 20)]
    messages = [(d.span.line, d.message) for d in check_conflicts(routes)]
    assert messages == [
        (8, "route GET /t/{id} conflicts with GET /t/{id} at tasks.svc:4:6"),
        (12, "route DELETE /t/{key} conflicts with GET /t/{id} at tasks.svc:4:6"),
    ]


def test_build_routes_reports_at_the_path_and_skips_bad_routes() -> None:
    good = handler("list_tasks", [("db", DB)], ResultOf(ListOf(ClassRef("Task"))),
                   [("GET", "/tasks", 3), ("POST", "/tasks", 4)])
    reserved = handler("health", [], ResultOf(STR), [("GET", "/health", 7), ("PUT", "/ws", 8)])
    sync = handler("sync", [], ResultOf(UNIT), [("GET", "/sync", 11)], is_async=False)
    routes, diagnostics = build_routes([good, reserved, sync], fields)
    assert [(r.method, r.path, r.result) for r in routes] == [
        ("GET", "/tasks", ResultKind.JSON), ("POST", "/tasks", ResultKind.JSON)]
    assert [(d.span.line, d.message) for d in diagnostics] == [
        (7, "route GET /health: /health is a built-in route of the server"),
        (8, "route PUT /ws: /ws is a built-in route of the server"),
        (11, "route attribute @get needs an async def: 'sync' is not async"),
    ]


def test_route_table_is_linear_in_routes() -> None:
    """20,000 routes of distinct shapes are checked without quadratic work: four times the
    routes take about four times as long, not sixteen. A ratio of the best of three runs
    each, not a time limit, so a busy machine does not fail it; the collector is off while
    timing (a collection in one run of the 20,000 made the ratio 10.2 once)."""
    import gc
    import time

    def best_time(count: int) -> float:
        routes = [route("GET", f"/r{i}/{{id}}", i) for i in range(count)]
        times = []
        for _ in range(5):
            gc.disable()
            try:
                start = time.perf_counter()
                assert check_conflicts(routes) == []
                times.append(time.perf_counter() - start)
            finally:
                gc.enable()
        return min(times)

    assert best_time(20_000) / best_time(5_000) < 10


@pytest.mark.parametrize("returns, floats", [
    (ResultOf(F64), True), (ResultOf(Opt(ListOf(F64))), True), (ResultOf(ClassRef("Point")), True),
    (ResultOf(ClassRef("Task")), False), (ResultOf(ClassRef("Node")), False),  # recursive: ends
    (ResultOf(ListOf(I64)), False), (ResultOf(HTML), False),
])
def test_floats_marks_results_that_can_hold_an_f64(returns, floats) -> None:
    classes = {**CLASSES, "Point": [F64, F64]}
    assert holds_f64(returns, classes.__getitem__) is floats


def test_the_route_table_carries_floats() -> None:
    points = handler("points", [], ResultOf(ListOf(F64)), [("GET", "/points", 3)])
    [route], _ = build_routes([points], fields)
    assert route.floats and route.handler == "points" and route.span.line == 3
