"""Writes rows through svc.runtime.db and prints `ack <id>` after each db_exec returns.

The durability test SIGKILLs this process mid-stream: every id it printed must be in the file.
Usage: python ack_writer.py <database path> <row count>
"""

import asyncio
import sys

from svc.runtime.db import db_exec, db_open
from svc.runtime.lib.support import SvcError


async def main(path: str, count: int) -> None:
    db = await db_open(path)
    assert not isinstance(db, SvcError), db
    await db_exec(db, "CREATE TABLE IF NOT EXISTS acked (id INTEGER PRIMARY KEY, note TEXT)")
    print("ready", flush=True)
    for i in range(count):
        changed = await db_exec(db, "INSERT INTO acked (id, note) VALUES (?1, ?2)", i, f"row {i}")
        assert changed == 1, changed
        print(f"ack {i}", flush=True)
    await asyncio.sleep(60)  # wait to be killed


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
