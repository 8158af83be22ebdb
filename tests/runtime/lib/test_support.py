"""Unit tests of the run-time support functions that generated code calls."""

import asyncio
import math

import msgspec
import pytest

from svc.runtime.lib import support as s


class Point(msgspec.Struct, forbid_unknown_fields=True):
    x: "s.T_I64"
    tags: "s.List[str]"


def test_checked_arithmetic_faults_and_truncates():
    assert s.div64(-7, 2) == -3 and s.mod64(-7, 2) == -1 and s.mod64(7, -2) == 1
    with pytest.raises(s.SvcFault):
        s.add64(s.I64_MAX, 1)
    with pytest.raises(s.SvcFault):
        s.div64(s.I64_MIN, -1)
    with pytest.raises(s.SvcFault):
        s.mod32(1, 0)
    with pytest.raises(s.SvcFault):
        s.mul32(2**16, 2**16)


def test_float_division_is_ieee():
    assert s.fdiv(1.0, 0.0) == math.inf and s.fdiv(-1.0, 0.0) == -math.inf
    assert math.isnan(s.fdiv(0.0, 0.0)) and math.isnan(s.fmod(1.0, 0.0))
    assert s.fmod(-7.5, 2.0) == -1.5


def test_len_counts_utf8_bytes():
    assert s.len_("abc") == 3 and s.len_("é😀") == 6
    assert s.len_([1, 2]) == 2 and s.len_(memoryview(b"abcd")) == 4


def test_index_rejects_negative_and_past_end():
    assert s.index([1, 2, 3], 2) == 3
    for bad in (-1, 3):
        with pytest.raises(s.SvcFault, match="out of range"):
            s.index([1, 2, 3], bad)
    xs = [1]
    s.set_index(xs, 0, 5)
    assert xs == [5]
    with pytest.raises(s.SvcFault):
        s.set_index(xs, -1, 0)


def test_conversions():
    assert s.format_value(2.5) == "2.5" and s.format_value(1.0) == "1.0"
    assert s.format_value(True) == "True"
    assert s.format_value(-12) == "-12"
    assert s.to_i32(2**31 - 1) == 2**31 - 1
    assert s.to_i32(2**31) == s.SvcError("invalid", "2147483648 does not fit in i32")
    assert s.to_f64(3) == 3.0


@pytest.mark.parametrize("text", ["", "1.5", " 1", "1_0", "٣", "9223372036854775808", "+", "0x10",
                                  "1" * 5000])
def test_parse_i64_is_strict(text):
    result = s.parse_i64(text)
    assert isinstance(result, s.SvcError) and result.kind == "invalid"


def test_parse_i64_accepts_signs_and_bounds():
    assert s.parse_i64("-9223372036854775808") == s.I64_MIN
    assert s.parse_i64("+42") == 42
    assert s.parse_i64("-" + "0" * 30 + "1") == -1


def test_copy_is_deep():
    p = Point(x=1, tags=["a"])
    nested = [p, [p]]
    c = s.copy(nested)
    assert c == nested
    c[0].tags.append("b")
    c[0].x = 2
    assert p.tags == ["a"] and p.x == 1


def test_error_constructors_and_unwrap():
    e = s.not_found("gone")
    assert (e.kind, e.message) == ("not_found", "gone")  # error_kind(e), error_message(e)
    assert s.error("x").kind == "invalid" and s.internal_error("x").kind == "internal"
    assert s.unwrap(5) == 5 and s.unwrap(None) is None
    with pytest.raises(s.Propagate) as info:
        s.unwrap(e)
    assert info.value.error is e


def test_json_round_trip_and_strictness():
    assert s.json_encode(Point(x=1, tags=["a"])) == '{"x":1,"tags":["a"]}'
    assert s.json_decode(Point, '{"x":1,"tags":[]}') == Point(x=1, tags=[])
    assert s.json_decode(Point, memoryview(b'{"x":1,"tags":[]}')) == Point(x=1, tags=[])
    bad = ['{"x":true,"tags":[]}', '{"x":1}', '{"x":1,"tags":[],"y":0}', '{"x":1.5,"tags":[]}',
           '{"x":9223372036854775808,"tags":[]}', "{", b'{"x":1,"tags":["\xff"]}']
    for text in bad:
        result = s.json_decode(Point, text)
        assert isinstance(result, s.SvcError) and result.kind == "invalid", text
    assert s.json_decode(s.T_I32, "2147483648").kind == "invalid"
    assert s.json_decode(s.Optional[s.T_I64], "null") is None


class Tree(msgspec.Struct, forbid_unknown_fields=True, rename={"class_": "class"}):
    class_: "s.T_STR"
    kids: "s.List[Tree]"
    by_name: "s.Dict[str, Point]"
    best: "s.Optional[Point]"
    data: "s.T_BYTES"


def test_json_decode_lenient_ignores_unknown_fields_at_every_depth():
    text = ('{"class": "a", "extra": 1, "data": "AA==", "best": {"x": 1, "tags": [], "z": 0},'
            ' "by_name": {"p": {"x": 2, "tags": ["t"], "more": {"y": 1}}},'
            ' "kids": [{"class": "b", "kids": [], "by_name": {}, "best": null, "data": "",'
            ' "deep": [1, 2]}]}')
    tree = s.json_decode_lenient(Tree, text)
    assert tree == Tree(class_="a", data=b"\0", best=Point(x=1, tags=[]),
                        by_name={"p": Point(x=2, tags=["t"])},
                        kids=[Tree(class_="b", kids=[], by_name={}, best=None, data=b"")])
    assert s.json_decode(Tree, text).kind == "invalid"  # json_decode stays strict
    assert s.json_decode_lenient(s.List[Point], b'[{"x":1,"tags":[],"y":2}]') == \
        [Point(x=1, tags=[])]


def test_json_decode_lenient_keeps_every_other_error_of_json_decode():
    bad = ['{"x":true,"tags":[]}', '{"x":1}', '{"x":1.5,"tags":[]}', '{"x":1,"tags":[2]}',
           '{"x":9223372036854775808,"tags":[]}', "{", "[]", "null", '{"x":1,"tags":{}}',
           b'{"x":1,"tags":["\xff"]}']
    for text in bad:
        lenient, strict = s.json_decode_lenient(Point, text), s.json_decode(Point, text)
        assert isinstance(lenient, s.SvcError) and lenient.kind == "invalid", text
        assert lenient.message == strict.message, text
    assert s.json_decode_lenient(s.T_I32, "2147483648").kind == "invalid"
    assert s.json_decode_lenient(s.Optional[s.T_I64], "null") is None


def test_env_and_sleep(monkeypatch):
    monkeypatch.setenv("SVC_TEST_ENV", "yes")
    assert s.env("SVC_TEST_ENV", "no") == "yes" and s.env("SVC_TEST_UNSET_X", "no") == "no"
    assert asyncio.run(s.sleep(1)) is None


def test_print_writes_one_line(capsys):
    s.print_("héllo")
    assert capsys.readouterr().out == "héllo\n"


from hypothesis import given, strategies as st  # noqa: E402

i64s = st.integers(min_value=s.I64_MIN, max_value=s.I64_MAX)


@given(i64s, i64s)
def test_division_laws_hold_for_every_i64_pair(a, b):
    """C/Rust semantics: a == b*(a/b) + a%b, |a%b| < |b|, a%b has the sign of a."""
    if b == 0:
        with pytest.raises(s.SvcFault):
            s.div64(a, b)
        return
    r = s.mod64(a, b)
    assert abs(r) < abs(b) and (r == 0 or (r < 0) == (a < 0))
    if (a, b) == (s.I64_MIN, -1):
        with pytest.raises(s.SvcFault):
            s.div64(a, b)
        return
    assert a == b * s.div64(a, b) + r


@given(i64s, i64s)
def test_checked_add_and_mul_match_exact_arithmetic(a, b):
    for op, exact in ((s.add64, a + b), (s.sub64, a - b), (s.mul64, a * b)):
        if s.I64_MIN <= exact <= s.I64_MAX:
            assert op(a, b) == exact
        else:
            with pytest.raises(s.SvcFault):
                op(a, b)


def test_support_imports_nothing_of_the_server():
    """Generated code calls support; the server is reached only through `serve`, which
    generated code takes from svc.runtime.http.server itself."""
    import ast
    import inspect
    tree = ast.parse(inspect.getsource(s))
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                 for alias in node.names}
    assert not {name for name in imported if name and name.startswith("svc.runtime")}
    assert not hasattr(s, "serve") and not hasattr(s, "Watchdog")
