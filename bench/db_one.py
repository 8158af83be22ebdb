"""Point lookups through `db_one` on one event loop: calls per second (wall and per CPU second).

Not a test: a bounded measurement for the report and for regressions on the hot path of
`GET /users/{id}`. Pin it to one core to see the one-core number:

    taskset -c 0 .venv/bin/python bench/db_one.py [calls] [concurrency]

CPU seconds count both threads (event loop and database), so "per CPU second" is the cost.
"""

import asyncio
import os
import sys
import tempfile
import time
from typing import ClassVar

import msgspec

from svc.runtime.db import close_all, db_exec, db_one, db_open

try:
    import uvloop
except ImportError:  # pragma: no cover
    uvloop = None


class User(msgspec.Struct):
    id: int
    name: str
    age: int
    __svc_fields__: ClassVar = (("id", "i64", False), ("name", "str", False), ("age", "i32", False))


SEED = ("WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < 1000) "
        "INSERT INTO users (id, name, age) SELECT n, 'user' || n, 18 + n % 60 FROM seq")


async def main(path: str, calls: int, concurrency: int) -> None:
    db = await db_open(path)
    await db_exec(db, "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL, age INTEGER NOT NULL)")
    await db_exec(db, SEED)
    per_worker = calls // concurrency

    async def worker(k: int) -> None:
        for j in range(per_worker):
            key = (k * per_worker + j) % 1000 + 1
            user = await db_one(User, db, "SELECT id, name, age FROM users WHERE id = ?1", key)
            assert user.id == key, user

    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(worker(k) for k in range(concurrency)))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    done = per_worker * concurrency
    print(f"{done} db_one point lookups, {concurrency} concurrent callers: "
          f"{done / wall:,.0f}/s wall, {done / cpu:,.0f} per CPU second")
    close_all()


if __name__ == "__main__":
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    concurrency = int(sys.argv[2]) if len(sys.argv) > 2 else 64
    with tempfile.TemporaryDirectory() as tmp:
        coro = main(os.path.join(tmp, "bench.db"), min(calls, 2_000_000), concurrency)
        uvloop.run(coro) if uvloop is not None else asyncio.run(coro)
