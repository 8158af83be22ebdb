"""Binding a request's parts into a handler's arguments: the binder made for each route
(binding.make_binder) and the remembered JSON media-type answers."""

from __future__ import annotations

import msgspec
import pytest

from svc.rules.contract import Param, ParamSource
from svc.runtime.http import binding

# Its subject is the compiled request path: `make test` runs it again on the pure-Python modules.
pytestmark = pytest.mark.compiled_path


def test_media_type_answers_are_remembered_but_bounded():
    values = [b"application/json", b"Application/JSON; charset=utf-8", b"application/x+json",
              b"text/plain", b"application/jsonx", b" application/json "]
    expected = [True, True, True, False, False, True]
    for _ in range(2):  # the second time from what was remembered
        assert [binding.is_json_media_type(v) for v in values] == expected
    for n in range(2 * binding._JSON_MEDIA_KEPT):  # a client sending a new value each time
        assert binding.is_json_media_type(b"application/v%d+json" % n)
        assert not binding.is_json_media_type(b"text/v%d" % n)
    assert len(binding._JSON_MEDIA) <= binding._JSON_MEDIA_KEPT


def _binder(*params: Param, captures: tuple[str, ...] = ()):
    decoders = {p.name: msgspec.json.Decoder(p.type, strict=True)
                for p in params if p.source is ParamSource.BODY}
    return binding.make_binder(params, {name: i for i, name in enumerate(captures)}, decoders)


class Item(msgspec.Struct, forbid_unknown_fields=True):
    id: int


def test_the_binder_binds_every_source_in_parameter_order():
    bind = _binder(Param("db", ParamSource.DB, "Db"), Param("id", ParamSource.PATH, "i64"),
                   Param("h", ParamSource.HEADERS, "Headers"), Param("q", ParamSource.QUERY, "str"),
                   Param("n", ParamSource.QUERY, "i32", True), Param("item", ParamSource.BODY, Item),
                   Param("raw", ParamSource.RAW, "bytes"), Param("ok", ParamSource.PATH, "bool"),
                   captures=("ok", "id"))
    args = bind((b"true", b"%37"), b"q=a+b%21&q=second&n=-3", b'{"id":4}', b"application/json", "DB")
    assert args == ["DB", 7, None, "a b!", -3, Item(4), b'{"id":4}', True]
    args = bind((b"false", b"7"), b"q=", b'{"id":4}', None, "DB")  # an optional one left out
    assert args[4] is None and args[3] == "" and args[7] is False


@pytest.mark.parametrize("captures, query, body, ctype, status, reason", [
    ((b"x",), b"q=1", b"{}", None, 400, "invalid path parameter 'id': expected i64"),
    ((b"9223372036854775808",), b"q=1", b"{}", None, 400, "invalid path parameter 'id': expected i64"),
    ((b"1",), b"", b"{}", None, 400, "missing required query parameter 'q'"),
    ((b"1",), b"q=2147483648", b"{}", None, 400, "invalid query parameter 'q': expected i32"),
    ((b"1",), b"q=%ff", b"{}", None, 400, None),  # any i32 check: bytes that are not digits
    ((b"1",), b"q=1", b"{}", b"text/plain", 415, binding.UNSUPPORTED_MEDIA),
    ((b"1",), b"q=1", b'{"id":1,"x":2}', None, 400, None),
])
def test_the_binder_refuses_what_the_reference_refuses(captures, query, body, ctype, status, reason):
    bind = _binder(Param("id", ParamSource.PATH, "i64"), Param("q", ParamSource.QUERY, "i32"),
                   Param("item", ParamSource.BODY, Item), captures=("id",))
    with pytest.raises(binding.BindError) as caught:
        bind(captures, query, body, ctype, None)
    assert caught.value.status == status
    if reason is not None:
        assert caught.value.reason == reason


def test_a_parameter_name_is_data_in_the_binder_not_code():
    name = "it's\\n\"x\""
    bind = _binder(Param(name, ParamSource.QUERY, "str"))
    assert bind((), name.encode() + b"=v", b"", None, None) == ["v"]
    with pytest.raises(binding.BindError) as caught:
        bind((), b"", b"", None, None)
    assert caught.value.reason == f"missing required query parameter '{name}'"
