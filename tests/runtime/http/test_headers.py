"""`header` and `cookie` on a request's fields: any case, several fields, values as sent.

The lookup lowers each asked-for name once (remembered, bounded) and lowers only the fields of
the same length; these pin the answers that must not change with that.
"""

from __future__ import annotations

import pytest

from svc.runtime.http import headers
from svc.runtime.http.headers import Headers, cookie, header, values

# Its subject is the compiled request path: `make test` runs it again on the pure-Python modules.
pytestmark = pytest.mark.compiled_path

FIELDS = [
    (b"Host", b"127.0.0.1"), (b"X-User", b" ada \t"), (b"Accept", b"*/*"),
    (b"x-user", b"grace"), (b"X-Usex", b"no"), (b"Cookie", b"a=1; b=\"two\""),
    (b"X-Latin", "caf\xe9".encode("latin-1")), (b"X-Utf8", "café".encode()),
]


def test_a_name_is_found_in_any_case_and_several_fields_are_joined():
    h = Headers(FIELDS)
    assert header(h, "X-USER") == "ada, grace"
    assert header(h, "x-user") == "ada, grace"
    assert values(h, "X-User") == ["ada", "grace"]
    assert header(h, "accept") == "*/*"
    assert header(h, "HOST") == "127.0.0.1"


def test_a_single_field_is_its_value_trimmed_and_a_missing_one_is_none():
    h = Headers([(b"X-User", b" ada \t"), (b"Accept", b"*/*")])
    assert header(h, "x-user") == "ada"
    assert header(h, "x-use") is None
    assert header(h, "x-userr") is None
    assert header(Headers([]), "x-user") is None
    assert values(h, "missing") == []


def test_values_are_utf8_when_they_are_else_latin1():
    h = Headers(FIELDS)
    assert header(h, "x-utf8") == "café"
    assert header(h, "x-latin") == "café"


def test_a_non_ascii_name_matches_nothing_and_a_same_length_name_is_compared():
    h = Headers(FIELDS)
    assert header(h, "x-usér") is None
    assert header(h, "X-Usex") == "no"  # the same length as X-User, another name


def test_cookies_still_read_from_the_cookie_fields():
    h = Headers(FIELDS + [(b"cookie", b"c=3")])
    assert (cookie(h, "a"), cookie(h, "b"), cookie(h, "c"), cookie(h, "A")) == ("1", "two", "3", None)


def test_the_remembered_names_stay_bounded():
    h = Headers([(b"X-N1", b"1")])
    for n in range(headers._WANTED_KEPT + 50):
        header(h, f"x-computed-{n}")
    assert len(headers._WANTED) <= headers._WANTED_KEPT
    assert header(h, "X-n1") == "1"
