"""`svcc lsp` over stdio: hovering a handler says whether the server runs it again when its
transaction clashes with another one, and, if not, what a run again would repeat."""

from __future__ import annotations

import pytest

from tests.helpers.svc_process import REPO
from tests.tools.lsp.lsp_client import hover_text, serving

APP = (REPO / "bench" / "ledger.svc").read_text()


@pytest.fixture
def app(tmp_path):
    path = tmp_path / "ledger.svc"
    path.write_text(APP)
    return path


@pytest.fixture
def client(app):
    yield from serving(app)


def test_hovering_a_handler_says_whether_a_clash_runs_it_again(client, app):
    retried = hover_text(client, app, APP, "transfer(db: Db")
    assert retried.endswith("route: `POST /transfers`; run again when its transaction clashes "
                            "with another one (a deadlock, a serialization failure, a lock not "
                            "released in time)")
    logged = hover_text(client, app, APP, "transfer_logged(db")
    assert logged.endswith("route: `POST /transfers-logged`; not run again when its transaction "
                           "clashes: log_info at ledger.svc:40 writes a log line")
    plain = hover_text(client, app, APP, "open_account(db")
    assert plain.endswith("route: `POST /accounts/{id}/{balance}`")  # no transaction
