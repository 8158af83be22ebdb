"""A small svc-like program for the server tests: the routes generated code would register.

Run as `python demo_app.py [port]` (port 0 picks a free one); it prints the
`listening on ...` line and serves until SIGINT/SIGTERM, exiting 0 (1 with `error: ...`).
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Annotated, ClassVar, Optional

import msgspec

try:
    import uvloop
except ImportError:  # pragma: no cover
    uvloop = None

from svc.rules.contract import Param, Route
from svc.rules.contract import ParamSource as S
from svc.rules.contract import ResultKind as R
from svc.runtime.http.server import serve
from svc.runtime.lib.support import Html, SvcError, SvcFault

I64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
I32 = Annotated[int, msgspec.Meta(ge=-(2**31), le=2**31 - 1)]


class Task(msgspec.Struct, forbid_unknown_fields=True):
    title: str
    priority: I32
    note: Optional[str]
    __svc_fields__: ClassVar = (("title", "str", False), ("priority", "i32", False), ("note", "str", True))


async def hello():
    return {"hello": "world"}


async def get_user(id):
    if id == 0:
        return None
    return {"id": id}


async def echo_query(limit, ratio, flag, name, maybe):
    return {"limit": limit, "ratio": ratio, "flag": flag, "name": name, "maybe": maybe}


async def create_task(task):
    return task


async def raw_length(body):
    return len(body)


async def page():
    return Html("<h1>hi</h1>")


async def nothing():
    return None


async def slow(ms):
    await asyncio.sleep(ms / 1000)
    return {"slept": ms}


async def fault():
    raise SvcFault("integer overflow (i64)")


async def crash():
    return 1 // 0


async def failing(kind):
    return SvcError(kind, f"secret {kind} detail")


async def by_name(name):
    return name


async def put_user(id, task):
    return {"id": id, "title": task.title}


async def delete_user(id):
    return None


async def scoped(n):
    """asyncio.TaskGroup and asyncio.timeout need a current task from the first step on."""
    assert asyncio.current_task() is not None
    async with asyncio.TaskGroup() as group:
        children = [group.create_task(asyncio.sleep(0.01, result=i)) for i in range(n)]
    try:
        async with asyncio.timeout(0.05):
            await asyncio.sleep(1)
    except TimeoutError:
        pass
    return sum(child.result() for child in children)


async def child_fails():
    """A failing child cancels the group's parent, which is forwarded to the real Task."""
    async def boom():
        raise ValueError("child failed")
    async with asyncio.TaskGroup() as group:
        group.create_task(boom())
        group.create_task(asyncio.sleep(1))
    return "unreachable"


async def bad_json():
    return object()


ROUTES = [
    Route("GET", "/hello", hello, (), R.JSON),
    Route("GET", "/users/{id}", get_user, (Param("id", S.PATH, "i64"),), R.JSON_OPTIONAL),
    Route("PUT", "/users/{id}", put_user, (Param("id", S.PATH, "i64"), Param("task", S.BODY, Task)), R.JSON),
    Route("DELETE", "/users/{id}", delete_user, (Param("id", S.PATH, "i64"),), R.UNIT),
    Route("GET", "/names/{name}", by_name, (Param("name", S.PATH, "str"),), R.JSON),
    Route("GET", "/query", echo_query, (
        Param("limit", S.QUERY, "i32"), Param("ratio", S.QUERY, "f64", optional=True),
        Param("flag", S.QUERY, "bool", optional=True), Param("name", S.QUERY, "str", optional=True),
        Param("maybe", S.QUERY, "i64", optional=True)), R.JSON),
    Route("POST", "/tasks", create_task, (Param("task", S.BODY, Task),), R.JSON),
    Route("POST", "/raw", raw_length, (Param("body", S.RAW, "view"),), R.JSON),
    Route("GET", "/page", page, (), R.HTML),
    Route("POST", "/nothing", nothing, (), R.UNIT),
    Route("GET", "/slow", slow, (Param("ms", S.QUERY, "i64"),), R.JSON),
    Route("GET", "/fault", fault, (), R.JSON),
    Route("GET", "/crash", crash, (), R.JSON),
    Route("GET", "/failing", failing, (Param("kind", S.QUERY, "str"),), R.JSON),
    Route("GET", "/unencodable", bad_json, (), R.JSON),
    Route("GET", "/scoped", scoped, (Param("n", S.QUERY, "i64"),), R.JSON),
    Route("GET", "/child-fails", child_fails, (), R.JSON),
]


async def main(port: int) -> int:
    outcome = await serve(None, port, ROUTES)
    if isinstance(outcome, SvcError):
        print(f"error: {outcome.message}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    # SVC_TEST_ASYNCIO=1 runs on plain asyncio, as on platforms without uvloop.
    plain = uvloop is None or os.environ.get("SVC_TEST_ASYNCIO") == "1"
    run = asyncio.run if plain else uvloop.run
    sys.exit(run(main(port)))
