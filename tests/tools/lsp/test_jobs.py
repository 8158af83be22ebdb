"""`svcc lsp` on jobs and schedules, over stdio as an editor drives it: hovering a `@job`,
`@every` or `@cron` function (its name, a call of it, its attribute) shows its role beside its
signature, as a route handler's hover shows its route; the document symbols list each job and
schedule before its function, as routes are; edits that break the attributes never crash the
server."""

from __future__ import annotations

import random

import pytest

from tests.tools.lsp.lsp_client import hover_text, position_of, serving, uri

APP = """\
class Welcome:
    user: str

@job("welcome", attempts=3, backoff="100ms", deadline="2s")
async def send_welcome(db: Db, w: Welcome) -> Result[unit, Error]:
    return ok(())

@job("mail.once", attempts=1)
async def mail_once(db: Db, w: Welcome) -> Result[unit, Error]:
    return await send_welcome(db, w)

@every("5m")
async def cleanup(db: Db) -> Result[unit, Error]:
    return ok(())

@cron("0 3 * * *", deadline="10m")
async def nightly(db: Db) -> Result[unit, Error]:
    return ok(())

@post("/users/{user}")
async def sign_up(db: Db, user: str) -> Result[i64, Error]:
    return await enqueue(db, "welcome", Welcome(user=user))

async def main() -> Result[unit, Error]:
    db = try await db_open(":memory:")
    return await serve(db, try parse_i64(env("SVC_PORT", "8080")))
"""


@pytest.fixture
def app(tmp_path):
    path = tmp_path / "app.svc"
    path.write_text(APP)
    return path


@pytest.fixture
def client(app):
    yield from serving(app)


def test_hovering_a_job_shows_its_name_and_options(client, app):
    shown = hover_text(client, app, APP, "send_welcome(db: Db")
    assert "async def send_welcome(db: Db, w: Welcome) -> Result[unit, Error]" in shown
    assert shown.endswith("\n\njob: `welcome` (3 attempts, backoff 100ms, deadline 2s)")
    # the options left out show their defaults; one attempt is singular
    once = hover_text(client, app, APP, "mail_once")
    assert once.endswith("\n\njob: `mail.once` (1 attempt, backoff 1s, deadline 60s)")
    # a call of the job's function shows the same
    assert hover_text(client, app, APP, "send_welcome(db, w)") == shown


def test_hovering_a_schedule_shows_its_period_or_cron_expression(client, app):
    every = hover_text(client, app, APP, "cleanup")
    assert "async def cleanup(db: Db) -> Result[unit, Error]" in every
    assert every.endswith("\n\nschedule: every 5m, deadline 60s")
    cron = hover_text(client, app, APP, "nightly")
    assert cron.endswith("\n\nschedule: cron `0 3 * * *` (UTC), deadline 10m")
    assert "job:" not in every + cron and "route:" not in every + cron


def test_hovering_an_attribute_or_its_option_shows_its_function(client, app):
    on_job = hover_text(client, app, APP, '"welcome", attempts')
    assert on_job.endswith("job: `welcome` (3 attempts, backoff 100ms, deadline 2s)")
    on_option = hover_text(client, app, APP, 'deadline="10m"', offset=3)
    assert on_option.endswith("schedule: cron `0 3 * * *` (UTC), deadline 10m")
    # a route handler keeps its route, and gains no job or schedule line
    route = hover_text(client, app, APP, "sign_up")
    assert route.endswith("\n\nroute: `POST /users/{user}`")
    assert hover_text(client, app, APP, '"/users/{user}"') == route


def test_document_symbols_list_jobs_and_schedules_like_routes(client, app):
    symbols = client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri(app)}})
    assert [s["name"] for s in symbols] == [
        "Welcome", "job welcome", "send_welcome", "job mail.once", "mail_once", "every 5m",
        "cleanup", "cron 0 3 * * *", "nightly", "POST /users/{user}", "sign_up", "main"]
    by_name = {s["name"]: s for s in symbols}
    event = by_name["POST /users/{user}"]["kind"]
    for name, handler in (("job welcome", "send_welcome"), ("every 5m", "cleanup"),
                          ("cron 0 3 * * *", "nightly")):
        assert by_name[name]["kind"] == event  # the kind routes have
        assert by_name[name]["detail"] == f"handler {handler}"
    # selecting the symbol selects the attribute's string, as a route's selects its path
    line, character = position_of(APP, '"0 3 * * *"')
    assert by_name["cron 0 3 * * *"]["selectionRange"] == {
        "start": {"line": line, "character": character},
        "end": {"line": line, "character": character + len('"0 3 * * *"')}}


def test_a_program_with_errors_still_shows_the_roles(client, app):
    _, mark = client.diagnostics(app)
    broken = APP.replace('attempts=3,', 'attempts=0,').replace("return ok(())", "return ok(1)", 1)
    client.change(app, broken)
    diagnostics, _ = client.diagnostics(app, mark)
    assert sorted(d["message"] for d in diagnostics) == [
        "argument of ok: expected unit, found i64",
        "attempts must be an integer from 1 to 1000, found 0"]
    assert hover_text(client, app, broken, "nightly").endswith(
        "schedule: cron `0 3 * * *` (UTC), deadline 10m")
    symbols = client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri(app)}})
    assert "job welcome" in [s["name"] for s in symbols]


def test_garbage_in_the_attributes_never_crashes_the_server(client, app):
    _, mark = client.diagnostics(app)
    rng = random.Random(29)
    pieces = ["@job(", "@every(", "@cron(", "attempts=", "deadline=", "backoff=", '"5m"', '"x"',
              "3", ",", ")", "(", "=", " ", "\n", "enqueue(", '"welcome"', "@", "-", "\u00e9"]
    text = APP
    for _ in range(60):
        at = rng.randrange(len(text) + 1)
        cut = rng.randrange(0, 4)
        text = text[:at] + "".join(rng.choice(pieces) for _ in range(rng.randrange(1, 4))) \
            + text[at + cut:]
        client.change(app, text)
        line = rng.randrange(text.count("\n") + 1)
        for method in ("textDocument/hover", "textDocument/definition"):
            client.at(method, app, line, rng.randrange(0, 30))
        client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri(app)}})
    client.change(app, APP)
    client.wait_for("textDocument/publishDiagnostics",
                    lambda p: p["uri"] == uri(app) and p["diagnostics"] == [], mark)
    assert client.process.poll() is None
    assert "Traceback" not in b"".join(client.stderr).decode(errors="replace")
