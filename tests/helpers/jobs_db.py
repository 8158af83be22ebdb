"""Reading a program's database from outside while it runs, for the job tests: an SQLite file
(sqlite3) or a PostgreSQL URL (asyncpg), and waiting, bounded, for a condition on it."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from typing import Callable

import asyncpg

from svc.runtime.db import close_all


def query(url: str, sql: str) -> list[tuple]:
    """Every row of `sql` as tuples."""
    if url.startswith("postgresql://"):
        return asyncio.run(_pg_query(url, sql))
    with sqlite3.connect(url, timeout=10) as db:
        return db.execute(sql).fetchall()


async def _pg_query(url: str, sql: str) -> list[tuple]:
    conn = await asyncpg.connect(url)
    try:
        return [tuple(row) for row in await conn.fetch(sql)]
    finally:
        await conn.close()


def wait_for(condition: Callable[[], bool], timeout: float = 20.0, every: float = 0.1) -> None:
    """Until `condition()` holds; an AssertionError after `timeout` seconds."""
    give_up = time.monotonic() + timeout
    while True:
        try:
            if condition():
                return
        except (sqlite3.OperationalError, asyncpg.PostgresError, IndexError):
            pass  # a table not made yet, a row not there yet
        if time.monotonic() > give_up:
            raise AssertionError(f"not within {timeout} s: {condition}")
        time.sleep(every)


def run(body):
    """`body()` awaited on a fresh loop; the databases it opened closed after it."""
    async def main():
        try:
            return await body()
        finally:
            close_all()
    return asyncio.run(main())
