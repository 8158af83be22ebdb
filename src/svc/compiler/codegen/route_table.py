"""The route table as generated code: `_svc_ROUTES = [Route(...), ...]` in the entry module.

Each route of the checked program (`RouteInfo`, in svc types and names) becomes a
`svc.rules.contract.Route` call naming the handler's Python function, its `Param`s and its
`ResultKind`: the runtime's description, which the router reads at start-up. Parameter types
become what the router converts to (see `svc.rules.contract.Param`).
"""

from __future__ import annotations

import ast
from typing import Callable

from svc.compiler import svctypes as T
from svc.compiler.program import ParamInfo, RouteInfo
from svc.rules.contract import BODY_LIMIT, ParamSource

#: `name` → an expression for a name of svc.rules.contract (imported by the generated module).
ContractName = Callable[[str], ast.expr]


def route_entries(routes: list[RouteInfo], handler_name: Callable[[RouteInfo], str],
                  type_value: Callable[[T.Type], ast.expr], contract: ContractName) -> list[ast.expr]:
    """One `Route(...)` call per route, in table order (each still to be located);
    `handler_name` names the Python function a route calls (a guarded route's own one)."""
    return [_route(r, handler_name(r), type_value, contract) for r in routes]


def _route(r: RouteInfo, handler: str, type_value, contract: ContractName) -> ast.expr:
    params = [_param(p, type_value, contract) for p in r.params]
    limit = [] if r.body_limit == BODY_LIMIT else [ast.keyword("body_limit",
                                                               ast.Constant(r.body_limit))]
    return ast.Call(func=contract("Route"), keywords=limit, args=[
        ast.Constant(r.method), ast.Constant(r.path), ast.Name(id=handler, ctx=ast.Load()),
        ast.Tuple(elts=params, ctx=ast.Load()), _member(contract, "ResultKind", r.result.name),
        ast.Constant(r.floats), ast.Constant(r.retried)])


def _param(p: ParamInfo, type_value, contract: ContractName) -> ast.expr:
    if p.source is ParamSource.BODY:
        kind: ast.expr = type_value(p.type)
    elif p.source is ParamSource.RAW:
        kind = ast.Constant("bytes" if p.type == T.BYTES else "view")
    elif p.source is ParamSource.DB:
        kind = ast.Constant("Db")
    elif p.source is ParamSource.HEADERS:
        kind = ast.Constant("Headers")
    elif p.source is ParamSource.UPLOAD:
        kind = ast.Constant("Upload")
    elif p.source is ParamSource.EVENTS:
        kind = ast.Constant("Events")
    elif p.source is ParamSource.SOCKET:
        kind = ast.Constant("WebSocket")
    elif isinstance(p.type, T.EnumRef):  # PATH or QUERY: an enum's member names
        kind = ast.Constant(p.type.members)  # type: ignore[arg-type]  # a tuple of str
    else:  # PATH and QUERY: a scalar (already the inner type of a `T?` query parameter)
        kind = ast.Constant(T.format_type(p.type))
    return ast.Call(func=contract("Param"), keywords=[], args=[
        ast.Constant(p.name), _member(contract, "ParamSource", p.source.name), kind,
        ast.Constant(p.optional)])


def _member(contract: ContractName, enum: str, member: str) -> ast.expr:
    return ast.Attribute(value=contract(enum), attr=member, ctx=ast.Load())
