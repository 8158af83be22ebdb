"""The 0.2 standard library and f-strings at run time: svc programs compiled and run through
the real pipeline, one builtin at a time, with their edges (empty texts and separators,
Unicode, clamped slices, the minimum integers, times before 1970 and far ahead, offsets and
fractions, bad input). Expected values come from the definitions (RFC 3339, FIPS 180-4 test
vectors, RFC 4231 for HMAC), not from running the code under test."""

from __future__ import annotations

import base64
import re
import time

import pytest

from svc.runtime.lib import stdlib


def lines(run, body: str, prelude: str = "") -> list[str]:
    """Run `body` as the statements of `main`; its printed lines."""
    source = prelude + "def main():\n" + "".join(f"    {line}\n" for line in body.splitlines())
    return run.output(source)


def fault(run, body: str) -> str:
    """Run `body`, which must fault; the error line on stderr."""
    source = "def main():\n" + "".join(f"    {line}\n" for line in body.splitlines())
    status, out, err = run(source)
    assert status == 1, (status, out, err)
    return err


SHOW_RESULT = '''def show_s(r: Result[str, Error]) -> str:
    match r:
        case Ok(v): return "ok " + v
        case Err(e): return error_kind(e) + " " + error_message(e)

def show_i(r: Result[i64, Error]) -> str:
    match r:
        case Ok(v): return "ok " + str(v)
        case Err(e): return error_kind(e) + " " + error_message(e)

def show_f(r: Result[f64, Error]) -> str:
    match r:
        case Ok(v): return "ok " + str(v)
        case Err(e): return error_kind(e) + " " + error_message(e)

def show_list(xs: List[str]) -> str:
    return str(len(xs)) + ":" + join(xs, "|")

'''


# --- text -----------------------------------------------------------------------------------

def test_trim_strips_unicode_whitespace_only(run):
    assert lines(run, '''print("[" + trim("  \\t\\n a b \\r\\n") + "]")
print("[" + trim("\\u{3000}\\u{A0}\\u{2003}x\\u{2028}\\u{85}") + "]")
print("[" + trim("") + "]" + "[" + trim(" \\t ") + "]")
print(str(len(trim("\\u{1C}x\\u{1F}"))))
print("[" + trim("\\u{200B}x") + "]")''') == ["[a b]", "[x]", "[][]", "3", "[\u200bx]"]


def test_lower_and_upper_use_unicode_case_mapping(run):
    assert lines(run, '''print(lower("ÄÖÜ ABC") + " " + upper("äöü abc"))
print(upper("straße") + " " + lower("ΣΑΣ") + " " + upper("ǆ") + " " + lower(""))''') == [
        "äöü abc ÄÖÜ ABC", "STRASSE σας Ǆ "]


def test_contains_starts_with_ends_with(run):
    assert lines(run, '''print(str(contains("hello", "ell")) + str(contains("hello", "")) + str(contains("", "")) + str(contains("", "a")) + str(contains("héllo", "é")))
print(str(starts_with("hello", "he")) + str(starts_with("hello", "")) + str(starts_with("", "a")) + str(starts_with("he", "hello")))
print(str(ends_with("hello", "lo")) + str(ends_with("hello", "")) + str(ends_with("lo", "hello")) + str(ends_with("zoë", "ë")))''') == [
        "TrueTrueTrueFalseTrue", "TrueTrueFalseFalse", "TrueTrueFalseTrue"]


def test_contains_on_lists_compares_with_equality(run):
    prelude = "class P:\n    x: i64\n\n"
    assert lines(run, '''let empty: List[str] = []
print(str(contains([1, 2, 3], 2)) + str(contains([1, 2, 3], 4)) + str(contains(empty, "")))
print(str(contains([P(x=1)], P(x=1))) + str(contains([[1], [2]], [2])) + str(contains(["a"], "A")))
nan = 0.0 / 0.0
print(str(contains([nan, 1.0], nan)) + str(contains([nan, 1.0], 1.0)))
let maybe: List[i64?] = [None, 2]
print(str(contains(maybe, None)) + str(contains(maybe, 3)))''', prelude) == [
        "TrueFalseFalse", "TrueTrueFalse", "FalseTrue", "TrueFalse"]


def test_replace_every_non_overlapping_and_empty_old(run):
    assert lines(run, '''print(replace("a-b-c", "-", "+") + " " + replace("aaaa", "aa", "b") + " " + replace("aaa", "aa", "b"))
print("[" + replace("abc", "", "x") + "][" + replace("", "", "x") + "][" + replace("", "a", "x") + "]")
print(replace("abc", "b", "") + " " + replace("zoë zoë", "ë", "e") + " " + replace("abc", "abc", "abcabc"))''') == [
        "a+b+c bb ba", "[abc][][]", "ac zoe zoe abcabc"]


def test_split_and_join(run):
    assert lines(run, '''print(show_list(split("a,b,c", ",")) + " " + show_list(split("a,,b,", ",")) + " " + show_list(split("", ",")))
print(show_list(split("abc", "")) + " " + show_list(split("", "")) + " " + show_list(split("a--b--c", "--")))
print(show_list(split("no sep", ",")) + " " + show_list(split(",", ",")) + " " + show_list(split("aéb", "é")))
let none: List[str] = []
print("[" + join(none, ",") + "][" + join(["a"], ",") + "][" + join(["a", "b", ""], ", ") + "][" + join(["x", "y"], "") + "]")
print(join(split("a,b,,c", ","), ","))''', SHOW_RESULT) == [
        "3:a|b|c 4:a||b| 1:", "1:abc 1: 3:a|b|c", "1:no sep 2:| 2:a|b", "[][a][a, b, ][xy]",
        "a,b,,c"]


def test_parse_f64(run):
    out = lines(run, '''print(show_f(parse_f64("2.5")) + "; " + show_f(parse_f64("-0.001")) + "; " + show_f(parse_f64("+7")))
print(show_f(parse_f64(".5")) + "; " + show_f(parse_f64("5.")) + "; " + show_f(parse_f64("1e3")) + "; " + show_f(parse_f64("1E-2")))
print(show_f(parse_f64("1.7976931348623157e308")) + "; " + show_f(parse_f64("4.9e-324")) + "; " + show_f(parse_f64("1e-400")))''', SHOW_RESULT)
    assert out == ["ok 2.5; ok -0.001; ok 7.0", "ok 0.5; ok 5.0; ok 1000.0; ok 0.01",
                   "ok 1.7976931348623157e+308; ok 5e-324; ok 0.0"]


@pytest.mark.parametrize("text", ["nan", "NaN", "inf", "-inf", "Infinity", "", " 1", "1 ",
                                  "1_000", "0x10", "1e", ".", "-", "1.2.3", "١"])
def test_parse_f64_refuses_what_is_not_a_plain_decimal(run, text):
    out = lines(run, f'print(show_f(parse_f64("{text}")))', SHOW_RESULT)
    assert out == [f"invalid not a number: {text!r}"]


def test_parse_f64_refuses_numbers_too_large_for_a_double(run):
    assert lines(run, 'print(show_f(parse_f64("1e999")) + "; " + show_f(parse_f64("-2e308")))',
                 SHOW_RESULT) == ["invalid number out of range for f64: '1e999'; invalid "
                                  "number out of range for f64: '-2e308'"]


def test_to_bytes_and_to_str(run):
    assert lines(run, '''b = to_bytes("zoë")
print(str(len(b)) + " " + str(b[0]) + " " + str(b[2]) + " " + str(b[3]) + " " + str(len(to_bytes(""))))
print(show_s(to_str(b)) + "; " + show_s(to_str(to_bytes(""))) + "; " + show_s(to_str(to_bytes("\\u{1F600}"))))''',
                 SHOW_RESULT) == ["4 122 195 171 0", "ok zoë; ok ; ok \U0001F600"]


def test_to_str_of_a_view(run):
    program = '''async def text_of(body: view[bytes]) -> Result[str, Error]:
    return to_str(body)

async def main() -> Result[unit, Error]:
    print(try await text_of(to_bytes("aé")))
    return ok(())
'''
    assert run.output(program) == ["aé"]


@pytest.mark.parametrize("data, offset", [(b"\xff", 0), (b"ab\xc3", 2), (b"a\xed\xa0\x80", 1)])
def test_to_str_of_invalid_utf8_is_invalid_naming_the_offset(data, offset):
    # svc code cannot make such bytes itself (they come in request bodies, a memoryview)
    for value in (data, memoryview(data)):
        err = stdlib.to_str(value)
        assert (err.kind, err.message) == ("invalid",
                                           f"not valid UTF-8 (bad byte at offset {offset})")


# --- lists ----------------------------------------------------------------------------------

INTS = '''def show(xs: List[i64]) -> str:
    let texts: List[str] = []
    for x in xs:
        append(texts, str(x))
    return "[" + join(texts, ",") + "]"

'''


@pytest.mark.parametrize("start, end, expected", [
    (0, 5, "[0,1,2,3,4]"), (1, 3, "[1,2]"), (-3, 2, "[0,1]"), (3, 99, "[3,4]"),
    (4, 2, "[]"), (2, 2, "[]"), (5, 9, "[]"), (-9, -1, "[]"), (99, 100, "[]"),
    (-9223372036854775808, 9223372036854775807, "[0,1,2,3,4]"),
])
def test_slice_clamps_its_bounds(run, start, end, expected):
    out = lines(run, f'''xs = [0, 1, 2, 3, 4]
ys = slice(xs, {start}, {end})
append(ys, 7)
print(show(ys) + " " + show(xs))''', INTS)
    assert out == [f"{expected[:-1]}{',' if expected != '[]' else ''}7] [0,1,2,3,4]"]


def test_slice_of_an_empty_list(run):
    assert lines(run, 'let xs: List[i64] = []\nprint(show(slice(xs, 0, 3)))', INTS) == ["[]"]


def test_sorted_and_reversed_make_new_lists(run):
    assert lines(run, '''xs = [3, -1, 2, -1, 9223372036854775807, -9223372036854775808]
print(show(sorted(xs)) + " " + show(reversed(xs)) + " " + show(xs))
let small: List[i32] = [5, -2]
s = sorted(small)
print(str(s[0]) + " " + str(s[1]))
print(join(sorted(["b", "a", "B", "é", "e", ""]), "|") + " " + join(reversed(["x"]), "|"))
let none: List[str] = []
print(str(len(sorted(none))) + str(len(reversed(none))))''', INTS) == [
        "[-9223372036854775808,-1,-1,2,3,9223372036854775807] "
        "[-9223372036854775808,9223372036854775807,-1,2,-1,3] "
        "[3,-1,2,-1,9223372036854775807,-9223372036854775808]",
        "-2 5", "|B|a|b|e|é x", "00"]


def test_sorted_floats_put_nan_last(run):
    assert lines(run, '''nan = 0.0 / 0.0
let xs: List[f64] = [2.5, nan, -1.0, 1.0 / 0.0, -0.5]
ys = sorted(xs)
print(str(ys[0]) + " " + str(ys[1]) + " " + str(ys[2]) + " " + str(ys[3]) + " " + str(ys[4]))''') == [
        "-1.0 -0.5 2.5 inf nan"]


def test_reversed_of_a_list_of_classes_shares_the_elements(run):
    prelude = "class P:\n    x: i64\n\n"
    assert lines(run, '''ps = [P(x=1), P(x=2)]
rs = reversed(ps)
rs[0].x = 20
print(str(ps[1].x) + " " + str(len(rs)))''', prelude) == ["20 2"]


# --- numbers --------------------------------------------------------------------------------

def test_min_max_abs_keep_the_type(run):
    assert lines(run, '''let a: i32 = -5
let b: i32 = 3
print(str(min(a, b)) + " " + str(max(a, b)) + " " + str(abs(a)) + " " + str(abs(b)))
print(str(min(-9223372036854775808, 9223372036854775807)) + " " + str(max(1, 1)) + " " + str(abs(-9223372036854775807)))
print(str(min(2.5, -0.5)) + " " + str(max(2.5, -0.5)) + " " + str(abs(-0.0)) + " " + str(abs(-1.0 / 0.0)))
let c: i32 = 2147483647
print(str(abs(-c)) + " " + str(abs(0)))''') == [
        "-5 3 5 3", "-9223372036854775808 1 9223372036854775807", "-0.5 2.5 0.0 inf",
        "2147483647 0"]


def test_an_integer_literal_before_an_i32_variable_is_an_i32(run):
    assert lines(run, '''let n: i32 = -5
let m: i32 = max(0, n)
print(f"{m} {min(7, n)} {max(n, 2)}")''') == ["0 -5 2"]


def test_min_and_max_of_f64_nan_and_signed_zeros(run):
    assert lines(run, '''nan = 0.0 / 0.0
print(str(min(nan, 1.0)) + " " + str(min(1.0, nan)) + " " + str(max(nan, 1.0)) + " " + str(max(1.0, nan)))
print(str(min(0.0, -0.0)) + " " + str(min(-0.0, 0.0)) + " " + str(max(-0.0, 0.0)) + " " + str(max(0.0, -0.0)))''') == [
        "nan nan nan nan", "-0.0 -0.0 0.0 0.0"]


def test_abs_of_the_minimum_i64_is_an_overflow_fault(run):
    err = fault(run, 'x = -9223372036854775807 - 1\nprint(str(abs(x)))')
    assert "integer overflow (i64)" in err and "prog.svc:3" in err


def test_abs_of_the_minimum_i32_is_an_overflow_fault(run):
    err = fault(run, 'let x: i32 = -2147483648\nprint(str(abs(x)))')
    assert "integer overflow (i32)" in err


# --- time -----------------------------------------------------------------------------------

def test_now_ms_is_the_wall_clock_in_milliseconds(run):
    before = time.time_ns() // 1_000_000
    (printed,) = lines(run, "print(str(now_ms()))")
    after = time.time_ns() // 1_000_000
    assert before <= int(printed) <= after


@pytest.mark.parametrize("ms, text", [
    (0, "1970-01-01T00:00:00.000Z"),
    (1, "1970-01-01T00:00:00.001Z"),
    (-1, "1969-12-31T23:59:59.999Z"),
    (-1000, "1969-12-31T23:59:59.000Z"),
    (-86_400_001, "1969-12-30T23:59:59.999Z"),
    (951_782_400_000, "2000-02-29T00:00:00.000Z"),
    (1_795_446_245_123, "2026-11-23T15:04:05.123Z"),
    (253_402_300_799_999, "9999-12-31T23:59:59.999Z"),
    (-62_135_596_800_000, "0001-01-01T00:00:00.000Z"),
])
def test_rfc3339_writes_utc_with_three_fraction_digits(run, ms, text):
    assert lines(run, f"print(rfc3339({ms}))") == [text]


@pytest.mark.parametrize("ms", [253_402_300_800_000, -62_135_596_800_001, 9223372036854775807,
                                -9223372036854775808])
def test_rfc3339_outside_years_1_to_9999_is_a_fault(run, ms):
    assert "rfc3339" in fault(run, f"print(rfc3339({ms}))")


@pytest.mark.parametrize("text, ms", [
    ("2026-11-23T15:04:05Z", 1_795_446_245_000),
    ("2026-11-23T15:04:05.123Z", 1_795_446_245_123),
    ("2026-11-23T17:04:05.123+02:00", 1_795_446_245_123),
    ("2026-11-23T09:34:05.123-05:30", 1_795_446_245_123),
    ("2026-11-23t15:04:05z", 1_795_446_245_000),
    ("2026-11-23T15:04:05.1Z", 1_795_446_245_100),
    ("2026-11-23T15:04:05.12Z", 1_795_446_245_120),
    ("2026-11-23T15:04:05.1234Z", 1_795_446_245_123),
    ("2026-11-23T15:04:05.999999999Z", 1_795_446_245_999),
    ("2026-11-23T15:04:05.000000001Z", 1_795_446_245_000),
    ("1969-12-31T23:59:59.999Z", -1),
    ("1969-12-31T23:59:59.9999Z", -1),
    ("1970-01-01T00:00:00+23:59", -86_340_000),
    ("2000-02-29T00:00:00Z", 951_782_400_000),
    ("0001-01-01T00:00:00Z", -62_135_596_800_000),
    ("9999-12-31T23:59:59.999Z", 253_402_300_799_999),
])
def test_parse_rfc3339_reads_offsets_and_fractions(run, text, ms):
    assert lines(run, f'print(show_i(parse_rfc3339("{text}")))', SHOW_RESULT) == [f"ok {ms}"]


@pytest.mark.parametrize("text", [
    "", "2026-11-23", "2026-11-23T15:04:05", "2026-11-23 15:04:05Z", "2026-11-23T15:04Z",
    "2026-11-23T15:04:05.Z", "2026-11-23T15:04:05.1234567890Z", "2026-11-23T15:04:05+0200",
    "2026-11-23T15:04:05+2:00", "26-11-23T15:04:05Z", " 2026-11-23T15:04:05Z",
    "2026-11-23T15:04:05Z ", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z",
    "2026-11-23T24:00:00Z", "2026-11-23T15:60:00Z", "2026-12-31T23:59:60Z",
    "0000-01-01T00:00:00Z", "2026-11-23T15:04:05+24:00", "2026-11-23T15:04:05-05:60",
    "２０２６-11-23T15:04:05Z",
])
def test_parse_rfc3339_refuses_bad_input_as_invalid(run, text):
    (out,) = lines(run, f'print(show_i(parse_rfc3339("{text}")))', SHOW_RESULT)
    assert out.startswith("invalid not an RFC 3339 time"), out
    assert repr(text) in out


def test_rfc3339_round_trips(run):
    assert lines(run, '''for ms in [-62135596800000, -1, 0, 1795446245123, 253402300799999]:
    match parse_rfc3339(rfc3339(ms)):
        case Ok(back): print(str(back == ms))
        case Err(e): print(error_message(e))''') == ["True"] * 5


# --- randomness and hashing ----------------------------------------------------------------

def test_uuid4_is_a_lower_case_version_4_uuid(run):
    out = lines(run, 'print(uuid4())\nprint(uuid4())')
    pattern = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
    assert all(pattern.fullmatch(u) for u in out) and out[0] != out[1]


@pytest.mark.parametrize("n", [1, 2, 3, 16, 32, 1024])
def test_random_token_is_n_bytes_of_url_safe_base64(run, n):
    first, second = lines(run, f"print(random_token({n}))\nprint(random_token({n}))")
    for token in (first, second):
        assert re.fullmatch(r"[A-Za-z0-9_-]+", token) and "=" not in token
        decoded = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        assert len(decoded) == n
    assert n < 4 or first != second


@pytest.mark.parametrize("n", [0, -1, 1025, 9223372036854775807])
def test_random_token_outside_1_to_1024_is_a_fault(run, n):
    err = fault(run, f"print(random_token({n}))")
    assert f"random_token: n must be 1 to 1024, got {n}" in err


def test_sha256_hex_of_str_bytes_and_view(run):
    program = '''async def digest(body: view[bytes]) -> Result[str, Error]:
    return ok(sha256_hex(body))

async def main() -> Result[unit, Error]:
    print(sha256_hex(""))
    print(sha256_hex("abc"))
    print(sha256_hex(to_bytes("abc")))
    print(try await digest(to_bytes("abc")))
    print(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"))
    print(str(sha256_hex("é") == sha256_hex(to_bytes("é"))))
    return ok(())
'''
    abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert run.output(program) == [
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", abc, abc, abc,
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1", "True"]


def test_hmac_sha256_hex_matches_rfc_4231(run):
    # RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?"
    assert lines(run, '''print(hmac_sha256_hex("Jefe", "what do ya want for nothing?"))
print(str(hmac_sha256_hex(to_bytes("Jefe"), "what do ya want for nothing?") == hmac_sha256_hex("Jefe", to_bytes("what do ya want for nothing?"))))
print(hmac_sha256_hex("", ""))''') == [
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843", "True",
        "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad"]


def test_constant_time_eq(run):
    assert lines(run, '''print(str(constant_time_eq("abc", "abc")) + str(constant_time_eq("abc", "abd")) + str(constant_time_eq("abc", "ab")))
print(str(constant_time_eq("", "")) + str(constant_time_eq("", "a")) + str(constant_time_eq("zoë", "zoë")) + str(constant_time_eq("zoë", "zoe")))''') == [
        "TrueFalseFalse", "TrueFalseTrueFalse"]


# --- error kinds ----------------------------------------------------------------------------

def test_the_new_error_kinds_have_their_kind_and_message(run):
    prelude = '''def make(i: i64) -> Result[unit, Error]:
    if i == 0:
        return conflict("taken")
    if i == 1:
        return unauthorized("who")
    return forbidden("no")

'''
    assert lines(run, '''for i in range(3):
    match make(i):
        case Ok(_): print("ok")
        case Err(e): print(error_kind(e) + ": " + error_message(e))''', prelude) == [
        "conflict: taken", "unauthorized: who", "forbidden: no"]


# --- f-strings ------------------------------------------------------------------------------

def test_fstrings_format_as_str_does(run):
    assert lines(run, '''name = "Ada"
count = 3
let small: i32 = -7
print(f"Hello, {name}! You have {count} tasks.")
print(f"{small} {2.5} {1.0} {0.1 + 0.2} {10000000000000000.0} {1.0 / 0.0} {True} {False}")
print(f"{{literal}} {{{name}}} }}{{")
print(f"")
print(f"{name}{count}{name}")
print(f'single {name} "quoted"')''') == [
        "Hello, Ada! You have 3 tasks.", "-7 2.5 1.0 0.30000000000000004 1e+16 inf True False",
        "{literal} {Ada} }{", "", "Ada3Ada", 'single Ada "quoted"']


def test_fstrings_take_escapes_nested_calls_and_fstrings(run):
    assert lines(run, '''xs = ["a", "b"]
print(f"tab\\there \\u{1F600} \\"q\\" {join(xs, "}")} {len(f"{xs[0]}{xs[1]}")} {upper(f"in {xs[1]}")}")
print(f"{contains(xs, "b")} {min(3, 4) * 2} {-count()}")''', "def count() -> i64:\n    return 5\n\n") == [
        "tab\there \U0001F600 \"q\" a}b 2 IN B", "True 6 -5"]


def test_an_fstring_evaluates_its_expressions_once_left_to_right(run):
    prelude = '''def tick(xs: List[i64]) -> i64:
    append(xs, len(xs))
    return len(xs)

'''
    assert lines(run, '''let xs: List[i64] = []
print(f"{tick(xs)} {tick(xs)} {tick(xs)}")
print(str(len(xs)))''', prelude) == ["1 2 3", "3"]


def test_a_fault_inside_an_fstring_names_its_line(run):
    err = fault(run, 'xs = [1]\nprint("ok")\nprint(f"{xs[5]}")')
    assert "index 5 out of range" in err and "prog.svc:4" in err
