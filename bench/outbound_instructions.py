"""Instructions per outbound call: svc's `http_get` inside a request against aiohttp's client
used directly, both against a uvloop upstream in the same process (deterministic, unlike
wall-clock time on a shared machine).

Each variant runs twice under `valgrind --tool=callgrind` with a small and a large number of
sequential GETs after the same warm-up; the difference in instructions divided by the
difference in calls is the cost of one call, the upstream's share included (the same for
both).

    .venv/bin/python bench/outbound_instructions.py          # both variants
    (`--drive svc|aiohttp COUNT` is the measured process itself.)
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
WARMUP = 200
SMALL, LARGE = 300, 1300


async def drive(variant: str, count: int) -> None:
    sys.path.insert(0, str(HERE / "peers"))
    import aiohttp
    from bare_uvloop import FixedProtocol

    from svc.runtime.lib import outbound
    from svc.runtime.http.headers import Headers
    from svc.runtime.http.context import request_deadline_var

    loop = asyncio.get_running_loop()
    server = await loop.create_server(FixedProtocol, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/small"
    headers = Headers([])
    session = aiohttp.ClientSession()

    async def one() -> None:
        if variant == "svc":  # inside a request: its deadline caps the call's time limit
            token = request_deadline_var.set(loop.time() + 2.0)
            answer = await outbound.http_get(url, headers)
            request_deadline_var.reset(token)
            assert not hasattr(answer, "kind"), answer
        else:
            async with session.get(url, allow_redirects=False) as answer:
                await answer.text()

    for _ in range(WARMUP + count):
        await one()
    await session.close()
    await outbound.close_sessions()


def instructions(variant: str, count: int) -> int:
    with tempfile.TemporaryDirectory() as folder:
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={folder}/out",
             sys.executable, __file__, "--drive", variant, str(count)],
            capture_output=True, text=True, check=True)
    return int(re.search(r"Collected : (\d+)", done.stderr).group(1))


def main() -> None:
    if sys.argv[1:2] == ["--drive"]:
        import uvloop

        uvloop.run(drive(sys.argv[2], int(sys.argv[3])))
        return
    per_call = {}
    for variant in ("svc", "aiohttp"):
        per_call[variant] = (instructions(variant, LARGE) - instructions(variant, SMALL)) \
            / (LARGE - SMALL)
        print(f"{variant:8} {per_call[variant]:10,.0f} instructions per call", flush=True)
    print(f"svc / aiohttp: {per_call['svc'] / per_call['aiohttp']:.2f}x")


if __name__ == "__main__":
    main()
