"""Running one topics scenario in this process: the coroutine on a fresh event loop, then every
topics service and database it started stopped and closed, whatever happened (the next test
starts from nothing)."""

from __future__ import annotations

import asyncio

from svc.runtime.db import close_all
from svc.runtime.topics import service


def run(body):
    async def main():
        try:
            return await body()
        finally:
            service.stop_all()
            close_all()
    return asyncio.run(main())
