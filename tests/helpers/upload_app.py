"""A small svc-like program with upload routes and routes with their own body limits, for the
upload tests: the `Route`s and handlers generated code would register, the handlers calling
the Upload builtins (svc.runtime.lib.uploads) as generated code does.

Run as `python upload_app.py [port]`; it prints `listening on ...` and serves until
SIGINT/SIGTERM. `UPLOAD_APP_FSIZE=N` first limits the size of any file the process writes to
N bytes (RLIMIT_FSIZE), so a larger upload finds the disk "full" (EFBIG).
"""

from __future__ import annotations

import asyncio
import os

import msgspec

from svc.rules.contract import Param, Route
from svc.rules.contract import ParamSource as S
from svc.rules.contract import ResultKind as R
from svc.runtime.lib import uploads as u
from svc.runtime.lib.support import SvcError
from tests.helpers.app_main import run_app

MIB = 2**20


class Note(msgspec.Struct, forbid_unknown_fields=True):
    text: str


async def facts(upload):
    if upload is None:
        return None
    return {"name": u.upload_name(upload), "type": u.upload_type(upload),
            "size": u.upload_size(upload), "sha256": await u.upload_sha256(upload)}


async def files(photo, doc, title, count, flag):
    return {"photo": await facts(photo), "doc": await facts(doc), "title": title,
            "count": count, "flag": flag}


async def one(file):
    return await facts(file)


async def optional(photo):
    return {"photo": await facts(photo)}


async def read(file):
    content = await u.upload_read(file)
    if isinstance(content, SvcError):
        return content
    return {"text": content.decode("utf-8", "replace")}


async def move(file, to):
    moved = await u.upload_move(file, to)
    if isinstance(moved, SvcError):
        return moved
    again = await u.upload_read(file)  # still readable
    return {"moved": to, "size": u.upload_size(file), "still": len(again)}


async def hold(file, ms):
    await asyncio.sleep(ms / 1000)
    return await facts(file)


async def crash(file):
    raise ValueError("the handler failed")


async def note(n):
    return {"text": n.text}


async def raw(body):
    return len(body)


def routes() -> list[Route]:
    upload = Param("photo", S.UPLOAD, "Upload")
    return [
        Route("POST", "/files", files, (
            upload, Param("doc", S.UPLOAD, "Upload", optional=True),
            Param("title", S.QUERY, "str"), Param("count", S.QUERY, "i64", optional=True),
            Param("flag", S.QUERY, "bool", optional=True)), R.JSON, body_limit=10 * MIB),
        Route("POST", "/one", one, (Param("file", S.UPLOAD, "Upload"),), R.JSON,
              body_limit=10 * MIB),
        Route("POST", "/small-upload", one, (Param("file", S.UPLOAD, "Upload"),), R.JSON,
              body_limit=1000),
        Route("POST", "/optional", optional, (Param("photo", S.UPLOAD, "Upload", optional=True),),
              R.JSON),
        Route("POST", "/read", read, (Param("file", S.UPLOAD, "Upload"),), R.JSON,
              body_limit=100 * MIB),
        Route("POST", "/move", move, (Param("file", S.UPLOAD, "Upload"),
                                      Param("to", S.QUERY, "str")), R.JSON, body_limit=10 * MIB),
        Route("POST", "/hold", hold, (Param("file", S.UPLOAD, "Upload"),
                                      Param("ms", S.QUERY, "i64")), R.JSON, body_limit=10 * MIB),
        Route("POST", "/crash", crash, (Param("file", S.UPLOAD, "Upload"),), R.JSON),
        Route("POST", "/notes/big", note, (Param("n", S.BODY, Note),), R.JSON, body_limit=4 * MIB),
        Route("POST", "/notes/small", note, (Param("n", S.BODY, Note),), R.JSON, body_limit=100),
        Route("POST", "/notes", note, (Param("n", S.BODY, Note),), R.JSON),
        Route("POST", "/raw/big", raw, (Param("body", S.RAW, "bytes"),), R.JSON,
              body_limit=4 * MIB),
        Route("POST", "/raw/small", raw, (Param("body", S.RAW, "view"),), R.JSON, body_limit=64),
        Route("POST", "/raw", raw, (Param("body", S.RAW, "bytes"),), R.JSON),
    ]


if __name__ == "__main__":
    limit = os.environ.get("UPLOAD_APP_FSIZE")
    if limit:
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (int(limit), int(limit)))
    run_app(routes())
