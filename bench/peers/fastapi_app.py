"""The FastAPI peer (run by uvicorn with uvloop + httptools, one worker, no access log).

The four workload routes plus /health with the same JSON shapes, status codes and strict
checks as examples/workload/workload.svc: a pydantic model in strict mode that forbids extra
fields, an i32 range on `age`, and error bodies `{"error": ...}` (FastAPI's 422 becomes 400,
a non-JSON Content-Type 415). The same seeded SQLite table, queried on the event loop (an
in-memory point lookup is microseconds). Port from SVC_PORT, database from SVC_DB.
"""

import os
import sqlite3
from typing import Annotated

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException

I32 = dict(ge=-(2**31), le=2**31 - 1)
I64 = dict(ge=-(2**63), le=2**63 - 1)


class User(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    id: Annotated[int, Field(**I64)]
    name: str
    age: Annotated[int, Field(**I32)]


def open_db(path: str) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute(
        "CREATE TABLE IF NOT EXISTS users (id INTEGER PRIMARY KEY, name TEXT NOT NULL, age INTEGER NOT NULL)"
    )
    db.execute("DELETE FROM users")
    db.execute("BEGIN")
    db.executemany(
        "INSERT INTO users (id, name, age) VALUES (?, ?, ?)",
        ((i, f"user{i}", 18 + i % 60) for i in range(1, 1001)),
    )
    db.execute("COMMIT")
    return db


db = open_db(os.environ.get("SVC_DB", ":memory:"))
app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)


def error(status: int, reason: str, headers=None) -> JSONResponse:
    return JSONResponse({"error": reason}, status_code=status, headers=headers)


@app.exception_handler(RequestValidationError)
async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
    content_type = request.headers.get("content-type")
    if request.method == "POST" and content_type and content_type.split(";")[0].strip() != "application/json":
        return error(415, "content type must be application/json")
    return error(400, "invalid request")


@app.exception_handler(HTTPException)
async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
    return error(exc.status_code, str(exc.detail).lower(), getattr(exc, "headers", None))


@app.get("/health", response_class=PlainTextResponse)
async def health() -> str:
    return "ok"


@app.get("/small")
async def small() -> User:
    return User(id=1, name="ada", age=36)


@app.post("/echo")
async def echo(user: User) -> User:
    return user


@app.get("/query")
async def query(limit: Annotated[int, Query(**I64)], name: str) -> User:
    return User(id=limit, name=name, age=30)


@app.get("/users/{id}")
async def user_by_id(id: Annotated[int, Field(**I64)]) -> User:
    row = db.execute("SELECT id, name, age FROM users WHERE id = ?", (id,)).fetchone()
    if row is None:
        raise HTTPException(404, "not found")
    return User(id=row[0], name=row[1], age=row[2])
