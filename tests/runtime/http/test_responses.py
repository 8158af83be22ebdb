"""responses.Fixed: /health's bytes are kept per Date second; HEAD and close are rendered."""

from __future__ import annotations

import pytest

from svc.runtime.http import responses
from svc.runtime.http.responses import TEXT, Fixed, render

# Its subject is the compiled request path: `make test` runs it again on the pure-Python modules.
pytestmark = pytest.mark.compiled_path


def test_keep_alive_bytes_are_reused_until_the_date_line_changes(monkeypatch):
    fixed = Fixed(200, TEXT, b"ok")
    first = fixed.render(True, True)
    assert first == render(200, TEXT, b"ok", True)
    assert fixed.render(True, True) is first
    monkeypatch.setattr(responses.date, "line", b"Date: Thu, 01 Jan 2099 00:00:00 GMT\r\n")
    again = fixed.render(True, True)
    assert b"2099" in again and again.endswith(b"\r\n\r\nok")


def test_head_and_close_are_rendered_like_any_response():
    fixed = Fixed(200, TEXT, b"ok")
    assert fixed.render(True, False) == render(200, TEXT, b"ok", True, b"", False)
    closing = fixed.render(False, True)
    assert b"Connection: close\r\n" in closing and closing.endswith(b"ok")
